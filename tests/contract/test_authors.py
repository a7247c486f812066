"""The author view: an author's records newest first, with counts per year and category and
the coauthors, paged; names matched case- and accent-insensitively."""

from __future__ import annotations

from collections import Counter

import pytest

from searchsvc.domain.errors import InvalidRequest, RecordNotFound
from searchsvc.domain.query import FacetValue


def test_author_view_lists_records_newest_first_with_counts(fixture_backend):
    view = fixture_backend.author("aditya akella")
    assert view.name == "Aditya Akella" and view.total == 2
    assert [r.id for r in view.records] == ["2201.00002", "2101.00003"]
    assert view.years == (FacetValue("2022", 1), FacetValue("2021", 1))
    assert {v.value: v.count for v in view.categories} == {"cs.LG": 1, "cs.NI": 1, "cs.DC": 1}
    assert view.coauthors == (FacetValue("Shivaram Venkataraman", 1),)


def test_author_names_match_without_case_or_accents(fixture_backend):
    view = fixture_backend.author("c. balazs")
    assert view.name == "C. Balázs" and view.total == 1
    assert [r.id for r in view.records] == ["0704.0001"]
    assert view.coauthors == (FacetValue("E. L. Berger", 1),)


def test_author_view_pages_the_records(fixture_backend):
    second = fixture_backend.author("Aditya Akella", page=2, per_page=1)
    assert [r.id for r in second.records] == ["2101.00003"]
    assert second.total == 2 and second.pages == 2 and second.page == 2
    assert fixture_backend.author("Aditya Akella", page=3, per_page=1).records == ()


def test_an_unknown_author_is_not_found(fixture_backend):
    with pytest.raises(RecordNotFound):
        fixture_backend.author("Nobody At All")
    with pytest.raises(RecordNotFound):
        fixture_backend.author("Akella")  # a part of a name is not the name


def test_author_view_paging_is_validated(fixture_backend):
    with pytest.raises(InvalidRequest):
        fixture_backend.author("Aditya Akella", per_page=0)
    with pytest.raises(InvalidRequest):
        fixture_backend.author("Aditya Akella", page=0)


def test_the_seed_author_view_equals_plain_counting(seed_backend, seed_records):
    mine = [r for r in seed_records if "Aditya Akella" in r.authors]
    view = seed_backend.author("Aditya Akella", per_page=100)
    assert view.total == len(mine) == 18
    years = [record.year for record in view.records]
    assert years == sorted(years, reverse=True)
    assert {r.id for r in view.records} == {r.id for r in mine}
    assert {v.value: v.count for v in view.years} == dict(Counter(str(r.year) for r in mine))
    assert {v.value: v.count for v in view.categories} == dict(
        Counter(c for r in mine for c in r.categories)
    )
    assert {v.value: v.count for v in view.coauthors} == dict(
        Counter(a for r in mine for a in r.authors if a != "Aditya Akella")
    )


def test_author_counts_cover_every_record_not_only_the_page(seed_backend):
    whole = seed_backend.author("Aditya Akella", per_page=100)
    paged = seed_backend.author("Aditya Akella", page=2, per_page=5)
    assert len(paged.records) == 5 and paged.total == whole.total
    assert [r.id for r in paged.records] == [r.id for r in whole.records[5:10]]
    assert (paged.years, paged.categories, paged.coauthors) == (
        whole.years,
        whole.categories,
        whole.coauthors,
    )
