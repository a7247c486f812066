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
from dataclasses import dataclass

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
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.modes import (
    MEANING_FLOOR,
    SEMANTIC_DEPTH,
    fused_page,
    fusion_depth,
    meaning_adds,
    resolved,
)
from searchsvc.domain.query import SearchRequest, SearchResult
from searchsvc.domain.querylang import QueryTree


@dataclass
class _Selection:
    """What a search selects before its page is ranked, as document masks of the snapshot."""

    mode: str  # as the service chose it (domain/modes.py), or lexical without a vector to rank by
    adds: bool  # whether meaning adds records (hybrid and semantic searches of plain words)
    lexical: np.ndarray  # the query's matches within the year range
    scores: np.ndarray | None  # their lexical scores, where the fast path scored them all
    year_range: np.ndarray | None
    filters: dict[str, np.ndarray]  # each facet's selection
    nearest_docs: np.ndarray  # the records meaning adds, nearest first, with their cosines
    nearest_scores: np.ndarray
    answer: np.ndarray  # the records of the answer before the facet filters
    selected: np.ndarray  # the answer passing every filter


def execute_search(
    view: View, request: SearchRequest, query_vector: np.ndarray | Future[np.ndarray] | None = None
) -> SearchResult:
    """The SearchResult of a request on one snapshot of the index, in `request.mode` (chosen
    by the service); `query_vector` is the unit vector of modes.meaning_text (or a Future of
    it) for the hybrid and semantic modes (domain/modes.py says what each returns). The words are
    matched before the vector is waited for."""
    started = time.perf_counter()
    parsed = compile_for(view, request.tree, request.fields)
    mode = request.mode or "lexical"
    if query_vector is None or view.vectors is None:
        mode = "lexical"  # a caller that skipped the service, or an index without vectors
    selection = _select(view, request, parsed, mode)
    vector = resolved(query_vector) if mode != "lexical" and query_vector is not None else None
    if selection.adds:
        assert vector is not None
        _add_nearest(view, selection, vector)
    total = int(np.count_nonzero(selection.selected))
    facets = disjunctive_counts(
        view.facets,
        selection.answer,
        selection.filters,
        request.facets,
        request.facet_size,
        {facet: request.selected(facet) for facet in FACET_NAMES},
        request.primary_only,
    )
    ranked = _ranked_page(view, request, parsed, selection, vector, total)
    marked = highlight_terms(parsed.query) if request.highlight else None
    return SearchResult(
        request=request,
        total=total,
        hits=hits_for(view.searcher, ranked, marked),
        facets=facets,
        took_ms=(time.perf_counter() - started) * 1000,
        suggestion=did_you_mean(view, parsed),
        mode=selection.mode,
        added_by_meaning=total - int(np.count_nonzero(selection.selected & selection.lexical)),
        meaning_adds=selection.adds,
    )


def _select(view: View, request: SearchRequest, parsed: ParsedQuery, mode: str) -> _Selection:
    """The query's matches (scored on the fast path where it can), the year range and the
    facet selections; the answer is the matches until meaning adds to it (`_add_nearest`)."""
    table = view.facets
    scores = None
    term_query = None if parsed.match_all else extract_terms(parsed.query)
    model = model_of(view.searcher.weighting) if term_query is not None else None
    if term_query is not None and model is not None:
        arrays = view.shared("ranking", lambda s: SnapshotArrays(s.reader()))
        scored = score_all(arrays, view.searcher.reader(), term_query, model)
        lexical, scores = scored.matched, scored.scores
    else:
        lexical = matching_documents(view.searcher, table, parsed)
    year_range = table.year_range(request.year_from, request.year_to)
    if year_range is not None:
        lexical &= year_range
    filters = facet_filters(table, request)
    adds = mode != "lexical" and meaning_adds(request.tree)
    # Semantic of plain words answers the nearest records alone, found next.
    answer = np.zeros_like(table.live) if mode == "semantic" and adds else lexical.copy()
    return _Selection(
        mode=mode,
        adds=adds,
        lexical=lexical,
        scores=scores,
        year_range=year_range,
        filters=filters,
        nearest_docs=np.zeros(0, dtype=np.int64),
        nearest_scores=np.zeros(0, dtype=np.float32),
        answer=answer,
        selected=_filtered(answer, filters),
    )


def _add_nearest(view: View, selection: _Selection, vector: np.ndarray) -> None:
    """Add to the answer the SEMANTIC_DEPTH records nearest `vector` that pass every filter
    and reach MEANING_FLOOR."""
    assert view.vectors is not None
    passing = view.facets.live.copy()
    if selection.year_range is not None:
        passing &= selection.year_range
    passing = _filtered(passing, selection.filters)
    docs, cosines = view.vectors.nearest(vector, passing, SEMANTIC_DEPTH)
    near = cosines >= MEANING_FLOOR
    selection.nearest_docs, selection.nearest_scores = docs[near], cosines[near]
    selection.answer[selection.nearest_docs] = True
    selection.selected[selection.nearest_docs] = True  # they pass every filter already


def _filtered(documents: np.ndarray, filters: dict[str, np.ndarray]) -> np.ndarray:
    """`documents` (a copy) without those some facet selection leaves out."""
    kept = documents.copy()
    for mask in filters.values():
        kept &= mask
    return kept


def _ranked_page(
    view: View,
    request: SearchRequest,
    parsed: ParsedQuery,
    selection: _Selection,
    vector: np.ndarray | None,
    total: int,
) -> list[tuple[int, float | None]]:
    """The page's documents in the request's order, with their scores (None unless ranked by
    relevance)."""
    start, size = (request.page - 1) * request.per_page, request.per_page
    mode, selected = selection.mode, selection.selected
    if start >= total:
        return []
    if request.effective_sort != "relevance" or (mode == "lexical" and parsed.match_all):
        sort = "newest" if request.effective_sort == "relevance" else request.effective_sort
        page = view.facets.order(selected, sort)[start : start + size]
        return [(int(docnum), None) for docnum in page]
    if mode == "semantic" and selection.adds:
        window = slice(start, start + size)
        docs, cosines = selection.nearest_docs[window], selection.nearest_scores[window]
        return list(zip(docs.tolist(), cosines.tolist(), strict=True))
    if mode == "semantic":
        # A query using the language: its own matches, nearest the words' meaning first.
        assert view.vectors is not None and vector is not None
        return _by_cosine(view.vectors, vector, selected, start, size)
    if mode == "hybrid":
        assert view.vectors is not None and vector is not None
        lexical_selected = _filtered(selection.lexical, selection.filters)
        depth = fusion_depth(request.page, request.per_page)
        by_lexical = _lexical_ranking(
            view.searcher, parsed, selection.scores, lexical_selected, depth
        )
        return _fused_page(by_lexical, selection, view.vectors, vector, start, size)
    if selection.scores is not None:
        docnums, page_scores = top(selection.scores, selected, size, start)
        return list(zip(docnums.tolist(), page_scores.tolist(), strict=True))
    filtered = bool(selection.filters) or selection.year_range is not None
    return _by_relevance(view.searcher, parsed, selected if filtered else None, start, start + size)


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
    selection: _Selection,
    vectors: VectorTable,
    vector: np.ndarray,
    start: int,
    per_page: int,
) -> list[tuple[int, float | None]]:
    """A page of the hybrid order (modes.fused_page), with the cosines of the lexical matches
    the nearest records leave out."""
    nearest_docs = selection.nearest_docs
    cosine_of = dict(zip(nearest_docs.tolist(), selection.nearest_scores.tolist(), strict=True))
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
