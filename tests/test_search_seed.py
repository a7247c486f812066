"""Acceptance on real data: the seed corpus and the 200-record arXiv sample."""

from __future__ import annotations

import pytest

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.query import SearchRequest
from tests.support import build_index


@pytest.fixture(scope="module")
def backend(seed_index):
    with WhooshBackend(seed_index) as backend:
        yield backend


def titles(result):
    return [hit.record.title for hit in result.hits]


def test_scheduling_ranks_shockwave_and_cassini_in_the_top_three(backend):
    top = titles(backend.search(SearchRequest(q="scheduling")))[:3]
    assert any(title.startswith("Shockwave:") for title in top)
    assert any(title.startswith("CASSINI:") for title in top)


def test_category_prefix_finds_the_four_networking_records(backend):
    assert backend.search(SearchRequest(q="category:cs.NI")).total == 4


def test_a_phrase_finds_exactly_one_record(backend):
    assert backend.search(SearchRequest(q='"learned caches"')).total == 1


def test_filtering_a_category_leaves_the_other_categories_counted(backend):
    result = backend.search(SearchRequest.from_params(category=("cs.DC",)))
    counts = {value.value: value.count for value in result.facets["category"]}
    assert counts["cs.LG"] == 11


def test_author_filter_with_a_start_year(backend):
    result = backend.search(SearchRequest.from_params(author=("Aditya Akella",), year_from=2023))
    assert result.total == 11


def test_a_misspelt_word_gets_a_suggestion(backend):
    assert backend.search(SearchRequest(q="schedulng")).suggestion == "scheduling"


def test_the_author_view_of_the_seed_author(backend):
    view = backend.author("Aditya Akella")
    assert view.total >= 11
    years = [record.year for record in view.records]
    assert years == sorted(years, reverse=True)


def test_an_unaccented_name_finds_the_accented_author(kaggle_sample, tmp_path):
    from searchsvc.sources import read_records

    records = list(read_records([kaggle_sample]))
    assert len(records) == 200
    with WhooshBackend(build_index(tmp_path, records)) as backend:
        result = backend.search(SearchRequest(q="balazs"))
        assert any("C. Balázs" in hit.record.authors for hit in result.hits)
