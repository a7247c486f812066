"""Facets as data (facets.py): each facet's description, its values on a record, its filter values,
and finding a facet by name."""

from __future__ import annotations

import pytest

from searchsvc.domain.errors import InvalidRequest, UnknownFacet
from searchsvc.domain.facets import FACET_NAMES, FACETS, Facet, facet_named
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR, Record
from tests.support import FIXTURE_RECORDS

RECORD = FIXTURE_RECORDS[0]  # two authors, 2023, cs.DC and cs.LG


def test_the_facets_are_author_year_category_and_subject_in_that_order():
    assert FACET_NAMES == ("author", "year", "category", "subject")
    assert tuple(facet.name for facet in FACETS) == FACET_NAMES


@pytest.mark.parametrize("facet", FACETS, ids=FACET_NAMES)
def test_each_facet_is_described_completely(facet):
    assert facet.label and facet.filter_help
    assert facet.attribute in Record.__dataclass_fields__
    assert facet.value_type in (str, int)
    assert facet.order in ("count", "value_descending")
    assert facet_named(facet.name) is facet


def test_multi_valued_facets_give_every_value_of_a_record():
    assert facet_named("author").values_of(RECORD) == ("Ada Lovelace", "Shivaram Venkataraman")
    assert facet_named("category").values_of(RECORD) == ("cs.DC", "cs.LG")
    assert facet_named("author").values_of(Record(id="x", title="t")) == ()


def test_a_single_valued_facet_gives_its_value_as_a_string_or_nothing():
    year = facet_named("year")
    assert year.values_of(RECORD) == ("2023",)
    assert year.values_of(Record(id="x", title="t", year=None)) == ()


def test_years_are_shown_newest_first_and_the_others_by_count():
    assert facet_named("year").order == "value_descending"
    assert facet_named("author").order == facet_named("category").order == "count"
    assert facet_named("year").multi_valued is False
    assert facet_named("author").multi_valued and facet_named("category").multi_valued


@pytest.mark.parametrize(
    ("value", "expected"), [(2021, 2021), ("2021", 2021), (" 2021 ", 2021), (MIN_YEAR, MIN_YEAR)]
)
def test_a_year_filter_value_is_a_whole_number(value, expected):
    assert facet_named("year").filter_value(value) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("abc", "year must be a whole number"),
        ("2021.5", "year must be a whole number"),
        (2021.0, "year must be a whole number"),
        (True, "year must be a whole number"),
        (None, "year must be a whole number"),
        ("", "year must be a whole number"),
        (MIN_YEAR - 1, f"from {MIN_YEAR} to {MAX_YEAR}"),
        (str(MAX_YEAR + 1), f"from {MIN_YEAR} to {MAX_YEAR}"),
    ],
)
def test_a_bad_year_filter_value_is_invalid_request_naming_the_facet(value, fragment):
    with pytest.raises(InvalidRequest) as caught:
        facet_named("year").filter_value(value)
    assert fragment in caught.value.message
    assert caught.value.details["parameter"] == "year"


def test_a_superscript_digit_is_invalid_request_not_a_crash():
    with pytest.raises(InvalidRequest):
        facet_named("year").filter_value("²")


@pytest.mark.parametrize("name", ["author", "category"])
def test_text_filter_values_are_non_empty_strings(name):
    facet = facet_named(name)
    assert facet.filter_value("cs.DC") == "cs.DC"
    assert facet.filter_value(" spaced ") == " spaced "  # kept as given
    for bad in ("", 5, None, ("a",)):
        with pytest.raises(InvalidRequest) as caught:
            facet.filter_value(bad)
        assert caught.value.details["parameter"] == name


@pytest.mark.parametrize("name", ["colour", "", "Author", "authors", "categories", None, ["a"]])
def test_an_unknown_facet_name_is_unknown_facet_listing_the_facets(name):
    with pytest.raises(UnknownFacet) as caught:
        facet_named(name)
    error = caught.value
    assert error.code == "unknown_facet"
    assert error.details == {"facet": str(name), "facets": list(FACET_NAMES)}
    assert "the facets are author, year, category" in error.message
    assert isinstance(error, LookupError)


def test_a_request_takes_filters_for_facets_only():
    request = SearchRequest(filters={"author": "A", "year": [2021, "2022"], "category": ()})
    assert request.filters == {"author": ("A",), "year": (2021, 2022)}
    assert request.selected("year") == ("2021", "2022")
    assert request.selected("category") == ()
    with pytest.raises(InvalidRequest) as caught:
        SearchRequest(filters={"colour": ["red"]})
    assert caught.value.details["parameter"] == "colour"
    with pytest.raises(UnknownFacet):
        request.selected("colour")


def test_a_facet_is_a_frozen_value():
    facet = facet_named("author")
    assert isinstance(facet, Facet)
    with pytest.raises(AttributeError):
        facet.name = "writer"
