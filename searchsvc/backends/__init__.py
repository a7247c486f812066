"""Search backends: the interface every engine implements; Whoosh lives in `backends.whoosh`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from searchsvc.query import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
)
from searchsvc.records import Record


class SearchBackend(Protocol):
    """What the API, the web page, the CLI and Python callers need from a search engine."""

    def search(self, request: SearchRequest) -> SearchResult: ...

    def get(self, record_id: str) -> Record:
        """The record with this id; raises RecordNotFound."""
        ...

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]: ...

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions: ...

    def facet_values(
        self, facet: str, prefix: str = "", limit: int = 10
    ) -> tuple[FacetValue, ...]: ...

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView: ...

    def stats(self) -> IndexStats: ...

    def version(self) -> str:
        """A token that changes whenever the index content changes (for ETags and caches)."""
        ...

    def records(self) -> Iterator[Record]:
        """Every record in the index (for export)."""
        ...

    def close(self) -> None: ...
