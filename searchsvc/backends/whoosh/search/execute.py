"""One search: compile the query tree, match, filter, count facets, rank a page, suggest.

Matching and filtering work on boolean document masks over the snapshot's facet arrays, so
the exact total and the facet counts come from one pass over the matched document numbers.
Queries made only of terms (the common case: words, OR/AND, expanded wildcards) are matched and
BM25F-scored on cached posting arrays (`scoring`), identical to Whoosh's own ranking but without
one Python call per match; other shapes (phrases, NOT, ranges) fall back to Whoosh.
"""

from __future__ import annotations

import time

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.accel.array_scoring import Bm25, extract_terms, score_all, top
from searchsvc.backends.whoosh.accel.facet_table import FacetTable, disjunctive_counts
from searchsvc.backends.whoosh.accel.snapshot_postings import SnapshotArrays
from searchsvc.backends.whoosh.queries.compile import ParsedQuery, compile_query
from searchsvc.backends.whoosh.search.results import highlight_terms, hits_for
from searchsvc.backends.whoosh.search.searcher import View
from searchsvc.backends.whoosh.search.suggest import did_you_mean
from searchsvc.facets import FACET_NAMES
from searchsvc.query import SearchRequest, SearchResult
from searchsvc.querylang import QueryTree


def execute_search(view: View, request: SearchRequest) -> SearchResult:
    """The SearchResult of a request on one snapshot of the index."""
    started = time.perf_counter()
    searcher, table = view.searcher, view.facets
    parsed = compile_for(view, request.tree, request.fields)

    scores = None
    term_query = None if parsed.match_all else extract_terms(parsed.query)
    bm25 = Bm25.of(searcher.weighting) if term_query is not None else None
    if term_query is not None and bm25 is not None:
        arrays = view.shared("ranking", lambda s: SnapshotArrays(s.reader()))
        scored = score_all(arrays, searcher.reader(), term_query, bm25)
        matched, scores = scored.matched, scored.scores
    else:
        matched = matching_documents(searcher, table, parsed)
    year_range = table.year_range(request.year_from, request.year_to)
    if year_range is not None:
        matched &= year_range
    filters = facet_filters(table, request)
    selected = matched.copy()
    for mask in filters.values():
        selected &= mask
    total = int(np.count_nonzero(selected))

    facets = disjunctive_counts(
        table,
        matched,
        filters,
        request.facets,
        request.facet_size,
        {facet: request.selected(facet) for facet in FACET_NAMES},
        request.primary_only,
    )
    start = (request.page - 1) * request.per_page
    if start >= total:
        ranked: list[tuple[int, float | None]] = []
    elif request.effective_sort == "relevance" and scores is not None:
        docnums, page_scores = top(scores, selected, request.per_page, start)
        ranked = list(zip(docnums.tolist(), page_scores.tolist(), strict=True))
    elif request.effective_sort == "relevance" and not parsed.match_all:
        filtered = bool(filters) or year_range is not None
        ranked = _by_relevance(searcher, parsed, selected if filtered else None, start, request)
    else:
        sort = "newest" if request.effective_sort == "relevance" else request.effective_sort
        page = table.order(selected, sort)[start : start + request.per_page]
        ranked = [(int(docnum), None) for docnum in page]

    marked = highlight_terms(parsed.query) if request.highlight else None
    hits = hits_for(searcher, ranked, marked)
    suggestion = did_you_mean(view, parsed)
    return SearchResult(
        request=request,
        total=total,
        hits=hits,
        facets=facets,
        took_ms=(time.perf_counter() - started) * 1000,
        suggestion=suggestion,
    )


def compile_for(view: View, tree: QueryTree, request_fields) -> ParsedQuery:
    """Compile a query tree against a snapshot (exact values such as categories resolved)."""
    table = view.facets

    def exact_values(field: str, value: str) -> tuple[str, ...]:
        # The index's `category` field holds the records' own codes: a subject (an archive,
        # a group, an alias) stands for every code under it.
        return table.categories_under(value)

    return compile_query(tree, request_fields, view.searcher.reader(), exact_values, view.lexicon)


def matching_documents(searcher: Searcher, table: FacetTable, parsed: ParsedQuery) -> np.ndarray:
    """Boolean mask of the documents the query matches (deleted ones never match)."""
    if parsed.match_all:
        return table.live.copy()
    return table.mask_of(searcher.docs_for_query(parsed.query))


def facet_filters(table: FacetTable, request: SearchRequest) -> dict[str, np.ndarray]:
    """A document mask per facet that has selected values (OR within the facet)."""
    return {
        facet: table.filter_mask(facet, values, request.primary_only)
        for facet in FACET_NAMES
        if (values := request.selected(facet))
    }


def _by_relevance(
    searcher: Searcher,
    parsed: ParsedQuery,
    allowed: np.ndarray | None,
    start: int,
    request: SearchRequest,
) -> list[tuple[int, float | None]]:
    allowed_docs = None if allowed is None else set(np.flatnonzero(allowed).tolist())
    # No block-quality skipping: Whoosh's UnionMatcher.skip_to_quality can loop for ever over
    # an OR of a name and a year under a NOT (`author:x OR year:2023 NOT year:..2021`), and the
    # skipping saved little on the shapes that come here (phrases, NOT, ranges).
    results = searcher.search(
        parsed.query, limit=start + request.per_page, filter=allowed_docs, optimize=False
    )
    return [(docnum, score) for score, docnum in results.top_n[start : start + request.per_page]]
