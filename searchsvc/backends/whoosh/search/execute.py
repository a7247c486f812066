"""One search: compile the query tree, match, filter, count facets, rank a page, suggest.

Matching and filtering work on boolean document masks over the snapshot's facet arrays, so
the exact total and the facet counts come from one pass over the matched document numbers.
Queries made only of terms (the common case: words, OR/AND, expanded wildcards) are matched and
scored on cached posting arrays (accel/array_scoring.py), identical to Whoosh's own ranking but
without one Python call per match; other shapes (phrases, NOT, ranges) fall back to Whoosh.
"""

from __future__ import annotations

import time
from concurrent.futures import Future

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.accel.array_scoring import extract_terms, model_of, score_all, top
from searchsvc.backends.whoosh.accel.facet_table import FacetTable, disjunctive_counts
from searchsvc.backends.whoosh.accel.snapshot_postings import SnapshotArrays
from searchsvc.backends.whoosh.accel.vector_table import VectorTable
from searchsvc.backends.whoosh.queries.compile import ParsedQuery, compile_query
from searchsvc.backends.whoosh.search.results import highlight_terms, hits_for
from searchsvc.backends.whoosh.search.searcher import View
from searchsvc.backends.whoosh.search.suggest import did_you_mean
from searchsvc.facets import FACET_NAMES
from searchsvc.hybrid import (
    MEANING_FLOOR,
    SEMANTIC_DEPTH,
    fused_page,
    fusion_depth,
    meaning_adds,
    resolved,
)
from searchsvc.query import SearchRequest, SearchResult
from searchsvc.querylang import QueryTree


def execute_search(
    view: View, request: SearchRequest, query_vector: np.ndarray | Future[np.ndarray] | None = None
) -> SearchResult:
    """The SearchResult of a request on one snapshot of the index, in `request.mode` (chosen
    by the service); `query_vector` is the unit vector of hybrid.meaning_text (or a Future of
    it) for the hybrid and semantic modes (hybrid.py says what each returns). The words are
    matched before the vector is waited for."""
    started = time.perf_counter()
    searcher, table = view.searcher, view.facets
    parsed = compile_for(view, request.tree, request.fields)
    mode = request.mode or "lexical"
    vectors = view.vectors
    if query_vector is None or vectors is None:
        mode = "lexical"  # a caller that skipped the service, or an index without vectors
    adds = mode != "lexical" and meaning_adds(request.tree)

    scores = None
    term_query = None if parsed.match_all else extract_terms(parsed.query)
    model = model_of(searcher.weighting) if term_query is not None else None
    if term_query is not None and model is not None:
        arrays = view.shared("ranking", lambda s: SnapshotArrays(s.reader()))
        scored = score_all(arrays, searcher.reader(), term_query, model)
        lexical, scores = scored.matched, scored.scores
    else:
        lexical = matching_documents(searcher, table, parsed)
    year_range = table.year_range(request.year_from, request.year_to)
    if year_range is not None:
        lexical &= year_range
    filters = facet_filters(table, request)

    vector = None
    if mode != "lexical" and query_vector is not None:
        vector = resolved(query_vector)
    nearest_docs = np.zeros(0, dtype=np.int64)
    nearest_scores = np.zeros(0, dtype=np.float32)
    if adds:
        assert vectors is not None and vector is not None
        passing = table.live.copy()
        if year_range is not None:
            passing &= year_range
        for mask in filters.values():
            passing &= mask
        nearest_docs, nearest_scores = vectors.nearest(vector, passing, SEMANTIC_DEPTH)
        near = nearest_scores >= MEANING_FLOOR
        nearest_docs, nearest_scores = nearest_docs[near], nearest_scores[near]

    # The answer before the facet filters (facet counts leave each facet's own out).
    answer = np.zeros_like(table.live) if mode == "semantic" and adds else lexical.copy()
    answer[nearest_docs] = True
    selected = answer.copy()
    for mask in filters.values():
        selected &= mask
    total = int(np.count_nonzero(selected))
    added_by_meaning = total - int(np.count_nonzero(selected & lexical))

    facets = disjunctive_counts(
        table,
        answer,
        filters,
        request.facets,
        request.facet_size,
        {facet: request.selected(facet) for facet in FACET_NAMES},
        request.primary_only,
    )
    start = (request.page - 1) * request.per_page
    relevance = request.effective_sort == "relevance" and (
        mode != "lexical" or not parsed.match_all
    )
    if start >= total:
        ranked: list[tuple[int, float | None]] = []
    elif relevance and mode == "semantic" and adds:
        window = slice(start, start + request.per_page)
        ranked = list(
            zip(nearest_docs[window].tolist(), nearest_scores[window].tolist(), strict=True)
        )
    elif relevance and mode == "semantic":
        # A query using the language: its own matches, nearest the words' meaning first.
        assert vectors is not None and vector is not None
        ranked = _by_cosine(vectors, vector, selected, start, request.per_page)
    elif relevance and mode == "hybrid":
        assert vectors is not None and vector is not None
        lexical_selected = lexical.copy()
        for mask in filters.values():
            lexical_selected &= mask
        depth = fusion_depth(request.page, request.per_page)
        by_lexical = _lexical_ranking(searcher, parsed, scores, lexical_selected, depth)
        ranked = _fused_page(
            by_lexical, nearest_docs, nearest_scores, vectors, vector, start, request.per_page
        )
    elif relevance and scores is not None:
        docnums, page_scores = top(scores, selected, request.per_page, start)
        ranked = list(zip(docnums.tolist(), page_scores.tolist(), strict=True))
    elif relevance:
        filtered = bool(filters) or year_range is not None
        ranked = _by_relevance(
            searcher, parsed, selected if filtered else None, start, start + request.per_page
        )
    else:
        sort = "newest" if request.effective_sort == "relevance" else request.effective_sort
        page = table.order(selected, sort)[start : start + request.per_page]
        ranked = [(int(docnum), None) for docnum in page]

    marked = highlight_terms(parsed.query) if request.highlight else None
    hits = hits_for(searcher, ranked, marked)
    return SearchResult(
        request=request,
        total=total,
        hits=hits,
        facets=facets,
        took_ms=(time.perf_counter() - started) * 1000,
        suggestion=did_you_mean(view, parsed),
        mode=mode,
        added_by_meaning=added_by_meaning,
        meaning_adds=adds,
    )


def _by_cosine(
    vectors: VectorTable, vector: np.ndarray, selected: np.ndarray, start: int, per_page: int
) -> list[tuple[int, float | None]]:
    """Ranks [start, start + per_page) of the selected documents by their cosine to the query
    (a document without a vector: 0), ties by document number."""
    docnums = np.flatnonzero(selected)
    cosines = np.full(len(selected), -np.inf, dtype=np.float64)
    cosines[docnums] = vectors.cosines_of(vector, docnums)
    found, found_cosines = top(cosines, selected, per_page, start)
    return list(zip(found.tolist(), found_cosines.tolist(), strict=True))


def _lexical_ranking(
    searcher: Searcher,
    parsed: ParsedQuery,
    scores: np.ndarray | None,
    allowed: np.ndarray,
    depth: int,
) -> list[tuple[int, float]]:
    """The first `depth` allowed lexical matches with their lexical scores, best first."""
    if parsed.match_all or not allowed.any():
        return []
    if scores is not None:
        docnums, found = top(scores, allowed, depth)
        return list(zip(docnums.tolist(), found.tolist(), strict=True))
    return [
        (d, float(score or 0.0)) for d, score in _by_relevance(searcher, parsed, allowed, 0, depth)
    ]


def _fused_page(
    by_lexical: list[tuple[int, float]],
    nearest_docs: np.ndarray,
    nearest_scores: np.ndarray,
    vectors: VectorTable,
    vector: np.ndarray,
    start: int,
    per_page: int,
) -> list[tuple[int, float | None]]:
    """A page of the hybrid order (hybrid.fused_page), with the cosines of the lexical matches
    the nearest records leave out."""
    cosine_of = dict(zip(nearest_docs.tolist(), nearest_scores.tolist(), strict=True))
    unscored = np.array([d for d, _ in by_lexical if d not in cosine_of], dtype=np.int64)
    if len(unscored):
        scores = vectors.cosines_of(vector, unscored)
        cosine_of.update(zip(unscored.tolist(), scores.tolist(), strict=True))
    page = fused_page(by_lexical, nearest_docs.tolist(), cosine_of, start, per_page)
    return [(docnum, score) for docnum, score in page]


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
    stop: int,
) -> list[tuple[int, float | None]]:
    allowed_docs = None if allowed is None else set(np.flatnonzero(allowed).tolist())
    # No block-quality skipping: Whoosh's UnionMatcher.skip_to_quality can loop for ever over
    # an OR of a name and a year under a NOT (`author:x OR year:2023 NOT year:..2021`), and the
    # skipping saved little on the shapes that come here (phrases, NOT, ranges).
    results = searcher.search(parsed.query, limit=stop, filter=allowed_docs, optimize=False)
    return [(docnum, score) for score, docnum in results.top_n[start:stop]]
