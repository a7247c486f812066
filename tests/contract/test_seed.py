"""Acceptance on real data: the seed corpus and the 200-record arXiv sample, with exact totals."""

from __future__ import annotations

from searchsvc.backends import open_backend
from searchsvc.domain.query import SearchRequest
from tests.support import build_index


def titles(result):
    return [hit.record.title for hit in result.hits]


def test_the_seed_corpus_is_33_records_browsed_newest_first(seed_backend, seed_records):
    result = seed_backend.search(SearchRequest(per_page=100))
    assert result.total == 33 and len(result.hits) == 33
    years = [hit.record.year for hit in result.hits]
    assert years == sorted(years, reverse=True)
    assert {hit.record.id for hit in result.hits} == {r.id for r in seed_records}


def test_scheduling_ranks_shockwave_and_cassini_in_the_top_three(seed_backend):
    top = titles(seed_backend.search(SearchRequest(q="scheduling")))[:3]
    assert any(title.startswith("Shockwave:") for title in top)
    assert any(title.startswith("CASSINI:") for title in top)


def test_category_prefix_finds_the_four_networking_records(seed_backend, seed_records):
    result = seed_backend.search(SearchRequest(q="category:cs.NI", per_page=100))
    assert result.total == 4
    assert {hit.record.id for hit in result.hits} == {
        r.id for r in seed_records if "cs.NI" in r.categories
    }


def test_a_phrase_finds_exactly_one_record(seed_backend):
    assert seed_backend.search(SearchRequest(q='"learned caches"')).total == 1


def test_filtering_a_category_leaves_the_other_categories_counted(seed_backend):
    result = seed_backend.search(SearchRequest.from_params(category=("cs.DC",)))
    counts = {value.value: value.count for value in result.facets["category"]}
    assert counts["cs.LG"] == 11


def test_author_filter_with_a_start_year(seed_backend, seed_records):
    result = seed_backend.search(
        SearchRequest.from_params(author=("Aditya Akella",), year_from=2023)
    )
    assert result.total == 11
    assert result.total == sum(
        1 for r in seed_records if "Aditya Akella" in r.authors and (r.year or 0) >= 2023
    )


def test_a_misspelt_word_gets_a_suggestion(seed_backend):
    assert seed_backend.search(SearchRequest(q="schedulng")).suggestion == "scheduling"


def test_the_author_view_of_the_seed_author(seed_backend):
    view = seed_backend.author("Aditya Akella")
    assert view.total == 18
    years = [record.year for record in view.records]
    assert years == sorted(years, reverse=True)


def test_an_unaccented_name_finds_the_accented_author(kaggle_sample, engine):
    from searchsvc.sources import read_records

    records = list(read_records([kaggle_sample]))
    assert len(records) == 200
    with open_backend(build_index(engine.new_location(), records)) as backend:
        assert backend.search(SearchRequest()).total == 200
        result = backend.search(SearchRequest(q="balazs"))
        assert any("C. Balázs" in hit.record.authors for hit in result.hits)
