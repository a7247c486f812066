"""The exact scan's choice of the nearest records (accel/vector_table.py): the `count` allowed
documents with vectors and the highest cosines, ties by document number, whatever the segments,
the filters and the ties; and `best_positions` (top_k.py), the selection under it."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh.accel.top_k import best_positions
from searchsvc.backends.whoosh.accel.vector_table import SegmentVectors, VectorTable
from searchsvc.embeddings.scan import cosines

DIMENSIONS = 384


def expected_nearest(vectors, present, allowed, query, count):
    scores = cosines(vectors, query)
    candidates = [d for d in range(len(vectors)) if present[d] and allowed[d]]
    ranked = sorted(candidates, key=lambda d: (-scores[d], d))[:count]
    return ranked, [scores[d] for d in ranked]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(0, 700),
    distinct=st.sampled_from([1, 3, 40, 10_000]),  # few distinct vectors: many tied cosines
    cuts=st.lists(st.floats(0, 1), max_size=3),
    allowed_share=st.sampled_from([0.0, 0.01, 0.3, 0.6, 1.0]),
    count=st.sampled_from([1, 10, 100]),
    seed=st.integers(0, 2**32 - 1),
)
def test_nearest_is_the_exact_ranking_of_the_allowed_documents(
    size, distinct, cuts, allowed_share, count, seed
):
    rng = np.random.default_rng(seed)
    kinds = rng.integers(-127, 128, (min(distinct, max(size, 1)), DIMENSIONS), dtype=np.int8)
    vectors = kinds[rng.integers(0, len(kinds), size)] if size else kinds[:0]
    present = rng.random(size) < 0.95
    vectors[~present] = 0  # documents without a vector hold a zero row
    allowed = rng.random(size) < allowed_share
    bounds = sorted({0, size, *(int(c * size) for c in cuts)})
    segments = tuple(
        SegmentVectors(start, end - start, None)
        for start, end in itertools.pairwise(bounds)
        if end > start
    )
    table = VectorTable(vectors, present, segments)
    query = rng.standard_normal(DIMENSIONS).astype(np.float32)
    query /= np.linalg.norm(query)

    docnums, scores = table.nearest(query, allowed, count)

    want_docs, want_scores = expected_nearest(vectors, present, allowed, query, count)
    assert docnums.tolist() == want_docs
    assert scores.tolist() == want_scores


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.integers(-5, 5), max_size=400).map(
        lambda values: np.array(values, dtype=np.float32)
    ),
    count=st.integers(1, 120),
)
def test_best_positions_are_every_score_at_least_the_count_th_best(scores, count):
    positions = best_positions(scores, count)

    if len(scores) <= count:
        assert positions.tolist() == list(range(len(scores)))
        return
    threshold = np.sort(scores)[::-1][count - 1]
    assert positions.tolist() == np.flatnonzero(scores >= threshold).tolist()
