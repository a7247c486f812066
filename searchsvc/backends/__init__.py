"""Search backends: the contract every engine implements, and opening one from a location.

A location names an engine and its index, the same way in every entry point (`--index`,
`SEARCHSVC_INDEX`, `SearchService.open(...)`):

- a plain path (`index`, `/srv/index`) or `whoosh:///abs/path`: the embedded Whoosh index;
- `SCHEME://...` for any other registered engine.

Engines are imported only when a location names them, so the service never loads an engine it
does not use: each is registered here by the import paths of its factory, of its location check
and, for an engine whose index is a local directory, of the function that finds it (where files
kept beside an index go: the task queue). A new engine registers its scheme (`register_backend`)
and passes tests/contract/.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from searchsvc.backends.contract import (
    NoProgress,
    Progress,
    SearchBackend,
    WriteResult,
    unique_by_id,
)
from searchsvc.domain.errors import InvalidLocation

__all__ = [
    "BACKENDS",
    "NoProgress",
    "Progress",
    "SearchBackend",
    "WriteResult",
    "checked_location",
    "local_directory",
    "location_url",
    "open_backend",
    "register_backend",
    "unique_by_id",
]

# A backend factory takes the location (a URL) and opens the backend.
BackendFactory = Callable[[str], SearchBackend]
# A location check takes the URL and raises InvalidLocation if the engine could not use it.
LocationCheck = Callable[[str], object]
# A local directory finder takes the URL and answers the directory the index lives in.
DirectoryFinder = Callable[[str], str]
# scheme -> "module:factory", imported on first use.
BACKENDS: dict[str, str | BackendFactory] = {
    "whoosh": "searchsvc.backends.whoosh.backend:WhooshBackend.from_location",
    "solr": "searchsvc.backends.solr.backend:SolrBackend.from_location",
}
# scheme -> its location check (syntax only, without reaching the engine), imported on first use.
_LOCATION_CHECKS: dict[str, str | LocationCheck] = {
    "whoosh": "searchsvc.backends.whoosh.location:whoosh_path",
    "solr": "searchsvc.backends.solr.location:parse_location",
}
# scheme -> the directory its index lives in, for engines that keep one on this machine.
_DIRECTORIES: dict[str, str | DirectoryFinder] = {
    "whoosh": "searchsvc.backends.whoosh.location:whoosh_path",
}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def register_backend(
    scheme: str,
    factory: str | BackendFactory,
    check: str | LocationCheck | None = None,
    directory: str | DirectoryFinder | None = None,
) -> None:
    """Make `scheme://...` locations open with `factory` ("module:attribute" or a callable);
    `check(url)` vets a location's syntax without reaching the engine (at start-up);
    `directory(url)` is the local directory of an engine whose index is on this machine."""
    BACKENDS[scheme.lower()] = factory
    if check is not None:
        _LOCATION_CHECKS[scheme.lower()] = check
    if directory is not None:
        _DIRECTORIES[scheme.lower()] = directory


def location_url(location: str | os.PathLike[str]) -> str:
    """The location as a URL: a plain path becomes `whoosh:///absolute/path` (percent-encoded)."""
    text = os.fspath(location)
    if not text.strip():
        raise InvalidLocation("the index location is empty")
    if _SCHEME.match(text):
        return text
    prefix = _SCHEME_PREFIX.match(text)
    if prefix and prefix.group(1).lower() in BACKENDS:
        raise InvalidLocation(
            f"{text} is neither a path nor a URL: write {prefix.group(1)}:// and the rest "
            "(whoosh:///ABSOLUTE/PATH for a directory)"
        )
    return "whoosh://" + quote(os.path.abspath(text))


def checked_location(location: str | os.PathLike[str]) -> str:
    """The location as a URL of a registered engine whose syntax it fits (not opened);
    InvalidLocation otherwise."""
    url = location_url(location)
    scheme = url.split("://", 1)[0].lower()
    if scheme not in BACKENDS:
        known = ", ".join(f"{name}://" for name in sorted(BACKENDS))
        raise InvalidLocation(
            f"unknown index location scheme {scheme}:// in {url} (known: {known}, or a path)"
        )
    check = _LOCATION_CHECKS.get(scheme)
    if check is not None:
        _loaded(check)(url)
    return url


def local_directory(location: str | os.PathLike[str]) -> str | None:
    """The directory on this machine the location's index lives in, or None for an engine
    that keeps its index elsewhere (a server)."""
    url = checked_location(location)
    finder = _DIRECTORIES.get(url.split("://", 1)[0].lower())
    return None if finder is None else _loaded(finder)(url)


def open_backend(location: str | os.PathLike[str]) -> SearchBackend:
    """The backend a location names; InvalidLocation for an unknown scheme or a malformed one.

    Opening does not reach the engine: an unreachable one fails the first call with
    IndexUnavailable.
    """
    url = checked_location(location)
    factory: BackendFactory = _loaded(BACKENDS[url.split("://", 1)[0].lower()])
    return factory(url)


def _loaded(entry: str | Callable[..., Any]) -> Callable[..., Any]:
    return _import(entry) if isinstance(entry, str) else entry


def _import(target: str) -> Callable[..., Any]:
    module_name, _, attribute = target.partition(":")
    value: object = importlib.import_module(module_name)
    for name in attribute.split("."):
        value = getattr(value, name)
    if not callable(value):
        raise InvalidLocation(f"{target} is not a backend factory")
    return value
