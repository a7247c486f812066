"""Search backends: the contract every engine implements, and opening one from a location.

A location names an engine and its index, the same way in every entry point (`--index`,
`SEARCHSVC_INDEX`, `SearchService.open(...)`):

- a plain path (`index`, `/srv/index`) or `whoosh:///abs/path`: the embedded Whoosh index;
- `SCHEME://...` for any other registered engine.

Engines are imported only when a location names them, so the service never loads an engine it
does not use. A new engine registers its scheme here (`BACKENDS`) and passes tests/contract/.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from urllib.parse import quote, unquote, urlsplit

from searchsvc.backends.contract import (
    NoProgress,
    Progress,
    SearchBackend,
    WriteResult,
    unique_by_id,
)
from searchsvc.errors import InvalidLocation

__all__ = [
    "BACKENDS",
    "NoProgress",
    "Progress",
    "SearchBackend",
    "WriteResult",
    "checked_location",
    "location_url",
    "open_backend",
    "register_backend",
    "unique_by_id",
]

# A backend factory takes the location (a URL) and opens the backend.
BackendFactory = Callable[[str], SearchBackend]
# A location check takes the URL and raises InvalidLocation if the engine could not use it.
LocationCheck = Callable[[str], object]
# scheme -> "module:factory", imported on first use.
BACKENDS: dict[str, str | BackendFactory] = {
    "whoosh": "searchsvc.backends.whoosh.backend:WhooshBackend.from_location",
    "solr": "searchsvc.backends.solr.backend:SolrBackend.from_location",
}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def register_backend(
    scheme: str, factory: str | BackendFactory, check: LocationCheck | None = None
) -> None:
    """Make `scheme://...` locations open with `factory` ("module:attribute" or a callable);
    `check(url)` vets a location's syntax without reaching the engine (at start-up)."""
    BACKENDS[scheme.lower()] = factory
    if check is not None:
        _LOCATION_CHECKS[scheme.lower()] = check


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
        check(url)
    return url


def open_backend(location: str | os.PathLike[str]) -> SearchBackend:
    """The backend a location names; InvalidLocation for an unknown scheme or a malformed one.

    Opening does not reach the engine: an unreachable one fails the first call with
    IndexUnavailable.
    """
    url = checked_location(location)
    factory = BACKENDS[url.split("://", 1)[0].lower()]
    if isinstance(factory, str):
        factory = _import(factory)
    return factory(url)


def whoosh_path(url: str) -> str:
    """The directory of a `whoosh:///abs/path` location."""
    parts = urlsplit(url)
    if parts.netloc or not parts.path.startswith("/") or parts.query or parts.fragment:
        raise InvalidLocation(
            f"a Whoosh location is a path or whoosh:///ABSOLUTE/PATH (three slashes), not {url}"
        )
    return unquote(parts.path)


def _solr_location(url: str) -> object:
    # Imported here: the location parser is light, the backend (requests) is not.
    from searchsvc.backends.solr.location import parse_location

    return parse_location(url)


_LOCATION_CHECKS: dict[str, LocationCheck] = {"whoosh": whoosh_path, "solr": _solr_location}


def _import(target: str) -> BackendFactory:
    module_name, _, attribute = target.partition(":")
    value: object = importlib.import_module(module_name)
    for name in attribute.split("."):
        value = getattr(value, name)
    if not callable(value):
        raise InvalidLocation(f"{target} is not a backend factory")
    return value
