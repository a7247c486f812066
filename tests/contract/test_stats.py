"""Stats: exact document and facet value counts, cardinalities, build time and version."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from searchsvc.domain.errors import IndexUnavailable
from searchsvc.domain.records import Record
from tests.support import FIXTURE_RECORDS


def counts(values) -> list[tuple[str, int]]:
    return [(v.value, v.count) for v in values]


def test_stats_count_documents_and_facet_values_exactly(fixture_backend):
    stats = fixture_backend.stats()

    assert stats.documents == 5
    assert counts(stats.facets["author"]) == [
        ("Aditya Akella", 2),
        ("Shivaram Venkataraman", 2),
        ("Ada Lovelace", 1),  # ties are broken by value
        ("C. Balázs", 1),
        ("E. L. Berger", 1),
        ("Mallory O'Brien", 1),
    ]
    assert counts(stats.facets["category"]) == [
        ("cs.DC", 2),
        ("cs.LG", 2),
        ("cs.CR", 1),
        ("cs.NI", 1),
        ("hep-ph", 1),
    ]
    assert counts(stats.facets["year"]) == [
        (y, 1) for y in ("2007", "2020", "2021", "2022", "2023")
    ]
    assert counts(stats.facets["subject"]) == [("cs", 4), ("hep-ph", 1)]
    assert stats.cardinalities == {"author": 6, "year": 5, "category": 5, "subject": 2}


def test_stats_report_build_time_and_the_backends_version(fixture_backend):
    stats = fixture_backend.stats()

    assert stats.built_at is not None and stats.built_at.tzinfo is not None
    assert stats.version == fixture_backend.version()
    assert stats.size_bytes >= 0
    assert stats.to_dict()["documents"] == 5


def test_top_limits_each_facet_but_not_the_cardinalities(fixture_backend):
    stats = fixture_backend.stats(top=1)

    assert counts(stats.facets["author"]) == [("Aditya Akella", 2)]
    assert counts(stats.facets["category"]) == [("cs.DC", 2)]
    assert stats.cardinalities["author"] == 6


def test_seed_stats_equal_plain_counting(seed_backend, seed_records):
    stats = seed_backend.stats(top=100)

    assert stats.documents == len(seed_records) == 33
    for facet, values in (
        ("author", Counter(a for r in seed_records for a in r.authors)),
        ("category", Counter(c for r in seed_records for c in r.categories)),
        ("year", Counter(str(r.year) for r in seed_records if r.year is not None)),
    ):
        ranked = sorted(values.items(), key=lambda item: (-item[1], item[0]))
        assert counts(stats.facets[facet]) == ranked
        assert stats.cardinalities[facet] == len(values)
    assert counts(seed_backend.stats(top=3).facets["category"]) == [
        ("cs.DC", 12),
        ("cs.LG", 11),
        ("cs.NI", 4),
    ]


def test_records_without_a_year_count_in_no_year(empty_backend):
    undated = Record(id="x-1", title="Undated", authors=("Ada Lovelace",), year=None)
    empty_backend.rebuild([*FIXTURE_RECORDS[:2], undated])

    stats = empty_backend.stats()

    assert stats.documents == 3
    assert counts(stats.facets["year"]) == [("2022", 1), ("2023", 1)]
    assert counts(stats.facets["author"])[0] == ("Ada Lovelace", 2)
    assert stats.cardinalities["year"] == 2


def test_version_changes_with_an_update_and_counts_drop_replaced_values(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)
    before = empty_backend.stats()
    moved = replace(FIXTURE_RECORDS[2], categories=("cs.OS",), authors=("Grace Hopper",))

    empty_backend.upsert([moved])
    after = empty_backend.stats()

    assert after.version != before.version
    assert after.version == empty_backend.version()
    assert after.documents == 5
    assert ("cs.NI", 1) not in counts(after.facets["category"])
    assert ("cs.OS", 1) in counts(after.facets["category"])
    assert ("Aditya Akella", 1) in counts(after.facets["author"])
    assert after.cardinalities["category"] == 5  # cs.NI gone, cs.OS new
    assert after.cardinalities["author"] == 7  # Grace Hopper new


def test_counts_drop_deleted_records(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)

    empty_backend.delete(["2301.00001", "2201.00002"])
    stats = empty_backend.stats()

    assert stats.documents == 3
    assert counts(stats.facets["category"]) == [
        ("cs.CR", 1),
        ("cs.DC", 1),
        ("cs.NI", 1),
        ("hep-ph", 1),
    ]
    assert stats.cardinalities == {"author": 4, "year": 3, "category": 4, "subject": 2}


def test_stats_of_a_missing_index_is_index_unavailable(empty_backend):
    with pytest.raises(IndexUnavailable):
        empty_backend.stats()
