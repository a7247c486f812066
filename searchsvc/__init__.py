"""searchsvc: full-text search over scholarly publication records.

The in-process Python API is `SearchService`: `SearchService.open("index").search("q")`. It is
imported on first use (PEP 562), so that `searchsvc.client`, the HTTP client, loads none of the
engine's modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from searchsvc.service import SearchService

__all__ = ["SearchService", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "SearchService":
        from searchsvc.service import SearchService

        return SearchService
    raise AttributeError(f"module 'searchsvc' has no attribute {name!r}")
