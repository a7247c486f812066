"""The in-process Python API: `SearchService.open(index_dir).search(q=..., category=[...])`.

The same object serves HTTP requests (one per process, from `get_service()`), the web page and
Python applications that embed the engine. Arguments are validated by the domain
(`SearchRequest`) and the backend, raising `InvalidRequest` like the HTTP API does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from flask import Flask, current_app

from searchsvc.backends import SearchBackend
from searchsvc.query import (
    DEFAULT_FACET_SIZE,
    DEFAULT_PER_PAGE,
    FACETS,
    SEARCH_FIELDS,
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
)
from searchsvc.records import Record

DEFAULT_LIMIT = 10
DEFAULT_AUTHOR_PER_PAGE = 20


# A word no index holds, so that warm_up's search looks for a correction.
_UNKNOWN_WORD = "qzxjqvkw"


class SearchService:
    """Search, records, suggestions, facets and stats of one index, through a SearchBackend."""

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend
        self._stats: IndexStats | None = None

    @classmethod
    def open(cls, index_dir: str | os.PathLike[str]) -> SearchService:
        """The index at `index_dir`, read-only; calls raise IndexUnavailable while there is none.

        Rebuilds and updates of the index are picked up by the backend without reopening.
        """
        # Imported here: the API and the web page import this module, never the engine itself.
        from searchsvc.backends.whoosh.backend import WhooshBackend

        return cls(WhooshBackend.open(index_dir))

    def search(
        self,
        q: str = "",
        *,
        author: Iterable[str] | str = (),
        category: Iterable[str] | str = (),
        year: Iterable[int] | int = (),
        year_from: int | None = None,
        year_to: int | None = None,
        sort: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
        facets: Iterable[str] = FACETS,
        facet_size: int = DEFAULT_FACET_SIZE,
        highlight: bool = True,
        fields: Iterable[str] = SEARCH_FIELDS,
    ) -> SearchResult:
        """One page of ranked, filtered, faceted and highlighted hits."""
        request = SearchRequest.from_params(
            q,
            author=author,
            category=category,
            year=year,
            year_from=year_from,
            year_to=year_to,
            sort=sort,
            page=page,
            per_page=per_page,
            facets=facets,
            facet_size=facet_size,
            highlight=highlight,
            fields=fields,
        )
        return self.search_request(request)

    def search_request(self, request: SearchRequest) -> SearchResult:
        """Run an already-built SearchRequest."""
        return self.backend.search(request)

    def get(self, record_id: str) -> Record:
        """The record with this id; raises RecordNotFound."""
        return self.backend.get(record_id)

    def similar(self, record_id: str, limit: int = DEFAULT_LIMIT) -> tuple[Hit, ...]:
        """Records like this one (more-like-this on its text); raises RecordNotFound."""
        return self.backend.similar(record_id, limit)

    def suggest(self, prefix: str, limit: int = DEFAULT_LIMIT) -> Suggestions:
        """Autocomplete: titles and author names starting with `prefix`."""
        return self.backend.suggest(prefix, limit)

    def facet_values(
        self, facet: str, prefix: str = "", limit: int = DEFAULT_LIMIT
    ) -> tuple[FacetValue, ...]:
        """The most frequent values of a facet, optionally only those starting with `prefix`."""
        return self.backend.facet_values(facet, prefix, limit)

    def author(
        self, name: str, page: int = 1, per_page: int = DEFAULT_AUTHOR_PER_PAGE
    ) -> AuthorView:
        """An author's records (newest first, paged) with counts per year/category, coauthors."""
        return self.backend.author(name, page, per_page)

    def stats(self) -> IndexStats:
        """Document count, facet cardinalities and build time (computed once per index version)."""
        version = self.backend.version()
        stats = self._stats
        if stats is None or stats.version != version:
            stats = self._stats = self.backend.stats()
        return stats

    def warm_up(self) -> None:
        """Open the index and build its per-version caches now, not on the first request.

        A search builds the facet arrays and ranking caches; a word found nowhere loads the
        spelling words of did-you-mean. Autocomplete's author-name index is left to the first
        suggestion: it takes seconds at a million records, and gunicorn restarts a worker whose
        start-up (this) outlasts its timeout.
        """
        self.backend.search(SearchRequest(q="a", per_page=1))
        self.backend.search(SearchRequest(q=_UNKNOWN_WORD, per_page=1, facets=()))

    def version(self) -> str:
        """A token that changes whenever the index content changes."""
        return self.backend.version()

    def records(self) -> Iterator[Record]:
        """Every record in the index."""
        return self.backend.records()

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> SearchService:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class _ProcessService:
    """Opens the app's SearchService on first use, once per process, and keeps it."""

    def __init__(self, index_dir: str) -> None:
        self.index_dir = index_dir
        self._lock = threading.Lock()
        self._service: SearchService | None = None
        self._pid = 0

    def get(self) -> SearchService:
        service = self._service
        # A forked worker must not share the parent's open files: reopen in each process.
        if service is not None and self._pid == os.getpid():
            return service
        with self._lock:
            if self._service is None or self._pid != os.getpid():
                # A failure (IndexUnavailable) is not remembered: the next request tries again.
                self._service = SearchService.open(self.index_dir)
                self._pid = os.getpid()
            return self._service


def init_app(app: Flask) -> None:
    """Give the app its (lazily opened) SearchService on `app.config["INDEX_DIR"]`."""
    app.extensions["searchsvc.service"] = _ProcessService(app.config["INDEX_DIR"])


def get_service() -> SearchService:
    """The SearchService of the current Flask app (opened on first use in this process)."""
    return current_app.extensions["searchsvc.service"].get()
