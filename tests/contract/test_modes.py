"""Lexical, hybrid and semantic search on every engine, against a plain-Python model.

The model (searchsvc/hybrid.py's rules): semantic returns the SEMANTIC_DEPTH records nearest
the query vector among those passing the filters; hybrid returns those plus the lexical
matches passing the filters; total and facet counts are the lexical model's
(reference.expected_total / expected_facets) over that union. The nearest records are worked
out here from the records' own vectors (the encoder run on them directly, the dot products in
numpy), the lexical matches taken from the engine's lexical mode (tested on its own elsewhere).
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
from searchsvc.embeddings import quantise, shared_encoder
from searchsvc.errors import ModelUnavailable, ModeUnavailable
from searchsvc.hybrid import SEMANTIC_DEPTH
from searchsvc.query import MAX_PER_PAGE, SearchRequest
from searchsvc.records import Record
from searchsvc.service import SearchService
from tests.contract.reference import (
    answered_facets,
    expected_facets,
    expected_total,
    hit_ids,
    in_year_bounds,
    passes_filters,
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
    """The model's nearest records passing the filters, nearest first, and whether the cut at
    SEMANTIC_DEPTH falls between two different scores (else any of the tied may be in)."""
    query = quantise(shared_encoder().embed_query(request.q)).astype(np.int32)
    passing = [r for r in records if in_year_bounds(r, request) and passes_filters(r, request)]
    dots = {r.id: int(vectors[r.id].astype(np.int32) @ query) for r in passing}
    ranked = sorted(dots, key=lambda record_id: -dots[record_id])
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
def test_semantic_returns_the_nearest_records_passing_the_filters(
    vector_backend, encoder, kaggle_records, record_vectors, request_
):
    request = replace(request_, mode="semantic")
    vector = encoder.embed_query(request.q)
    expected, clean_cut = nearest_ids(encoder, kaggle_records, record_vectors, request)
    result = vector_backend.search(request, vector)
    assert result.mode == "semantic"
    ids = every_hit(vector_backend, request, vector)
    assert len(ids) == len(set(ids)) == result.total == len(expected)
    if clean_cut:
        assert set(ids) == set(expected)
    # Nearest first: the engine's order has the model's scores in descending order.
    query = quantise(vector).astype(np.int32)
    dots = [int(record_vectors[i].astype(np.int32) @ query) for i in ids]
    assert all(a >= b - 300 for a, b in itertools.pairwise(dots))  # ~0.02 cosine
    by_id = {r.id: r for r in kaggle_records}
    assert answered_facets(result) == expected_facets([by_id[i] for i in ids], request)


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: r.q)
def test_hybrid_returns_the_lexical_matches_and_the_nearest_records(
    vector_backend, encoder, kaggle_records, record_vectors, request_
):
    request = replace(request_, mode="hybrid")
    vector = encoder.embed_query(request.q)
    nearest, clean_cut = nearest_ids(encoder, kaggle_records, record_vectors, request)
    lexical = lexical_matches(vector_backend, request)
    by_id = {r.id: r for r in kaggle_records}
    union = [by_id[i] for i in sorted(lexical | set(nearest))]
    result = vector_backend.search(request, vector)
    assert result.mode == "hybrid"
    ids = every_hit(vector_backend, request, vector)
    assert len(ids) == len(set(ids)) == result.total == expected_total(union, request)
    if clean_cut:
        assert set(ids) == {r.id for r in union if passes_filters(r, request)} - {
            r.id for r in union if not in_year_bounds(r, request)
        }
        assert answered_facets(result) == expected_facets(union, request)


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
            assert result.total == len(records)  # fewer records than SEMANTIC_DEPTH


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
def test_a_query_of_every_record_is_listed_as_in_lexical_mode(
    vector_backend, encoder, kaggle_records, mode
):
    request = SearchRequest(q="*", mode=mode, per_page=MAX_PER_PAGE)
    result = vector_backend.search(request, encoder.embed_query("*"))
    assert result.mode == "lexical"
    assert result.total == len(kaggle_records)
    lexical = vector_backend.search(replace(request, mode="lexical"))
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
        assert len(ids) == 40


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
    assert service.search("dark matter", mode="semantic").total == SEMANTIC_DEPTH
