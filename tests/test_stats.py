"""index_stats: exact facet counts, cardinalities, version and build details of real indexes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from searchsvc.backends.whoosh.search.stats import index_stats
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.errors import IndexUnavailable
from searchsvc.indexer import update_index_from_records
from searchsvc.records import Record
from tests.support import FIXTURE_RECORDS, build_index


def counts(values) -> list[tuple[str, int]]:
    return [(v.value, v.count) for v in values]


def test_stats_count_documents_and_facet_values_exactly(fixture_index):
    stats = index_stats(fixture_index)

    assert stats.documents == 5
    assert counts(stats.facets["author"])[:3] == [
        ("Aditya Akella", 2),
        ("Shivaram Venkataraman", 2),
        ("Ada Lovelace", 1),  # ties are broken by value
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
    assert stats.cardinalities == {"author": 6, "year": 5, "category": 5}


def test_stats_report_build_details(fixture_index):
    stats = index_stats(fixture_index)

    assert stats.built_at is not None and stats.built_at.tzinfo is not None
    assert stats.version.startswith(fixture_index.live_name())
    assert stats.index_dir == str(fixture_index)
    assert stats.size_bytes > 0
    assert stats.to_dict()["documents"] == 5


def test_top_limits_each_facet_but_not_the_cardinalities(fixture_index):
    stats = index_stats(fixture_index, top=1)

    assert counts(stats.facets["author"]) == [("Aditya Akella", 2)]
    assert stats.cardinalities["author"] == 6


def test_records_without_a_year_count_in_no_year(tmp_path):
    undated = Record(id="x-1", title="Undated", authors=("Ada Lovelace",), year=None)
    directory = build_index(tmp_path / "index", [*FIXTURE_RECORDS[:2], undated])

    stats = index_stats(directory)

    assert counts(stats.facets["year"]) == [("2022", 1), ("2023", 1)]
    assert counts(stats.facets["author"])[0] == ("Ada Lovelace", 2)


def test_version_changes_with_an_update_and_counts_drop_replaced_values(tmp_path):
    directory = build_index(tmp_path / "index")
    before = index_stats(directory)
    moved = replace(FIXTURE_RECORDS[2], categories=("cs.OS",), authors=("Grace Hopper",))

    update_index_from_records([moved], directory.root)
    after = index_stats(directory)

    assert after.version != before.version
    assert after.documents == 5
    assert ("cs.NI", 1) not in counts(after.facets["category"])
    assert ("cs.OS", 1) in counts(after.facets["category"])
    assert ("Aditya Akella", 1) in counts(after.facets["author"])
    assert after.cardinalities["category"] == 5  # cs.NI gone, cs.OS new


def test_stats_of_a_missing_index_is_index_unavailable(tmp_path):
    with pytest.raises(IndexUnavailable):
        index_stats(IndexDirectory(tmp_path / "nothing"))
