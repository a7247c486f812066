"""Lexical, hybrid and semantic search on every engine, against a plain-Python model.

The model (searchsvc/domain/modes.py's rules): a query of plain words in semantic mode returns the
SEMANTIC_DEPTH records nearest the query vector among those passing the filters, at a cosine of
MEANING_FLOOR or more; in hybrid mode those plus the lexical matches passing the filters; total
and facet counts are the lexical model's (reference.expected_total / expected_facets) over that
answer, and the result counts apart the records that match the words and those only meaning
brought. A query using the query language selects in every mode exactly its lexical matches.
The nearest records are worked out here from the records' own vectors (the encoder run on them
directly, the dot products in numpy), the lexical matches taken from the engine's lexical mode
(tested on its own elsewhere).
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace

import numpy as np
import pytest

from searchsvc.backends import SearchBackend, open_backend
from searchsvc.domain.errors import ModelUnavailable, ModeUnavailable
from searchsvc.domain.modes import MODES, SEMANTIC_DEPTH, meaning_text
from searchsvc.domain.query import MAX_PER_PAGE, SearchRequest
from searchsvc.domain.records import Record
from searchsvc.embeddings import quantise, shared_encoder
from searchsvc.service import SearchService
from tests.contract.reference import (
    FLOOR_DOT,
    answered_facets,
    expected_facets,
    expected_total,
    hit_ids,
    in_year_bounds,
    passes_filters,
    query_dots,
)

# Claims and paraphrases, as readers type them, with filters of every kind.
REQUESTS = [
    SearchRequest(q="how do galaxies form"),
    SearchRequest(q="entangled photons", filters={"subject": ("quant-ph", "hep-ph")}),
    SearchRequest(q="neutrino masses", year_from=2007, year_to=2007),
    SearchRequest(q="graph colouring algorithms", filters={"category": ("math",)}),
    SearchRequest(q="superconductivity in thin films", facet_size=3),
    SearchRequest(q="black hole", crosslists="exclude", filters={"subject": ("astro-ph",)}),
]


@pytest.fixture(scope="session")
def encoder():
    return shared_encoder()


@pytest.fixture(scope="session")
def record_vectors(encoder, kaggle_records) -> dict[str, np.ndarray]:
    """Each record's int8 vector, made by the encoder directly (not read from an engine)."""
    vectors = encoder.embed_records(kaggle_records)
    return {record.id: vectors[i] for i, record in enumerate(kaggle_records)}


@pytest.fixture(scope="session")
def vector_backend(engine, kaggle_records) -> Iterator[SearchBackend]:
    """The 200 Kaggle records with vectors, on the engine. Do not modify."""
    with open_backend(engine.new_location(keep=True)) as backend:
        backend.rebuild(list(kaggle_records), vectors=True)
        yield backend


def nearest_ids(
    encoder, records: list[Record], vectors: dict[str, np.ndarray], request: SearchRequest
) -> tuple[list[str], bool]:
    """The model's nearest records passing the filters and the floor, nearest first, and
    whether the cut at SEMANTIC_DEPTH falls between two different scores (else any of the tied
    may be in)."""
    passing = [r for r in records if in_year_bounds(r, request) and passes_filters(r, request)]
    dots = query_dots(passing, vectors, request.q)
    ranked = [i for i in sorted(dots, key=lambda record_id: -dots[record_id])]
    ranked = [i for i in ranked if dots[i] >= FLOOR_DOT]
    clean_cut = len(ranked) <= SEMANTIC_DEPTH or (
        dots[ranked[SEMANTIC_DEPTH - 1]] != dots[ranked[SEMANTIC_DEPTH]]
    )
    return ranked[:SEMANTIC_DEPTH], clean_cut


def every_hit(backend: SearchBackend, request: SearchRequest, vector) -> list[str]:
    """The ids of every page of a search, in order."""
    ids: list[str] = []
    page = 1
    while True:
        paged = replace(request, page=page, per_page=MAX_PER_PAGE, facets=(), highlight=False)
        result = backend.search(paged, vector)
        ids.extend(hit_ids(result))
        if page >= result.pages:
            return ids
        page += 1


def lexical_matches(backend: SearchBackend, request: SearchRequest) -> set[str]:
    """The records the query's words match, without the filters."""
    unfiltered = SearchRequest(q=request.q, fields=request.fields, mode="lexical")
    return set(every_hit(backend, unfiltered, None))


def test_a_build_with_vectors_records_the_model(vector_backend, encoder):
    assert vector_backend.vector_model() == encoder.fingerprint


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: r.q)
def test_semantic_returns_the_nearest_records_passing_the_filters_and_the_floor(
    vector_backend, encoder, kaggle_records, record_vectors, request_
):
    request = replace(request_, mode="semantic")
    vector = encoder.embed_query(request.q)
    expected, clean_cut = nearest_ids(encoder, kaggle_records, record_vectors, request)
    result = vector_backend.search(request, vector)
    assert result.mode == "semantic" and result.meaning_adds
    ids = every_hit(vector_backend, request, vector)
    assert len(ids) == len(set(ids)) == result.total == len(expected) < SEMANTIC_DEPTH
    if clean_cut:
        assert set(ids) == set(expected)
    # Nearest first: the engine's order has the model's scores in descending order.
    query = quantise(vector).astype(np.int32)
    dots = [int(record_vectors[i].astype(np.int32) @ query) for i in ids]
    assert all(a >= b - 300 for a, b in itertools.pairwise(dots))  # ~0.02 cosine
    assert all(dot >= FLOOR_DOT for dot in dots)
    by_id = {r.id: r for r in kaggle_records}
    assert answered_facets(result) == expected_facets([by_id[i] for i in ids], request)
    # Counted apart: those with the query's words, and the others.
    lexical = lexical_matches(vector_backend, request)
    assert result.matched_by_words == len(set(ids) & lexical)
    assert result.added_by_meaning == len(set(ids) - lexical)


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: r.q)
def test_hybrid_returns_the_lexical_matches_and_the_nearest_records_above_the_floor(
    vector_backend, encoder, kaggle_records, record_vectors, request_
):
    request = replace(request_, mode="hybrid")
    vector = encoder.embed_query(request.q)
    nearest, clean_cut = nearest_ids(encoder, kaggle_records, record_vectors, request)
    lexical = lexical_matches(vector_backend, request)
    by_id = {r.id: r for r in kaggle_records}
    union = [by_id[i] for i in sorted(lexical | set(nearest))]
    result = vector_backend.search(request, vector)
    assert result.mode == "hybrid" and result.meaning_adds
    ids = every_hit(vector_backend, request, vector)
    assert len(ids) == len(set(ids)) == result.total == expected_total(union, request)
    with_words = expected_total([by_id[i] for i in lexical], request)
    assert (result.matched_by_words, result.added_by_meaning) == (
        with_words,
        result.total - with_words,
    )
    dots = query_dots([by_id[i] for i in ids], record_vectors, request.q)
    assert all(dots[i] >= FLOOR_DOT for i in ids if i not in lexical)
    if clean_cut:
        assert set(ids) == {r.id for r in union if passes_filters(r, request)} - {
            r.id for r in union if not in_year_bounds(r, request)
        }
        assert answered_facets(result) == expected_facets(union, request)


# Queries that use the query language: in every mode exactly their lexical matches.
STRUCTURED = [
    "category:hep-ph",
    '"dark matter"',
    "neutrino NOT mass",
    'author:"I. Grabec" year:2007',
    "galaxy OR galaxies",
    "galax*",
    "nuetrino~2",
    "magnetic AND field",
    "title:quantum",
    '"magnetic field"~2',
    "NOT the",
]


@pytest.mark.parametrize("q", STRUCTURED)
def test_a_query_using_the_language_selects_its_matches_in_every_mode(vector_backend, q):
    service = SearchService(vector_backend)
    lexical = service.search(q, mode="lexical", per_page=MAX_PER_PAGE, facet_size=50)
    wanted = set(every_hit(vector_backend, lexical.request, None))
    assert wanted and lexical.matched_by_words == lexical.total == len(wanted)
    for mode in ("hybrid", "semantic"):
        result = service.search(q, mode=mode, per_page=MAX_PER_PAGE, facet_size=50)
        meaning = meaning_text(result.request.tree)
        # Words to mean: the mode ranks by them; none (fields, NOT): lexical, and says so.
        assert result.mode == (mode if meaning else "lexical")
        assert not result.meaning_adds and result.added_by_meaning == 0
        assert result.total == result.matched_by_words == len(wanted)
        answered = {hit.record.id for page in _pages(service, result) for hit in page.hits}
        assert answered == wanted
        assert answered_facets(result) == answered_facets(lexical)


def _pages(service: SearchService, first):
    yield first
    for page in range(2, first.pages + 1):
        yield service.search_request(replace(first.request, page=page))


def test_semantic_ranks_a_structured_querys_matches_by_meaning(
    vector_backend, kaggle_records, record_vectors
):
    service = SearchService(vector_backend)
    result = service.search("title:quantum", mode="semantic", per_page=MAX_PER_PAGE)
    assert result.mode == "semantic" and result.total > 3
    by_id = {r.id: r for r in kaggle_records}
    dots = query_dots([by_id[h.record.id] for h in result.hits], record_vectors, "quantum")
    ranked = [dots[hit.record.id] for hit in result.hits]
    assert all(a >= b - 300 for a, b in itertools.pairwise(ranked))


# Each mode, each kind of query, through the service (as every entry point searches).
KINDS = {
    "structured": "category:hep-ph year:2007",
    "phrase": '"dark matter"',
    "excluded word": "field NOT magnetic",
    "nonsense": "qzxwv",
    "free words": "how do galaxies form",
    "free words + filter": "particle collisions at high energy",
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_every_mode_answers_every_kind_of_query_as_it_means(
    vector_backend, kaggle_records, record_vectors, mode, kind
):
    service = SearchService(vector_backend)
    filters = {"category": ["hep-ph"]} if kind == "free words + filter" else {}
    q = KINDS[kind]
    result = service.search(q, mode=mode, per_page=MAX_PER_PAGE, **filters)
    lexical = lexical_matches(vector_backend, result.request)
    by_id = {r.id: r for r in kaggle_records}
    ids = [hit.record.id for page in _pages(service, result) for hit in page.hits]
    assert len(ids) == len(set(ids)) == result.total
    assert all(passes_filters(by_id[i], result.request) for i in ids)
    if kind == "nonsense":
        assert result.total == 0 and result.hits == ()
    elif kind in ("structured", "phrase", "excluded word"):
        assert set(ids) == lexical and result.added_by_meaning == 0
        if kind == "excluded word":
            assert not set(ids) & lexical_matches(vector_backend, SearchRequest(q="magnetic"))
    else:
        with_words = {i for i in lexical if passes_filters(by_id[i], result.request)}
        if mode == "lexical":
            assert set(ids) == with_words
        if mode == "hybrid":
            assert with_words <= set(ids)
        dots = query_dots([by_id[i] for i in ids], record_vectors, q)
        assert all(dots[i] >= FLOOR_DOT for i in ids if i not in lexical)
        assert result.matched_by_words == len(set(ids) & lexical)
        assert result.added_by_meaning == len(set(ids) - lexical)
        assert result.meaning_adds == (mode != "lexical")
        if mode != "lexical" and not filters:
            assert result.added_by_meaning > 0  # paraphrases find records by meaning


@pytest.mark.parametrize("mode", MODES)
def test_nonsense_finds_nothing_and_a_typo_gets_its_correction_in_every_mode(vector_backend, mode):
    service = SearchService(vector_backend)
    for nonsense in ("qzxwv", "2301.00001", "10.1145/3132747.3132763", "vcgbvuouyfdv"):
        assert service.search(nonsense, mode=mode).total == 0, nonsense
    # A stop word means nothing: whatever its words find, meaning adds nothing.
    assert service.search("the", mode=mode).added_by_meaning == 0
    assert service.search("galaxiez", mode=mode).suggestion == "galaxies"


TOPICS = [
    ("Airbags and seat belts lower driver fatalities in automobile crashes", "vehicle"),
    ("Error correction for superconducting qubits", "quantum"),
    ("Predicting protein folding with coevolution data", "biology"),
    ("Central bank interest rates and inflation expectations", "economics"),
    ("Soil erosion under heavy rainfall on hill slopes", "geology"),
]


def test_a_paraphrase_finds_by_meaning_what_its_words_miss(engine, encoder):
    records = [
        Record(
            id=f"topic.{n}",
            title=title,
            abstract=f"A study in {field}.",
            authors=("A. Author",),
            year=2020,
            categories=("cs.LG",),
            source="test",
        )
        for n, (title, field) in enumerate(TOPICS)
    ]
    with open_backend(engine.new_location()) as backend:
        backend.rebuild(records, vectors=True)
        # No word in common with the first record (stop words aside).
        request = SearchRequest(q="car accident injuries protection")
        vector = encoder.embed_query(request.q)
        assert backend.search(replace(request, mode="lexical")).total == 0
        for mode in ("semantic", "hybrid"):
            result = backend.search(replace(request, mode=mode), vector)
            assert hit_ids(result)[0] == "topic.0"
            assert result.added_by_meaning == result.total  # none has the words
            # The other topics are too far from the query for meaning to add them.
            assert result.total < len(records)


def test_hybrid_highlights_the_query_words(vector_backend, encoder):
    request = SearchRequest(q="neutrino oscillations", mode="hybrid", per_page=20)
    result = vector_backend.search(request, encoder.embed_query(request.q))
    marks = [
        word.lower()
        for hit in result.hits
        for text in hit.highlights.values()
        for word in re.findall(r"<mark>(.*?)</mark>", text)
    ]
    assert any(word.startswith("neutrino") for word in marks)
    assert all(word.startswith(("neutrino", "oscillat")) for word in marks)  # stems


def test_pages_of_hybrid_results_follow_one_order(vector_backend, encoder):
    request = SearchRequest(q="magnetic field", mode="hybrid", per_page=7)
    vector = encoder.embed_query(request.q)
    whole = every_hit(vector_backend, request, vector)
    paged: list[str] = []
    for page in range(1, vector_backend.search(request, vector).pages + 1):
        paged.extend(hit_ids(vector_backend.search(replace(request, page=page), vector)))
    assert paged == whole


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_query_of_every_record_is_listed_as_in_lexical_mode(vector_backend, kaggle_records, mode):
    service = SearchService(vector_backend)
    result = service.search("*", mode=mode, per_page=MAX_PER_PAGE)
    assert result.mode == "lexical"
    assert result.total == len(kaggle_records)
    lexical = service.search("*", mode="lexical", per_page=MAX_PER_PAGE)
    assert hit_ids(result) == hit_ids(lexical)


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_vector_still_being_embedded_gives_the_answer_of_the_vector(
    vector_backend, encoder, mode
):
    # The service hands engines a Future of the query's vector (embedded beside the search).
    request = SearchRequest(q="spin glasses", mode=mode, filters={"year": (2007, 2008)})
    vector = encoder.embed_query(request.q)
    pending: Future[np.ndarray] = Future()
    threading.Timer(0.05, pending.set_result, (vector,)).start()
    waited = vector_backend.search(request, pending)
    assert replace(waited, took_ms=0) == replace(vector_backend.search(request, vector), took_ms=0)


def test_a_failed_embedding_fails_the_search_with_its_error(vector_backend):
    failed: Future[np.ndarray] = Future()
    failed.set_exception(ModelUnavailable("the embedding model is not installed"))
    with pytest.raises(ModelUnavailable):
        vector_backend.search(SearchRequest(q="spin glasses", mode="hybrid"), failed)


def test_similar_records_are_the_nearest_vectors(vector_backend, kaggle_records, record_vectors):
    record = kaggle_records[17]
    own = record_vectors[record.id].astype(np.int32)
    dots = {
        r.id: int(record_vectors[r.id].astype(np.int32) @ own)
        for r in kaggle_records
        if r.id != record.id
    }
    expected = sorted(dots, key=lambda i: -dots[i])[:5]
    answered = [hit.record.id for hit in vector_backend.similar(record.id, 5)]
    assert [dots[i] for i in answered] == [dots[i] for i in expected]


def test_writes_embed_what_they_add(engine, encoder, kaggle_records):
    records = list(kaggle_records[:40])
    with open_backend(engine.new_location()) as backend:
        backend.rebuild(records, vectors=True)
        added = Record(
            id="added.00001",
            title="Habitable exoplanets around red dwarf stars",
            abstract="We model the climate of rocky planets in the habitable zone of M dwarfs.",
            authors=("A. Writer",),
            year=2024,
            categories=("astro-ph.EP",),
            source="api",
        )
        backend.write(upserts=[added], deletes=[records[0].id])
        assert backend.vector_model() == encoder.fingerprint
        request = SearchRequest(q="planets that could host life", mode="semantic", per_page=100)
        ids = hit_ids(backend.search(request, encoder.embed_query(request.q)))
        assert ids[0] == "added.00001"
        assert records[0].id not in ids


def test_an_index_without_vectors_serves_lexical_search(engine, kaggle_records):
    with open_backend(engine.new_location()) as backend:
        backend.rebuild(list(kaggle_records[:20]))
        assert backend.vector_model() is None
        service = SearchService(backend)
        assert service.search("galaxy").mode == "lexical"
        with pytest.raises(ModeUnavailable) as raised:
            service.search("galaxy", mode="hybrid")
        assert raised.value.details["parameter"] == "mode"
        # Records written later get no vectors either: the index stays lexical.
        backend.write(upserts=[replace(kaggle_records[30])])
        assert backend.vector_model() is None


def test_the_service_defaults_to_hybrid_where_there_are_vectors(vector_backend):
    service = SearchService(vector_backend)
    assert service.search("dark matter").mode == "hybrid"
    assert service.search("").mode == "lexical"  # no words: newest first, no meaning to rank
    assert service.search("dark matter", mode="lexical").mode == "lexical"
    # Only the records near enough: far fewer than SEMANTIC_DEPTH of 200 on other subjects.
    assert 0 < service.search("dark matter", mode="semantic").total < SEMANTIC_DEPTH
