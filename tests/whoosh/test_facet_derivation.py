"""Derived facet columns drop repeated (document, value) entries in linear time, with the same
result as sorting every pair (value_column._first_of_each_pair; issue 20's cold start)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh.accel.value_column import _SHORT_RUN, _first_of_each_pair


def by_sorting(docs: np.ndarray, values: np.ndarray) -> tuple[list[int], list[int]]:
    seen, kept_docs, kept_values = set(), [], []
    for doc, value in zip(docs.tolist(), values.tolist(), strict=True):
        if (doc, value) not in seen:
            seen.add((doc, value))
            kept_docs.append(doc)
            kept_values.append(value)
    return kept_docs, kept_values


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.lists(st.integers(0, 6), max_size=_SHORT_RUN + 4)),
        max_size=40,
    ),
    st.booleans(),
)
def test_repeats_are_dropped_as_a_set_of_pairs_would(runs, in_order):
    if in_order:
        runs = sorted(runs, key=lambda run: run[0])
    docs = np.array([doc for doc, values in runs for _ in values], dtype=np.int32)
    values = np.array([value for _, values in runs for value in values], dtype=np.int32)
    kept_docs, kept_values = _first_of_each_pair(docs, values)
    assert (kept_docs.tolist(), kept_values.tolist()) == by_sorting(docs, values)
