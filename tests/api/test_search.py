"""GET /api/v1/search through the real app over the real fixture index."""

from __future__ import annotations

import pytest

from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import MAX_PER_PAGE, MAX_QUERY_LENGTH, SEARCH_FIELDS
from tests.support import FIXTURE_RECORDS, HOSTILE_TITLE


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
        "matched_by_words",
        "added_by_meaning",
        "meaning_adds",
        "page",
        "per_page",
        "pages",
        "took_ms",
        "hits",
        "facets",
        "suggestion",
        "mode",
    ]
    assert body["mode"] == "lexical"  # the fixture index has no vectors
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
        "subject": [],
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
        "crosslists": "include",
        "mode": "lexical",
    }


def test_a_year_range_ending_before_it_starts_matches_nothing(client):
    body = search(client, {"year_from": 2023, "year_to": 2021})
    assert body["total"] == 0 and body["hits"] == []
    assert (body["query"]["year_from"], body["query"]["year_to"]) == (2023, 2021)


def test_subject_filters_take_any_level_and_crosslists_keep_to_primaries(client):
    assert search(client, {"category": "cs"})["total"] == 4
    assert search(client, {"subject": "grp_physics"})["total"] == 1
    primary = search(client, {"category": "cs.LG", "crosslists": "exclude"})
    assert [hit["id"] for hit in primary["hits"]] == ["2201.00002"]
    assert primary["query"]["crosslists"] == "exclude"
    subjects = {v["value"]: v for v in primary["facets"]["subject"]}
    assert subjects["cs"]["label"] == "Computer Science"
    assert subjects["cs"]["parent"] == "grp_cs"
    error = search(client, {"crosslists": "sometimes"}, status=400)["error"]
    assert list(error["details"]["errors"]) == ["crosslists"]


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
    assert values["Aditya Akella"] == {
        "value": "Aditya Akella",
        "count": 2,
        "selected": True,
        "label": "Aditya Akella",
        "parent": None,
    }
    assert values["Shivaram Venkataraman"]["selected"] is False


def test_a_selected_value_outside_the_top_n_follows_it_with_its_count(client):
    body = search(client, {"category": "hep-ph", "facets": "category", "facet_size": 1})
    assert [(v["value"], v["count"], v["selected"]) for v in body["facets"]["category"]] == [
        ("cs.DC", 2, False),
        ("hep-ph", 1, True),
    ]
    assert body["facets"]["category"][1]["label"] == "High Energy Physics - Phenomenology"
    assert body["query"]["facet_size"] == 1


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
        ({"facet_size": 201}, "facet_size"),
        ({"sort": "random"}, "sort"),
        ({"facets": "author,color"}, "facets"),
        ({"fields": "body"}, "fields"),
        ({"fields": ""}, "fields"),
        ({"year": "1999x"}, "year"),
        ({"year": 99}, "year"),
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


MALFORMED_QUERIES = [
    # (q, a fragment of the message, the 0-based position of the cause)
    ("title:", "title: needs a word", 0),
    ("learning author:", "author: needs a word", 9),
    ("title: x", "title: needs a word", 0),
    ('"learned caches', "this quote is never closed", 0),
    ('learning "caches', "this quote is never closed", 9),
    ("((learning", "this ( is never closed", 1),
    ("learning))", "this ) has no ( before it", 8),
    ("()", "empty parentheses", 0),
    ("year:2023..2020", "ends before it starts", 5),
    ("learning year:abc", "year:abc is not a year", len("learning year:")),
    ("year:{2020 TO 2021}", "holds no year", 5),
    ("title:[a TO z]", "ranges are for years only", 6),
    # Ranges of words (issue 19: these once answered 500 from the expansion code).
    ("{a TO z}", "ranges are for years only", 0),
    ("[a TO z]", "ranges are for years only", 0),
    ("author:[a TO b]", "ranges are for years only", 7),
    ("quantum {a TO z}", "ranges are for years only", 8),
    ("AND", "AND needs a word or a group before it", 0),
    ("NOT", "NOT needs a word or a group after it", 0),
    ("learning AND", "AND needs a word or a group after it", 9),
    ("OR learning", "OR needs a word or a group before it", 0),
    ("learning^x", "^ must be followed by a boost", 8),
    ("learning~9", "a fuzzy word allows 1 to 2 edits", 8),
    ("  title:", "title: needs a word", 2),  # counted in the text as sent
]


@pytest.mark.parametrize(
    ("q", "fragment", "position"),
    MALFORMED_QUERIES,
    ids=[repr(q) for q, _, _ in MALFORMED_QUERIES],
)
def test_a_malformed_query_is_400_invalid_query_at_the_position_of_its_cause(
    client, q, fragment, position
):
    response = client.get("/api/v1/search", query_string={"q": q})
    assert response.status_code == 400
    assert response.headers["Cache-Control"] == "no-store"
    error = response.get_json()["error"]
    assert error["status"] == 400 and error["code"] == "invalid_query"
    assert error["details"] == {"position": position}
    assert fragment in error["message"]
    assert error["message"].endswith(f"(at character {position + 1})")


def test_a_query_over_a_limit_is_400_invalid_query_at_the_first_word_over_it(client):
    q = " ".join(["w"] * 101)
    error = search(client, {"q": q}, status=400)["error"]
    assert error["code"] == "invalid_query" and error["details"] == {"position": 200}


def test_the_echoed_query_is_the_translators_request(client):
    from werkzeug.datastructures import MultiDict

    from searchsvc.params import search_request_from

    pairs = [("q", "learning"), ("category", "cs.DC"), ("year", "2023"), ("sort", "oldest")]
    body = search(client, pairs)
    # As translated, with the mode the service chose (the fixture index has no vectors).
    expected = search_request_from(MultiDict(pairs)).to_dict() | {"mode": "lexical"}
    assert body["query"] == expected
    assert body["query"]["category"] == ["cs.DC"] and body["query"]["year"] == [2023]


# POST /api/v1/search: the same search with its parameters in a JSON body, for a query too long
# for a URL (issue 19: request lines are bounded in front of the service).


def post_search(client, body, status=200, **kwargs):
    response = client.post("/api/v1/search", json=body, **kwargs)
    assert response.status_code == status, response.get_json()
    assert response.mimetype == "application/json"
    return response.get_json()


@pytest.mark.parametrize(
    ("query_string", "body"),
    [
        ({}, {}),
        ({"q": "scheduling"}, {"q": "scheduling"}),
        (
            [("category", "cs.NI"), ("category", "hep-ph"), ("facets", "author,year")],
            {"category": ["cs.NI", "hep-ph"], "facets": ["author", "year"]},
        ),
        (
            {"q": "lovelace", "fields": "authors", "per_page": 2, "highlight": "false"},
            {"q": "lovelace", "fields": ["authors"], "per_page": 2, "highlight": False},
        ),
        (
            {"year": 2021, "facets": "", "sort": "oldest"},
            {"year": [2021], "facets": [], "sort": "oldest"},
        ),
        ({"year_from": 2021, "year_to": 2022}, {"year_from": 2021, "year_to": 2022}),
        ({"subject": "cs", "crosslists": "exclude"}, {"subject": ["cs"], "crosslists": "exclude"}),
    ],
)
def test_post_search_answers_as_the_same_get(client, query_string, body):
    got, posted = search(client, query_string), post_search(client, body)
    for answer in (got, posted):
        answer.pop("took_ms")
    assert posted == got


def test_post_search_takes_a_query_too_long_for_a_url(client):
    long_query = "learning " + " ".join(f"{n:02d}" + "z" * 95 for n in range(90))
    assert len(long_query) > 8190  # longer than any request line gets through
    body = post_search(client, {"q": long_query, "facets": ["author"]})
    assert body["query"]["q"] == long_query and body["total"] == 2


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"q": "x" * (MAX_QUERY_LENGTH + 1)}, "q"),
        ({"per_page": MAX_PER_PAGE + 1}, "per_page"),
        ({"author": "Ada Lovelace"}, "author"),  # a list, not a string
        ({"facets": "author,year"}, "facets"),
        ({"facets": ["color"]}, "facets"),
        ({"fields": []}, "fields"),
        ({"year": ["1999x"]}, "year"),
        ({"colour": "blue"}, "colour"),  # unknown: a typo is an error, not ignored
        (["learning"], "_schema"),
    ],
)
def test_post_search_refuses_bad_parameters_as_get_does(client, body, parameter):
    error = post_search(client, body, status=400)["error"]
    assert error["code"] == "invalid_parameter"
    assert parameter in error["details"]["errors"] and parameter in error["message"]


def test_post_search_reports_a_malformed_query_with_its_position(client):
    error = post_search(client, {"q": 'learning "caches'}, status=400)["error"]
    assert error["code"] == "invalid_query" and error["details"] == {"position": 9}


def test_post_search_needs_a_json_body(client):
    response = client.post("/api/v1/search", data={"q": "learning"})
    assert response.status_code == 415
    assert response.get_json()["error"]["code"] == "unsupported_media_type"
    broken = client.post("/api/v1/search", data="{'q': 1", content_type="application/json")
    assert broken.status_code == 400
    error = broken.get_json()["error"]
    assert error["code"] == "invalid_parameter" and "not valid JSON" in error["message"]
    # The document says a body is required: none is a 400, not a search of every record.
    empty = client.post("/api/v1/search", data="", content_type="application/json")
    assert empty.status_code == 400 and "body is empty" in empty.get_json()["error"]["message"]
    assert client.post("/api/v1/search", json={}).get_json()["total"] == len(FIXTURE_RECORDS)
    # 2 KB of nested brackets, far under the size limit, would exhaust the parser's stack.
    nested = '{"q": ' + "[" * 990 + "]" * 990 + "}"
    deep = client.post("/api/v1/search", data=nested, content_type="application/json")
    assert deep.status_code == 400 and "nested too deeply" in deep.get_json()["error"]["message"]


def test_post_search_refuses_a_body_over_the_limit_even_chunked(client):
    import io

    huge = b'{"q": "' + b"x" * (64 * 1024) + b'"}'
    error = post_search(client, None, status=413, data=huge, content_type="application/json")
    assert error["error"]["code"] == "request_entity_too_large"
    chunked = client.post(
        "/api/v1/search",
        input_stream=io.BytesIO(huge),
        content_type="application/json",
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},  # as gunicorn says of chunked bodies
    )
    assert chunked.status_code == 413


def test_a_chunked_body_on_a_get_is_measured_too(client):
    import io

    response = client.get(
        "/api/v1/search",
        input_stream=io.BytesIO(b"x" * (10 * 1024 * 1024)),
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413
    assert response.get_json()["error"]["code"] == "request_entity_too_large"


def test_post_search_is_documented_with_its_body_and_errors(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    operation = spec["paths"]["/api/v1/search"]["post"]
    assert {"200", "400", "413", "415", "503"} <= set(operation["responses"])
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    schema = spec["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert schema["properties"]["author"]["type"] == "array"
    assert schema["properties"]["facets"]["type"] == "array"
    assert schema["properties"]["q"]["maxLength"] == MAX_QUERY_LENGTH
    assert "security" not in operation


def test_generated_post_searches_get_no_5xx_and_answers_that_match_the_schema(app):
    import schemathesis
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    from tests.api.test_openapi import drive, refused_by_an_unstated_rule

    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)

    def answers_within_the_contract(case):
        response = case.call(headers={"Accept-Encoding": "identity"})
        assert response.status_code < 500, response.text
        excluded = [positive_data_acceptance] if refused_by_an_unstated_rule(case, response) else []
        case.validate_response(response, excluded_checks=excluded)

    drive(schema["/api/v1/search"]["POST"], 60, answers_within_the_contract)
