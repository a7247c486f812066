"""The Whoosh engine's facet counting (FacetTable, ValueColumn and its shortcuts) against slow
exact computations: Whoosh's own full search counted in plain Python, and plain counting."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh.accel import value_column as facets
from searchsvc.backends.whoosh.accel.value_column import ValueColumn
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.backends.whoosh.search.execute import compile_for
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.texts import fold
from tests.contract.reference import facet_values, filter_keys
from tests.support import FIXTURE_RECORDS, draw_seed_request, examples


@pytest.fixture(scope="module")
def backend(fixture_index):
    with WhooshBackend.open(fixture_index) as backend:
        yield backend


@pytest.fixture(scope="module")
def seed_whoosh(seed_index):
    with WhooshBackend.open(seed_index) as backend:
        yield backend


def slow_search(backend, request):
    """Total and facets by scoring and collecting every hit with Whoosh's own search and
    counting in plain Python (subject facets: the test model's taxonomy rules)."""
    with backend._searchers.view() as view:
        parsed = compile_for(view, request.tree, request.fields)
        results = view.searcher.search(parsed.query, limit=None)
        records = [from_stored(view.searcher.stored_fields(d)) for d in results.docs()]

    def keep(record, skip=None):
        if request.year_from is not None and (record.year or 0) < request.year_from:
            return False
        if request.year_to is not None and (record.year or 9999) > request.year_to:
            return False
        checks = {
            "author": set(record.authors),
            "category": filter_keys(record, "category"),
            "subject": filter_keys(record, "subject"),
            "year": {str(record.year)} if record.year else set(),
        }
        return all(
            checks[facet] & set(request.selected(facet))
            for facet in checks
            if facet != skip and request.selected(facet)
        )

    counted = {}
    for facet in request.facets:
        kept = [record for record in records if keep(record, skip=facet)]
        counter = Counter(value for record in kept for value in facet_values(record, facet))
        ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        top = [(value, count) for value, count in ranked[: request.facet_size]]
        # Then the selected values the top N leaves out, with the records their filter selects.
        listed = {value for value, _ in top}
        left_out = [
            (value, sum(value in filter_keys(record, facet) for record in kept))
            for value in request.selected(facet)
            if value not in listed
        ]
        counted[facet] = top + sorted(left_out, key=lambda item: (-item[1], item[0]))
    return sum(keep(record) for record in records), counted


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_facet_counts_equal_whooshs_full_search_counted_in_python(
    seed_whoosh, seed_records, seed_vocabulary, data
):
    request = draw_seed_request(data, seed_records, seed_vocabulary)
    result = seed_whoosh.search(request)
    total, counted = slow_search(seed_whoosh, request)
    assert result.total == total
    for facet in request.facets:
        assert [(v.value, v.count) for v in result.facets[facet]] == counted[facet]


def test_fixture_facets_equal_whooshs_full_search_for_every_single_filter(backend):
    for record in FIXTURE_RECORDS:
        for request in (
            SearchRequest.from_params(author=record.authors[:1]),
            SearchRequest.from_params(q="learning", category=record.categories[:1]),
        ):
            total, counted = slow_search(backend, request)
            result = backend.search(request)
            assert result.total == total
            assert {
                f: [(v.value, v.count) for v in vs] for f, vs in result.facets.items()
            } == counted


# -- the counting and top-N shortcuts against plain Python -------------------------------------
_VALUE_LISTS = st.lists(
    st.lists(st.sampled_from("abcdefghij"), max_size=4, unique=True), max_size=60
)


def _draw_mask(data, count: int) -> np.ndarray:
    """Which of `count` documents match, drawn."""
    return np.array(data.draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype=bool)


@settings(max_examples=examples(300), deadline=None)
@given(doc_values=_VALUE_LISTS, data=st.data())
def test_value_counts_and_top_values_equal_plain_counting(doc_values, data):
    column = ValueColumn.from_pairs(list(enumerate(doc_values)))
    mask = _draw_mask(data, len(doc_values))
    size = data.draw(st.integers(1, 12))
    expected = Counter(v for doc, values in enumerate(doc_values) if mask[doc] for v in values)
    # Both ways of counting: over the matched ranges (fraction 1: unless every document
    # matches) and over every entry (a huge fraction).
    fraction = data.draw(st.sampled_from([1, 10**9]))
    saved, facets._SPARSE_FRACTION = facets._SPARSE_FRACTION, fraction
    try:
        value_counts = column.counts(mask)
    finally:
        facets._SPARSE_FRACTION = saved
    assert {column.values[i]: int(n) for i, n in enumerate(value_counts) if n} == dict(expected)
    ranked = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:size]
    assert [(v.value, v.count) for v in column.top(value_counts, size)] == ranked


# Skewed value lists (a few values on most documents, a long tail), as authors and categories are.
_SKEWED_VALUES = st.lists(
    st.lists(
        st.one_of(
            st.sampled_from("ab"),
            st.sampled_from("cdefg"),
            st.text("hijklmnopqrstuvwxyz", min_size=1, max_size=2),
        ),
        max_size=5,
    ),
    max_size=120,
)


@settings(max_examples=examples(300), deadline=None)
@given(doc_values=_SKEWED_VALUES, data=st.data())
def test_top_values_bounded_by_totals_equal_plain_counting(doc_values, data):
    column = ValueColumn.from_pairs(list(enumerate(doc_values)))
    mask = _draw_mask(data, len(doc_values))
    # Matches that avoid the most common values make the largest totals the worst guide.
    avoided = data.draw(st.lists(st.sampled_from("abcdefg"), max_size=4))
    mask &= np.array([not set(values) & set(avoided) for values in doc_values], dtype=bool)
    size = data.draw(st.integers(1, 40))
    selected = data.draw(st.lists(st.sampled_from("abcdh"), max_size=2))
    expected = Counter(v for doc, values in enumerate(doc_values) if mask[doc] for v in values)
    ranked = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:size]
    # A huge sparse fraction: always the pass by value, which stops once no value left can rank;
    # a first batch of one value makes it go round more often.
    # Holding only a few of the most frequent values grouped leaves some undecided (counted
    # then over every value).
    first = data.draw(st.sampled_from([1, 3, 32]))
    held = data.draw(st.sampled_from([1, 4, 65535]))
    saved = facets._SPARSE_FRACTION, facets._FIRST_VALUES, facets._RANKED_VALUES
    facets._SPARSE_FRACTION, facets._FIRST_VALUES, facets._RANKED_VALUES = 10**9, first, held
    try:
        top = column.top_values(mask, size, selected)
    finally:
        facets._SPARSE_FRACTION, facets._FIRST_VALUES, facets._RANKED_VALUES = saved
    assert [(v.value, v.count) for v in top] == ranked
    assert [v.selected for v in top] == [v.value in selected for v in top]
    assert column.top_values(mask, size, selected) == top  # and the sparse way agrees


def test_top_values_counts_only_the_values_that_can_rank():
    # 40 values on every document, then 2,000 values on one document each: with every
    # document matched, the top 10 is decided before the one-document values are counted.
    doc_values = [[f"common{i:02}" for i in range(40)] for _ in range(50)]
    doc_values += [[f"rare{i:04}"] for i in range(2000)]
    column = ValueColumn.from_pairs(list(enumerate(doc_values)))
    mask = np.ones(len(doc_values), dtype=bool)
    top = column.top_values(mask, 10)
    assert [(v.value, v.count) for v in top] == [(f"common{i:02}", 50) for i in range(10)]
    ordinals, _ = column._by_total.counts_that_can_rank(mask, 10)
    assert 10 <= len(ordinals) < 100


_NAME_PIECES = st.sampled_from(
    ["Ada", "Lovelace", "C.", "Balázs", "Ève", "o'Neil", "Jean-Luc", "x_y", "__b", " ", "-", ".",
     "'", "ß", "İ", "ﬁ", "Ω", "\t", "9", "a.b"]
)  # fmt: skip


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(_NAME_PIECES, max_size=6).map("".join), max_size=40))
def test_word_start_index_is_every_folded_value_from_each_word_start(values):
    # What _index_word_starts built before it worked on all values at once: sorted pairs.
    pairs = sorted(
        (folded[match.start() :], ordinal)
        for ordinal, value in enumerate(values)
        for folded in (fold(value),)
        for match in facets._WORD_START.finditer(folded)
    )
    column = SimpleNamespace(values=values, search_texts=None)
    ValueColumn._index_word_starts(column)
    assert column._word_starts == [text for text, _ in pairs]
    assert column._word_start_values.tolist() == [ordinal for _, ordinal in pairs]
