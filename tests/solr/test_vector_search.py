"""The Solr engine's vector pieces that need no cluster: cosines read back from Lucene's scores
exactly as the Whoosh backend computes them, and id lists Solr parses as sent.
(tests/contract/test_modes.py runs the modes themselves on a cluster.)"""

from __future__ import annotations

import numpy as np
import orjson

from searchsvc.backends.solr.compile import NOTHING, id_set
from searchsvc.backends.solr.vector_search import (
    cosine_of,
    dot_product_of,
    lexical_ranking,
    lucene_score,
)
from searchsvc.embeddings import quantise
from searchsvc.embeddings.scan import cosines


def as_solr_writes_it(score: np.float32) -> float:
    """A float32 score through Solr's JSON answer (the shortest digits that give it back)."""
    return orjson.loads(str(score))


def test_every_dot_product_of_unit_int8_vectors_is_read_back_exactly():
    # |dot| of two quantised unit vectors stays within 127² and a little rounding.
    dots = range(-17_000, 17_001)
    assert all(dot_product_of(as_solr_writes_it(lucene_score(d))) == d for d in dots)


def test_cosines_from_scores_are_those_the_whoosh_backend_computes():
    rng = np.random.default_rng(7)
    unit = rng.normal(size=(50, 384)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    vectors = quantise(unit)
    query = unit[0]
    query_int8 = quantise(query).astype(np.int32)
    scores = [lucene_score(int(row.astype(np.int32) @ query_int8)) for row in vectors]
    read_back = [cosine_of(as_solr_writes_it(score)) for score in scores]
    assert read_back == [float(c) for c in cosines(vectors, query)]


def test_a_record_without_a_vector_has_cosine_zero():
    # vectorSimilarity() answers 0 for a document without a vector; a real score is near 0.5.
    assert cosine_of(0.0) == 0.0


def test_id_lists_use_a_separator_no_id_holds():
    query, params = id_set(["a,b", "c|d", "e"], "page")
    assert query == "{!terms f=id separator=$page_sep v=$page}"
    values = dict(params)
    assert values["page"].split(values["page_sep"]) == ["a,b", "c|d", "e"]
    assert id_set([], "page") == (NOTHING, [])


def test_nearest_records_the_words_miss_are_not_lexical_matches():
    documents = [
        {"id": "both", "score": 2.5, "cosine": 0.9},
        {"id": "words", "score": 1.5, "cosine": float(lucene_score(8_000))},
        {"id": "meaning", "score": 0.0, "cosine": 0.8},
    ]
    by_bm25, cosines_of = lexical_ranking(documents, {"both": 0.5, "meaning": 0.4})
    assert by_bm25 == [("both", 2.5), ("words", 1.5)]
    # The nearest keep the cosines of the knn search; the others get theirs from the function.
    assert cosines_of == {"both": 0.5, "meaning": 0.4, "words": cosine_of(lucene_score(8_000))}
