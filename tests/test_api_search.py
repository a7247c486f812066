"""GET /api/v1/search through the real app over the real fixture index."""

from __future__ import annotations

import pytest

from searchsvc.app import create_app
from searchsvc.facets import FACET_NAMES
from searchsvc.query import MAX_PER_PAGE, MAX_QUERY_LENGTH, SEARCH_FIELDS
from tests.support import FIXTURE_RECORDS, HOSTILE_TITLE


@pytest.fixture(scope="module")
def client(fixture_index):
    return create_app({"INDEX_DIR": fixture_index, "TESTING": True}).test_client()


def search(client, query_string=None, status=200):
    response = client.get("/api/v1/search", query_string=query_string)
    assert response.status_code == status, response.get_json()
    assert response.mimetype == "application/json"
    return response.get_json()


def test_search_without_query_lists_every_record_newest_first(client):
    body = search(client)
    assert body["total"] == len(FIXTURE_RECORDS)
    years = [hit["year"] for hit in body["hits"]]
    assert years == sorted(years, reverse=True)
    assert body["query"]["sort"] == "newest"
    assert body["page"] == 1 and body["per_page"] == 10 and body["pages"] == 1
    assert set(body["facets"]) == set(FACET_NAMES)
    assert body["suggestion"] is None or isinstance(body["suggestion"], str)


def test_search_response_has_the_documented_shape(client):
    body = search(client, {"q": "scheduling"})
    assert list(body) == [
        "query",
        "total",
        "page",
        "per_page",
        "pages",
        "took_ms",
        "hits",
        "facets",
        "suggestion",
    ]
    hit = body["hits"][0]
    assert hit["id"] == "2301.00001"
    for name in ("title", "abstract", "authors", "year", "categories", "source", "url"):
        assert name in hit
    assert isinstance(hit["score"], float)
    assert "<mark>" in hit["highlights"]["title"]
    assert body["query"] == {
        "q": "scheduling",
        "author": [],
        "category": [],
        "year": [],
        "year_from": None,
        "year_to": None,
        "sort": "relevance",
        "page": 1,
        "per_page": 10,
        "facets": list(FACET_NAMES),
        "facet_size": 10,
        "highlight": True,
        "fields": list(SEARCH_FIELDS),
    }


def test_repeated_filters_are_or_within_a_facet_and_and_across(client):
    body = search(client, [("category", "cs.NI"), ("category", "hep-ph")])
    assert {hit["id"] for hit in body["hits"]} == {"2101.00003", "0704.0001"}
    body = search(client, [("category", "cs.DC"), ("author", "Aditya Akella")])
    assert [hit["id"] for hit in body["hits"]] == ["2101.00003"]
    body = search(client, [("year", "2021"), ("year", "2022")])
    assert {hit["year"] for hit in body["hits"]} == {2021, 2022}


def test_a_parameter_given_twice_counts_once_unless_repeatable(client):
    # The first of a non-repeatable parameter, every value of a repeatable one, and unknown
    # parameters ignored: as webargs reads a query string.
    query = search(client, [("q", "lovelace"), ("q", "zzz"), ("per_page", "2"), ("per_page", "5")])
    assert query["query"]["q"] == "lovelace" and query["total"] == 1 and query["per_page"] == 2
    query = search(client, [("author", "Aditya Akella"), ("author", "Ada Lovelace"), ("x", "1")])
    assert query["query"]["author"] == ["Aditya Akella", "Ada Lovelace"]


def test_year_range_filters(client):
    body = search(client, {"year_from": 2021, "year_to": 2022})
    assert sorted(hit["year"] for hit in body["hits"]) == [2021, 2022]


def test_selected_facet_values_are_marked(client):
    body = search(client, {"author": "Aditya Akella", "facets": "author"})
    assert list(body["facets"]) == ["author"]
    values = {v["value"]: v for v in body["facets"]["author"]}
    assert values["Aditya Akella"] == {"value": "Aditya Akella", "count": 2, "selected": True}
    assert values["Shivaram Venkataraman"]["selected"] is False


def test_empty_facets_parameter_counts_no_facets(client):
    assert search(client, {"facets": ""})["facets"] == {}


def test_paging(client):
    first = search(client, {"per_page": 2})
    third = search(client, {"per_page": 2, "page": 3})
    assert first["pages"] == 3 and third["page"] == 3
    assert len(first["hits"]) == 2 and len(third["hits"]) == 1
    assert search(client, {"per_page": 2, "page": 99})["hits"] == []


def test_sort_by_title_and_oldest(client):
    oldest = search(client, {"sort": "oldest"})
    assert oldest["hits"][0]["id"] == "0704.0001"
    titles = [hit["title"] for hit in search(client, {"sort": "title"})["hits"]]
    assert titles[0].startswith("Calculation")


def test_highlight_false_gives_no_highlights(client):
    body = search(client, {"q": "scheduling", "highlight": "false"})
    assert body["hits"][0]["highlights"] == {}


def test_fields_restrict_where_q_is_searched(client):
    assert search(client, {"q": "lovelace", "fields": "authors"})["total"] == 1
    assert search(client, {"q": "lovelace", "fields": "title,abstract"})["total"] == 0


def test_hostile_record_is_returned_as_data_and_highlights_are_escaped(client):
    body = search(client, {"q": "quoted"})
    hit = body["hits"][0]
    assert hit["title"] == HOSTILE_TITLE
    assert "<script>" not in hit["highlights"].get("title", "")


@pytest.mark.parametrize(
    ("query_string", "parameter"),
    [
        ({"per_page": 0}, "per_page"),
        ({"per_page": MAX_PER_PAGE + 1}, "per_page"),
        ({"page": 10_001}, "page"),
        ({"page": "two"}, "page"),
        ({"facet_size": 101}, "facet_size"),
        ({"sort": "random"}, "sort"),
        ({"facets": "author,color"}, "facets"),
        ({"fields": "body"}, "fields"),
        ({"fields": ""}, "fields"),
        ({"year": "1999x"}, "year"),
        ({"year": 99}, "year"),
        ({"year_from": 2023, "year_to": 2021}, "year_from"),
        ({"highlight": "maybe"}, "highlight"),
        ({"q": "x" * (MAX_QUERY_LENGTH + 1)}, "q"),
        ([("author", str(n)) for n in range(51)], "author"),
    ],
)
def test_bad_parameters_are_400_invalid_parameter(client, query_string, parameter):
    error = search(client, query_string, status=400)["error"]
    assert error["status"] == 400
    assert error["code"] == "invalid_parameter"
    assert parameter in error["details"]["errors"]
    assert parameter in error["message"]


def test_unusable_query_is_400_invalid_query_with_its_position(client):
    error = search(client, {"q": "(" * 40 + "learning"}, status=400)["error"]
    assert error["code"] == "invalid_query"
    assert error["message"]
    assert isinstance(error["details"]["position"], int)
