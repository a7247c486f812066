"""Filters and disjunctive facet counts: exact on the fixture and seed corpora, and equal to
plain counting over the query's matches."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.query import FacetValue, SearchRequest
from tests.contract.reference import (
    answered_facets,
    counts,
    expected_facets,
    expected_total,
    hit_ids,
)
from tests.support import FIXTURE_RECORDS, draw_seed_request, examples


def total(backend, **params) -> int:
    return backend.search(SearchRequest.from_params(**params)).total


def test_filters_are_or_within_a_facet_and_and_across_facets(fixture_backend):
    assert total(fixture_backend, category=("cs.DC",)) == 2
    assert total(fixture_backend, category=("cs.DC", "hep-ph")) == 3
    assert total(fixture_backend, category=("cs.DC",), author=("Aditya Akella",)) == 1
    assert total(fixture_backend, author=("Aditya Akella", "C. Balázs")) == 3
    assert total(fixture_backend, year=(2021, 2007)) == 2
    assert total(fixture_backend, category=("cs.LG",), year=(2021, 2022)) == 1


def test_year_bounds_are_inclusive(fixture_backend):
    assert total(fixture_backend, year_from=2021, year_to=2022) == 2
    assert total(fixture_backend, year_from=2022) == 2
    assert total(fixture_backend, year_to=2007) == 1
    assert total(fixture_backend, year_from=2007, year_to=2007) == 1
    assert total(fixture_backend, year_from=2024) == 0


def test_filters_given_as_a_filters_mapping_equal_the_keyword_form(fixture_backend):
    mapped = fixture_backend.search(
        SearchRequest(q="learning", filters={"category": ("cs.DC",), "year": (2023,)})
    )
    keywords = fixture_backend.search(
        SearchRequest.from_params(q="learning", category="cs.DC", year="2023")
    )
    assert hit_ids(mapped) == hit_ids(keywords) == ["2301.00001"]
    assert mapped.facets == keywords.facets


def test_filter_values_match_case_and_accent_insensitively(fixture_backend):
    result = fixture_backend.search(
        SearchRequest.from_params(author=("c. balazs",), category=("HEP-PH",))
    )
    assert hit_ids(result) == ["0704.0001"]


def test_an_unknown_filter_value_matches_nothing(fixture_backend):
    result = fixture_backend.search(SearchRequest.from_params(author=("Nobody",)))
    assert result.total == 0 and result.hits == ()


def test_an_unknown_filter_name_or_a_non_numeric_year_is_invalid():
    with pytest.raises(InvalidRequest):
        SearchRequest(filters={"colour": ("red",)})
    with pytest.raises(InvalidRequest):
        SearchRequest.from_params(year="recent")


def test_facets_count_all_matches_and_mark_selected_values(fixture_backend):
    result = fixture_backend.search(SearchRequest(q="learning"))
    assert counts(result, "category") == {"cs.DC": 1, "cs.LG": 2}
    assert counts(result, "author") == {
        "Shivaram Venkataraman": 2,
        "Ada Lovelace": 1,
        "Aditya Akella": 1,
    }
    assert counts(result, "year") == {"2022": 1, "2023": 1}
    selected = fixture_backend.search(SearchRequest.from_params(q="learning", category=("cs.DC",)))
    assert [v for v in selected.facets["category"] if v.selected] == [FacetValue("cs.DC", 1, True)]


def test_a_facet_is_counted_without_its_own_filter(fixture_backend):
    result = fixture_backend.search(SearchRequest.from_params(category=("cs.NI",)))
    assert result.total == 1
    # cs.LG stays selectable although the cs.NI filter excludes its records
    assert result.facets["category"] == (
        FacetValue("cs.DC", 2),
        FacetValue("cs.LG", 2),
        FacetValue("cs.CR", 1),
        FacetValue("cs.NI", 1, True),
        FacetValue("hep-ph", 1),
    )
    assert counts(result, "author") == {"Aditya Akella": 1}
    assert counts(result, "year") == {"2021": 1}


def test_year_bounds_narrow_every_facet_including_year(fixture_backend):
    result = fixture_backend.search(SearchRequest.from_params(year=(2021,), year_from=2021))
    assert result.total == 1
    assert counts(result, "year") == {"2021": 1, "2022": 1, "2023": 1}
    assert counts(result, "category") == {"cs.NI": 1, "cs.DC": 1}


def test_facet_values_are_top_n_by_count_then_by_value(fixture_backend):
    result = fixture_backend.search(SearchRequest(facet_size=3))
    assert [(v.value, v.count) for v in result.facets["author"]] == [
        ("Aditya Akella", 2),
        ("Shivaram Venkataraman", 2),
        ("Ada Lovelace", 1),
    ]
    assert [(v.value, v.count) for v in result.facets["year"]] == [
        ("2007", 1),
        ("2020", 1),
        ("2021", 1),
    ]


def test_only_the_facets_asked_for_are_counted(fixture_backend):
    result = fixture_backend.search(SearchRequest(facets=("year",)))
    assert list(result.facets) == ["year"]
    assert fixture_backend.search(SearchRequest(facets=())).facets == {}


def test_seed_category_filter_keeps_other_categories_counted(seed_backend):
    result = seed_backend.search(SearchRequest.from_params(category=("cs.DC",)))
    assert result.total == 12
    assert counts(result, "category") == {
        "cs.DC": 12,
        "cs.LG": 11,
        "cs.NI": 4,
        "cs.DB": 3,
        "cs.CL": 1,
        "cs.LO": 1,
        "cs.OS": 1,
    }


def test_seed_facets_without_filters_equal_plain_counting(seed_backend, seed_records):
    result = seed_backend.search(SearchRequest(facet_size=100))
    assert result.total == len(seed_records) == 33
    for facet, attribute in (("author", "authors"), ("category", "categories")):
        expected = Counter(v for r in seed_records for v in getattr(r, attribute))
        assert counts(result, facet) == dict(expected)
    assert counts(result, "year") == dict(Counter(str(r.year) for r in seed_records if r.year))


# -- the counts against plain counting over the query's own matches ---------------------------
def slow_facets(backend, request: SearchRequest):
    """Total and facets counted in plain Python over the records the query matches unfiltered."""
    unfiltered = backend.search(SearchRequest(q=request.q, per_page=100, highlight=False))
    assert unfiltered.total == len(unfiltered.hits)  # every match is on the one page
    matches = [hit.record for hit in unfiltered.hits]
    return expected_total(matches, request), expected_facets(matches, request)


@settings(max_examples=examples(40), deadline=None)
@given(data=st.data())
def test_facet_counts_equal_plain_counting_over_the_matches(
    seed_backend, seed_records, seed_vocabulary, data
):
    request = draw_seed_request(data, seed_records, seed_vocabulary)
    result = seed_backend.search(request)
    model_total, facets = slow_facets(seed_backend, request)
    assert result.total == model_total
    assert answered_facets(result) == facets


def test_fixture_facets_equal_plain_counting_for_every_single_filter(fixture_backend):
    for record in FIXTURE_RECORDS:
        for request in (
            SearchRequest.from_params(author=record.authors[:1]),
            SearchRequest.from_params(q="learning", category=record.categories[:1]),
            SearchRequest.from_params(year=(record.year,), year_to=2022),
        ):
            model_total, facets = slow_facets(fixture_backend, request)
            result = fixture_backend.search(request)
            assert result.total == model_total
            assert answered_facets(result) == facets


def test_a_selected_value_is_flagged_however_the_filter_spelled_it(fixture_backend):
    # Filters match case- and accent-insensitively; the flag follows the match, not the spelling.
    request = SearchRequest.from_params(author=("c. balazs",), facets=("author",))
    result = fixture_backend.search(request)
    assert result.total == 1
    # The author counts leave out the author selection (disjunctive): every author is listed.
    flagged = {value.value for value in result.facets["author"] if value.selected}
    assert flagged == {"C. Balázs"}


# -- selected values outside the top N --------------------------------------------------------
def test_a_selected_value_outside_the_top_n_follows_it_with_its_count(fixture_backend):
    plain = fixture_backend.search(SearchRequest(facet_size=2, facets=("author",)))
    request = SearchRequest.from_params(
        author=("Mallory O'Brien", "C. Balázs"), facet_size=2, facets=("author",)
    )
    result = fixture_backend.search(request)
    assert result.total == 2
    # The top N as without the selection, then the selection beyond facet_size: most records
    # first, ties by value (not in the order selected).
    assert result.facets["author"] == (
        *plain.facets["author"],
        FacetValue("C. Balázs", 1, True),
        FacetValue("Mallory O'Brien", 1, True),
    )
    assert plain.facets["author"] == (
        FacetValue("Aditya Akella", 2),
        FacetValue("Shivaram Venkataraman", 2),
    )


def test_a_selected_value_in_the_top_n_is_listed_once(fixture_backend):
    request = SearchRequest.from_params(author=("Aditya Akella",), facet_size=2)
    assert fixture_backend.search(request).facets["author"] == (
        FacetValue("Aditya Akella", 2, True),
        FacetValue("Shivaram Venkataraman", 2),
    )


def test_a_selected_value_without_matches_is_listed_with_zero(fixture_backend):
    result = fixture_backend.search(SearchRequest.from_params(q="learning", year=(2007,)))
    assert result.total == 0
    assert result.facets["year"] == (
        FacetValue("2022", 1),
        FacetValue("2023", 1),
        FacetValue("2007", 0, True),
    )
    nobody = fixture_backend.search(SearchRequest.from_params(q="learning", author=("Nobody",)))
    assert nobody.facets["author"][-1] == FacetValue("Nobody", 0, True)
    # Year bounds narrow every facet, including the selected years they leave out.
    bounded = fixture_backend.search(SearchRequest.from_params(year=(2007, 2022), year_from=2021))
    assert bounded.facets["year"] == (
        FacetValue("2021", 1),
        FacetValue("2022", 1, True),
        FacetValue("2023", 1),
        FacetValue("2007", 0, True),
    )


def test_a_selected_value_outside_the_top_n_keeps_its_spelling_and_true_count(fixture_backend):
    # Filters match case- and accent-insensitively: left out of the top N, the value is listed
    # as selected; in it, it is flagged under the index's spelling and not listed twice.
    request = SearchRequest.from_params(author=("c. balazs",), facet_size=1, facets=("author",))
    assert fixture_backend.search(request).facets["author"] == (
        FacetValue("Aditya Akella", 2),
        FacetValue("c. balazs", 1, True),
    )
    listed = fixture_backend.search(replace(request, facet_size=100)).facets["author"]
    assert [v.value for v in listed if v.selected] == ["C. Balázs"]
    assert len(listed) == 6


@settings(max_examples=examples(40), deadline=None)
@given(data=st.data())
def test_selected_values_beyond_a_small_top_n_equal_plain_counting(
    seed_backend, seed_records, seed_vocabulary, data
):
    drawn = draw_seed_request(data, seed_records, seed_vocabulary)
    request = replace(drawn, facet_size=data.draw(st.integers(1, 3)))
    result = seed_backend.search(request)
    _, facets = slow_facets(seed_backend, request)
    assert answered_facets(result) == facets
    for facet in request.facets:
        listed = {value.value for value in result.facets[facet] if value.selected}
        assert listed == set(request.selected(facet))
