"""WhooshBackend: the SearchBackend over an index directory of generations (see store.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.backends.whoosh.search.authors import author_view
from searchsvc.backends.whoosh.search.execute import execute_search
from searchsvc.backends.whoosh.search.results import hits_for
from searchsvc.backends.whoosh.search.searcher import REFRESH_INTERVAL, SearcherManager
from searchsvc.backends.whoosh.search.stats import index_stats
from searchsvc.backends.whoosh.search.suggest import autocomplete, facet_values
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.errors import InvalidRequest, RecordNotFound
from searchsvc.query import (
    MAX_PER_PAGE,
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
)
from searchsvc.records import Record

# Key words drawn from a record to find similar ones ("more like this").
SIMILAR_KEY_TERMS = 10
STATS_TOP = 10


class WhooshBackend:
    """Search over the live generation of an index directory; safe to share between threads.

    Opening does not need an index to exist yet: calls raise IndexUnavailable until one does,
    and a rebuild or an update becomes visible within about a second.
    """

    def __init__(
        self, directory: IndexDirectory, refresh_interval: float = REFRESH_INTERVAL
    ) -> None:
        self.directory = directory
        self._searchers = SearcherManager(directory, refresh_interval)

    @classmethod
    def open(cls, index_dir: str | os.PathLike[str]) -> WhooshBackend:
        return cls(IndexDirectory(index_dir))

    def search(self, request: SearchRequest) -> SearchResult:
        with self._searchers.view() as view:
            return execute_search(view, request)

    def get(self, record_id: str) -> Record:
        with self._searchers.view() as view:
            stored = view.searcher.document(id=record_id)
        if stored is None:
            raise RecordNotFound(f"no record with id {record_id!r}", id=record_id)
        return from_stored(stored)

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        limit = _check_limit(limit)
        with self._searchers.view() as view:
            searcher = view.searcher
            docnum = searcher.document_number(id=record_id)
            if docnum is None:
                raise RecordNotFound(f"no record with id {record_id!r}", id=record_id)
            record = from_stored(searcher.stored_fields(docnum))
            results = searcher.more_like(
                docnum,
                "content",
                text=f"{record.title}\n{record.abstract}",
                top=limit,
                numterms=SIMILAR_KEY_TERMS,
            )
            ranked = [(docnum, score) for score, docnum in results.top_n]
            return hits_for(searcher, ranked, terms=None)

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        limit = _check_limit(limit)
        with self._searchers.view() as view:
            return autocomplete(view, prefix, limit)

    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        limit = _check_limit(limit)
        with self._searchers.view() as view:
            return facet_values(view.facets, facet, prefix, limit)

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        # Reuse the request's validation of page and per_page.
        SearchRequest(page=page, per_page=per_page)
        with self._searchers.view() as view:
            return author_view(view.searcher, view.facets, name, page, per_page)

    def stats(self) -> IndexStats:
        return index_stats(self.directory, top=STATS_TOP)

    def version(self) -> str:
        return self._searchers.version()

    def records(self) -> Iterator[Record]:
        # A searcher of its own: an export may outlive many refreshes of the shared ones.
        index = self.directory.open()
        with index.searcher() as searcher:
            for _, stored in searcher.reader().iter_docs():
                yield from_stored(stored)

    def close(self) -> None:
        self._searchers.close()

    def __enter__(self) -> WhooshBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PER_PAGE:
        raise InvalidRequest(
            f"limit must be an integer from 1 to {MAX_PER_PAGE}", parameter="limit"
        )
    return limit
