"""The exact int8 scan (embeddings/scan.py): every cosine equals integer arithmetic, whatever the
rows' layout in memory."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from searchsvc.embeddings.encoder import QUANTISATION_SCALE, quantise
from searchsvc.embeddings.scan import cosines

DIMENSIONS = 384


def expected(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    dots = vectors.astype(np.int64) @ quantise(query).astype(np.int64)
    return dots.astype(np.float32) / np.float32(QUANTISATION_SCALE * QUANTISATION_SCALE)


@settings(max_examples=40, deadline=None)
@given(
    vectors=hnp.arrays(
        np.int8,
        st.tuples(st.integers(1, 64), st.just(DIMENSIONS)),
        elements=st.integers(-127, 127),
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_cosines_are_the_exact_integer_dot_products_scaled(vectors, seed):
    query = np.random.default_rng(seed).normal(size=DIMENSIONS).astype(np.float32)
    query /= np.linalg.norm(query)

    got = cosines(vectors, query)

    assert got.dtype == np.float32 and got.shape == (len(vectors),)
    assert np.array_equal(got, expected(vectors, query))
    # Rows taken out of order, or every other one (not contiguous): the same cosines.
    rows = np.arange(len(vectors))[::-1]
    assert np.array_equal(cosines(vectors[rows], query), got[rows])
    assert np.array_equal(cosines(vectors[::2], query), got[::2])


def test_the_largest_products_stay_exact_and_no_rows_give_no_cosines():
    query = np.full(DIMENSIONS, 1 / np.sqrt(DIMENSIONS), dtype=np.float32)
    vectors = np.array([[127] * DIMENSIONS, [-127] * DIMENSIONS], dtype=np.int8)

    got = cosines(vectors, query)

    assert np.array_equal(got, expected(vectors, query))
    assert got[0] == -got[1] > 0
    assert cosines(vectors[:0], query).shape == (0,)
