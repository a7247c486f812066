"""The Whoosh engine's locations: a directory, as a path or `whoosh:///ABSOLUTE/PATH`."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from searchsvc.domain.errors import InvalidLocation


def whoosh_path(url: str) -> str:
    """The directory of a `whoosh:///abs/path` location; InvalidLocation for a malformed one."""
    parts = urlsplit(url)
    if parts.netloc or not parts.path.startswith("/") or parts.query or parts.fragment:
        raise InvalidLocation(
            f"a Whoosh location is a path or whoosh:///ABSOLUTE/PATH (three slashes), not {url}"
        )
    return unquote(parts.path)
