"""The did-you-mean rule both engines follow (searchsvc/backends/shared/spelling.py)."""

from __future__ import annotations

import pytest

from searchsvc.backends.shared.spelling import (
    best_correction,
    correctable,
    corrected_query,
    max_edits,
)


@pytest.mark.parametrize(
    ("word", "edits"),
    [("io", 0), ("tlb", 0), ("gpus", 1), ("clustr", 1), ("procesor", 2), ("algoritms", 2)],
)
def test_short_words_may_be_one_edit_off_long_ones_two_the_shortest_none(word, edits):
    assert max_edits(word) == edits


def test_numbers_acronym_length_words_and_non_words_are_not_correctable():
    for word in ("2023", "tlb", "x86-64", "a" * 33):
        assert not correctable(word), word
    assert correctable("schedulng")


def test_the_nearest_candidate_wins_then_the_most_frequent():
    assert best_correction("clustr", {"cluster": 3, "clusters": 50}) == "cluster"
    assert best_correction("netwrk", {"network": 3, "newark": 1}) == "network"
    assert best_correction("schedulng", {"scheduling": 10, "schedule": 90}) == "scheduling"


def test_swapped_neighbouring_letters_are_one_edit():
    assert best_correction("memroy", {"memory": 4}) == "memory"


def test_a_candidate_beyond_reach_or_in_no_record_is_never_proposed():
    assert best_correction("tlb", {"two": 100, "tab": 5}) is None
    assert best_correction("fusion", {"fashion": 40}) is None  # two edits in six letters
    assert best_correction("clustr", {"cluster": 0}) is None
    assert best_correction("cluster", {"cluster": 9}) is None


def test_corrected_query_replaces_only_the_unknown_words_and_keeps_the_rest():
    text = 'title:schedulng AND "deep learning" OR tlb'
    unknown = [(6, 15), (40, 43)]
    corrections = {"schedulng": "scheduling", "tlb": "two"}
    assert corrected_query(text, unknown, corrections.get) == (
        'title:scheduling AND "deep learning" OR tlb'
    )
    assert corrected_query("tlb 2023", [(0, 3), (4, 8)], lambda word: "x") is None
