"""Semantic and hybrid searches on a collection, and more-like-this by vector
(searchsvc.domain.modes has the rules of each mode; the Whoosh backend answers alike).

A search takes up to three requests:

1. Plain words only (modes.meaning_adds), the nearest records: `{!knn}` over the records' int8
   vectors as the main query, so that every fq (records only, the year range, each facet's
   selection) pre-filters the vector search: the SEMANTIC_DEPTH best it finds are the nearest
   records passing all the filters; their cosines are read back from Lucene's scores, exactly
   (`cosine_of`), and those below modes.MEANING_FLOOR are dropped. A query using the query
   language skips this: meaning adds no record to it.
2. The counted query, over the mode's records (semantic of plain words: the nearest, by id;
   hybrid: the lexical query OR the nearest ids, these adding 0 to a score; otherwise the
   lexical query) with lexical mode's tagged filters and facets that exclude their own tag:
   the exact total, the facet counts and how many of the records match the query (a JSON
   query facet), and the page: semantic, the records sorted by their similarity to the query
   (`vectorSimilarity`, the knn score); by another sort, as it says. Hybrid by relevance lists
   the lexical matches in DFR order instead (above 0; records found only by meaning score 0),
   each with its cosine (the same function), and modes.fused_page orders the page;
3. whose records are then fetched by id.

Exact and approximate: Lucene compares the query with every vector of a segment when at most
NEAREST_CANDIDATES of its records pass the filters (each request here filters, on records
only at least), so the nearest are exact on collections of up to that many records per shard,
and under filters that leave that few (tests/contract/test_modes.py checks them against the
plain-Python model). On larger segments it walks their HNSW graph, NEAREST_CANDIDATES wide
(Lucene's efSearch is topK): the nearest records found are then the true ones with high
probability, not certainty; the Whoosh backend scores every vector exactly instead.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from searchsvc.backends.shared.highlighting import highlight_record
from searchsvc.backends.solr import analysis
from searchsvc.backends.solr.compile import CompiledQuery, compile_query, id_set, quoted
from searchsvc.backends.solr.connection import SolrConnection
from searchsvc.backends.solr.documents import (
    STORED_FIELDS,
    VECTOR_DIMENSIONS,
    VECTOR_FIELD,
    from_document,
)
from searchsvc.backends.solr.search import (
    RECORDS_ONLY,
    SORTS,
    did_you_mean,
    facet_counts,
    facet_params,
    filter_params,
    known_terms,
    selected_count_params,
    word_count_facets,
    word_terms,
)
from searchsvc.backends.solr.terms import IndexStems, Vocabulary
from searchsvc.domain.errors import RecordNotFound
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.modes import (
    SEMANTIC_DEPTH,
    fused_page,
    fusion_depth,
    meaning_adds,
    near_enough,
)
from searchsvc.domain.query import Hit, SearchRequest, SearchResult
from searchsvc.domain.records import Record
from searchsvc.embeddings import quantise
from searchsvc.embeddings.encoder import QUANTISATION_SCALE

# knn's topK: how many records a shard's vector search finds. Lucene scores every vector of a
# segment where no more records than this pass the filters (exact), and explores this many
# candidates of its HNSW graph elsewhere (approximate: recall of the nearest SEMANTIC_DEPTH
# rises with it, and so does the time a search takes).
NEAREST_CANDIDATES = 1_000
# Shards send the fields asked for with their first answer, not in a second round trip: saves
# a few milliseconds where few rows are asked for (a page by id, the fused lexical matches).
SINGLE_PASS = (("distrib.singlePass", "true"),)
# Lucene's score of a BYTE dot product: 0.5 + dot / (dimensions * 2^15).
_DOT_SCALE = VECTOR_DIMENSIONS * 2**15
# The request parameter holding the query's vector (read by knn and by the cosine function).
_VECTOR_PARAM = "query_vector"
_SIMILARITY = f"vectorSimilarity({VECTOR_FIELD},${_VECTOR_PARAM})"
_COSINE = f"cosine:{_SIMILARITY}"
# Records by similarity to the query, as the knn search ranks them (ties in record order).
# Sorting by vectorSimilarity() itself fails (it has no double value, which sorts read); a sum
# with 0 has, and is the same float.
_BY_SIMILARITY = f"sum({_SIMILARITY},0) desc,seq asc"
# The JSON facet counting the answer's records that match the query (the rest: meaning's).
_MATCHED_WORDS = "matched_words"


def execute_vector_search(
    connection: SolrConnection,
    vocabulary: Vocabulary,
    index_stems: IndexStems,
    request: SearchRequest,
    vector: np.ndarray,
    mode: str,
) -> SearchResult:
    """The SearchResult of a semantic or hybrid request; `vector` is the unit vector of the
    query's meaning (modes.meaning_text)."""
    started = time.perf_counter()
    adds = meaning_adds(request.tree)
    vector_params = [(_VECTOR_PARAM, vector_text(quantise(vector)))]
    filters = [("fq", RECORDS_ONLY), *filter_params(request)]
    nearest: list[tuple[str, float]] = []
    if adds:
        found = nearest_records(connection, vector_params, filters, SEMANTIC_DEPTH)
        nearest = [(record_id, cosine) for record_id, cosine in found if near_enough(cosine)]
    # Semantic mode too marks the query's words in what it returns.
    compiled = compile_query(request.tree, request.fields, vocabulary, index_stems)
    checked = word_terms(compiled)
    params = [*vector_params, *filters]
    params += counted_params(request, mode, compiled, [i for i, _ in nearest], checked)
    answer = connection.post("select", params, form=True)
    total = int(answer["response"]["numFound"])
    documents = answer["response"]["docs"]
    ranked: list[tuple[Record, float | None]]
    if request.effective_sort != "relevance":
        ranked = [(from_document(d), None) for d in documents]
    elif mode == "semantic":
        ranked = [(from_document(d), cosine_of(d["cosine"])) for d in documents]
    else:
        ranked = _with_records(connection, _fused_page(request, documents, nearest, total))

    matcher = analysis.highlight_matcher(compiled.highlight_terms) if request.highlight else None
    hits = tuple(
        Hit(
            record=record,
            score=score,
            highlights=highlight_record(record, matcher) if matcher is not None else {},
        )
        for record, score in ranked
    )
    matched = (answer.get("facets") or {}).get(_MATCHED_WORDS) or {}
    return SearchResult(
        request=request,
        total=total,
        hits=hits,
        facets=facet_counts(answer, request.facets, {f: request.selected(f) for f in FACET_NAMES}),
        took_ms=(time.perf_counter() - started) * 1000,
        suggestion=did_you_mean(vocabulary, index_stems, compiled, known_terms(answer, checked)),
        mode=mode,
        # Without records found by meaning every record of the answer matches the query.
        added_by_meaning=total - int(matched.get("count", 0)) if nearest else 0,
        meaning_adds=adds,
    )


def counted_params(
    request: SearchRequest,
    mode: str,
    compiled: CompiledQuery,
    nearest: list[str],
    checked: list[tuple[str, str]],
) -> list[tuple[str, Any]]:
    """The counted query's parameters besides the filters: its match set, facets as in lexical
    mode, the count of its records matching the query, and the page itself, or in hybrid mode
    by relevance the lexical ranking the page is fused from. `nearest`: the records meaning
    adds (plain words only); `checked`: the word terms did-you-mean counts."""
    near_query, params = id_set(nearest, "nearest")
    if mode == "hybrid" and nearest:
        # The nearest ids add nothing to a lexical match's score, and score 0 alone.
        params.append(("q", f"({compiled.query}) OR ({near_query})^=0"))
    elif mode == "semantic" and meaning_adds(request.tree):
        params.append(("q", near_query))
    else:
        params.append(("q", compiled.query))
    params += facet_params(request.facets, request.facet_size, request.primary_only)
    params += selected_count_params(request)
    more = {}
    if nearest:
        more[_MATCHED_WORDS] = {"type": "query", "q": compiled.query}
    if checked or more:
        params.append(("json.facet", word_count_facets(checked, **more)))
    start = (request.page - 1) * request.per_page
    page = [("start", start), ("rows", request.per_page)]
    if request.effective_sort != "relevance":
        return [*params, ("fl", STORED_FIELDS), *page, ("sort", SORTS[request.effective_sort])]
    if mode == "semantic":
        # Nearest first, in the order the knn search ranks them (cosine, then record order).
        return [
            *params,
            ("fl", f"{STORED_FIELDS},{_COSINE}"),
            *page,
            ("sort", _BY_SIMILARITY),
        ]
    return [
        *params,
        ("fl", f"id,score,{_COSINE}"),
        ("rows", fusion_depth(request.page, request.per_page)),
        ("sort", SORTS["relevance"]),
        *SINGLE_PASS,
    ]


def _fused_page(
    request: SearchRequest,
    documents: list[dict[str, Any]],
    nearest: list[tuple[str, float]],
    total: int,
) -> list[tuple[str, float]]:
    """The ids of a hybrid page with their fused scores, from the counted query's `documents`
    (the lexical ranking)."""
    start = (request.page - 1) * request.per_page
    if start >= total:
        return []
    by_lexical, cosines = lexical_ranking(documents, dict(nearest))
    nearest_ids = [record_id for record_id, _ in nearest]
    return fused_page(by_lexical, nearest_ids, cosines, start, request.per_page)


def nearest_records(
    connection: SolrConnection,
    vector_params: list[tuple[str, str]],
    filters: list[tuple[str, str]],
    count: int,
) -> list[tuple[str, float]]:
    """The ids of the `count` records nearest the vector in `vector_params` among those
    passing `filters` (fq parameters), nearest first, with their cosines."""
    topk = max(count, NEAREST_CANDIDATES)
    answer = connection.post(
        "select",
        [
            # The main query: knn takes every fq as a pre-filter (as a nested query, none).
            ("q", f"{{!knn f={VECTOR_FIELD} topK={topk} v=${_VECTOR_PARAM}}}"),
            *vector_params,
            *filters,
            ("fl", "id,score"),
            ("rows", count),
            # Equal vectors in record order, as the Whoosh backend breaks ties.
            ("sort", SORTS["relevance"]),
        ],
        form=True,
    )
    return [(doc["id"], cosine_of(doc["score"])) for doc in answer["response"]["docs"]]


def nearest_to_record(
    connection: SolrConnection, record_id: str, limit: int
) -> tuple[Hit, ...] | None:
    """The `limit` records whose vectors are nearest this record's (itself left out), with
    their cosines; None when it has no vector (RecordNotFound when there is no such record)."""
    answer = connection.post(
        "select",
        [
            ("q", "{!term f=id v=$id}"),
            ("id", record_id),
            ("fq", RECORDS_ONLY),
            ("fl", VECTOR_FIELD),
            ("rows", 1),
        ],
        form=True,
    )
    documents = answer["response"]["docs"]
    if not documents:
        raise RecordNotFound(f"no record with id {record_id!r}", id=record_id)
    own = documents[0].get(VECTOR_FIELD)
    if not own:
        return None
    answer = connection.post(
        "select",
        [
            ("q", f"{{!knn f={VECTOR_FIELD} topK={max(limit, NEAREST_CANDIDATES)} v=$own}}"),
            ("own", vector_text(own)),
            ("fq", RECORDS_ONLY),
            ("fq", f"-id:{quoted(record_id)}"),
            ("fl", f"{STORED_FIELDS},score"),
            ("rows", limit),
            ("sort", SORTS["relevance"]),
        ],
        form=True,
    )
    return tuple(
        Hit(record=from_document(doc), score=cosine_of(doc["score"]))
        for doc in answer["response"]["docs"]
    )


def vector_text(vector: Any) -> str:
    """An int8 vector as knn and vectorSimilarity read it: `[12,-3,...]`."""
    return "[" + ",".join(str(int(component)) for component in vector) + "]"


def cosine_of(score: float) -> float:
    """The cosine of two unit vectors from Lucene's score of their int8 forms' dot product, as
    searchsvc.embeddings.scan computes it: the dot product over 127². A score of 0 is a record
    without a vector: cosine 0, as on Whoosh."""
    if not score:
        return 0.0
    dot = np.float32(dot_product_of(score))
    return float(dot / np.float32(QUANTISATION_SCALE * QUANTISATION_SCALE))


def dot_product_of(score: float) -> int:
    """The dot product of two int8 vectors from Lucene's score of it, 0.5 + dot / (dimensions *
    2^15) in float32 arithmetic. A float32 near 0.5 is exact to 0.75 of a dot product, so the
    nearest whole one may be off by one: of the three near it, the one whose score this is."""
    estimate = round((float(score) - 0.5) * _DOT_SCALE)
    for dot in (estimate, estimate - 1, estimate + 1):
        if lucene_score(dot) == np.float32(score):
            return dot
    return estimate


def lucene_score(dot: int) -> np.float32:
    """Lucene's score of a BYTE dot product (VectorUtil.dotProductScore), in float32 as Lucene
    computes it: distinct whole dot products score differently."""
    return np.float32(0.5) + np.float32(dot) / np.float32(_DOT_SCALE)


def lexical_ranking(
    documents: list[dict[str, Any]], nearest: dict[str, float]
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """From the counted query's ranked documents: the lexical matches with their lexical scores,
    best first, and every document's cosine (the nearest records' from the knn scores)."""
    by_lexical = []
    cosines = dict(nearest)
    for document in documents:
        record_id, score = document["id"], float(document["score"])
        cosines.setdefault(record_id, cosine_of(document.get("cosine", 0.0)))
        # A nearest record the lexical query does not match scores 0 (its clause adds none).
        if score > 0 or record_id not in nearest:
            by_lexical.append((record_id, score))
    return by_lexical, cosines


def _with_records(
    connection: SolrConnection, page: list[tuple[str, float]]
) -> list[tuple[Record, float | None]]:
    """The page's records, in its order, with its scores (one gone meanwhile is left out)."""
    if not page:
        return []
    query, params = id_set([record_id for record_id, _ in page], "page")
    answer = connection.post(
        "select",
        [
            ("q", query),
            *params,
            ("fq", RECORDS_ONLY),
            ("fl", STORED_FIELDS),
            ("rows", len(page)),
            *SINGLE_PASS,
        ],
        form=True,
    )
    found = {doc["id"]: from_document(doc) for doc in answer["response"]["docs"]}
    return [(found[record_id], score) for record_id, score in page if record_id in found]
