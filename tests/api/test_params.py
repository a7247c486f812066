"""The one translator from query-string parameters to a SearchRequest (params.py), its inverse,
and the API, the web page and the CLI reaching the same request through it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import MultiDict

from searchsvc.app import create_app
from searchsvc.domain.errors import InvalidRequest, QueryError
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import (
    DEFAULT_FACET_SIZE,
    DEFAULT_PER_PAGE,
    MAX_FACET_SIZE,
    MAX_FILTER_VALUES,
    MAX_PAGE,
    MAX_PER_PAGE,
    MAX_QUERY_LENGTH,
    MAX_RESULT_WINDOW,
    SEARCH_FIELDS,
    SORTS,
    SearchRequest,
    query_params,
)
from searchsvc.domain.querylang import parse_query
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR
from searchsvc.params import search_request_from
from searchsvc.service import SearchService
from searchsvc.web import params as web_params
from tests.support import examples

# -- query-string mappings -> SearchRequest -----------------------------------------------------


def test_no_parameters_are_the_default_request():
    assert search_request_from({}) == SearchRequest()
    assert search_request_from(MultiDict()) == SearchRequest()


def test_a_multidict_keeps_every_value_of_a_repeatable_facet_filter():
    args = MultiDict(
        [
            ("q", "learning"),
            ("author", "Aditya Akella"),
            ("author", "Ada Lovelace"),
            ("category", "cs.DC"),
            ("year", "2021"),
            ("year", "2022"),
        ]
    )
    request = search_request_from(args)
    assert request.q == "learning"
    assert request.filters == {
        "author": ("Aditya Akella", "Ada Lovelace"),
        "category": ("cs.DC",),
        "year": (2021, 2022),
    }
    assert request.selected("year") == ("2021", "2022")


def test_a_plain_dict_takes_a_string_or_a_list_per_parameter():
    request = search_request_from(
        {"q": "x", "author": ["A", "B"], "category": "cs.DC", "year": 2021, "page": "2"}
    )
    assert request.filters == {"author": ("A", "B"), "category": ("cs.DC",), "year": (2021,)}
    assert request.page == 2
    assert search_request_from({"author": ("A", "B")}).selected("author") == ("A", "B")


def test_a_none_value_in_a_plain_dict_is_absent():
    request = search_request_from({"year_from": None, "sort": None, "author": [], "page": "1"})
    assert request == SearchRequest()


def test_the_first_of_a_repeated_single_parameter_counts():
    args = MultiDict([("q", "lovelace"), ("q", "zzz"), ("per_page", "2"), ("per_page", "5")])
    request = search_request_from(args)
    assert (request.q, request.per_page) == ("lovelace", 2)
    assert search_request_from({"sort": ["oldest", "newest"]}).sort == "oldest"


def test_repeated_filter_values_count_once():
    args = MultiDict([("author", "A"), ("author", "A"), ("author", "B")])
    assert search_request_from(args).selected("author") == ("A", "B")


def test_unknown_parameters_are_ignored():
    assert search_request_from({"colour": "red", "x": "1"}) == SearchRequest()


def test_every_single_valued_parameter_is_translated():
    request = search_request_from(
        {
            "q": "learning",
            "year_from": "2020",
            "year_to": "2023",
            "sort": "oldest",
            "page": "3",
            "per_page": "25",
            "facet_size": "5",
            "highlight": "false",
        }
    )
    assert request == SearchRequest(
        q="learning",
        year_from=2020,
        year_to=2023,
        sort="oldest",
        page=3,
        per_page=25,
        facet_size=5,
        highlight=False,
    )


def test_defaults_fill_absent_parameters_and_overrides_replace_given_ones():
    request = search_request_from(
        {"per_page": "50", "page": "2"},
        defaults={"per_page": 20, "sort": "newest"},
        overrides={"page": 1, "facet_size": 40},
    )
    assert (request.per_page, request.sort, request.page, request.facet_size) == (
        50,
        "newest",
        1,
        40,
    )
    assert search_request_from({}, defaults={"per_page": 20}).per_page == 20


def test_blank_is_absent_strips_values_ignores_empty_ones_and_keeps_q_as_typed():
    args = MultiDict(
        [
            ("q", "  gpu  "),
            ("category", "cs.DC"),
            ("category", ""),
            ("category", "   "),
            ("year_from", ""),
            ("year_to", " 2023 "),
            ("page", " "),
            ("sort", ""),
        ]
    )
    request = search_request_from(args, blank_is_absent=True)
    assert request.q == "  gpu  "  # error positions count in the text as typed
    assert request.selected("category") == ("cs.DC",)
    assert (request.year_from, request.year_to, request.page, request.sort) == (None, 2023, 1, None)


def test_without_blank_is_absent_an_empty_value_is_refused_and_q_kept_as_typed():
    with pytest.raises(InvalidRequest) as caught:
        search_request_from(MultiDict([("year_from", "")]))
    assert caught.value.details["parameter"] == "year_from"
    assert search_request_from({"q": "  gpu "}).q == "  gpu "


BAD_PARAMETERS = [
    ({"q": "x" * (MAX_QUERY_LENGTH + 1)}, "q"),
    ({"q": 5}, "q"),
    ({"author": [""]}, "author"),
    ({"author": [str(n) for n in range(MAX_FILTER_VALUES + 1)]}, "author"),
    ({"category": [""]}, "category"),
    ({"year": "abc"}, "year"),
    ({"year": "1999x"}, "year"),
    ({"year": str(MIN_YEAR - 1)}, "year"),
    ({"year": str(MAX_YEAR + 1)}, "year"),
    ({"year_from": "x"}, "year_from"),
    ({"year_from": "999"}, "year_from"),
    ({"year_to": "3000"}, "year_to"),
    ({"sort": "random"}, "sort"),
    ({"page": "0"}, "page"),
    ({"page": "two"}, "page"),
    ({"page": str(MAX_PAGE + 1)}, "page"),
    ({"per_page": "0"}, "per_page"),
    ({"per_page": str(MAX_PER_PAGE + 1)}, "per_page"),
    ({"facets": "author,colour"}, "facets"),
    ({"facet_size": "0"}, "facet_size"),
    ({"facet_size": str(MAX_FACET_SIZE + 1)}, "facet_size"),
    ({"highlight": "maybe"}, "highlight"),
    ({"fields": "body"}, "fields"),
    ({"fields": ""}, "fields"),
]


@pytest.mark.parametrize(
    ("params", "parameter"), BAD_PARAMETERS, ids=[repr(p)[:40] for p, _ in BAD_PARAMETERS]
)
def test_a_bad_parameter_is_invalid_request_naming_it(params, parameter):
    for mapping in (params, MultiDict(params)):
        with pytest.raises(InvalidRequest) as caught:
            search_request_from(mapping)
        error = caught.value
        assert error.details["parameter"] == parameter
        assert parameter in error.details["errors"]
        assert error.message.startswith(f"invalid parameter {parameter}: ")


@pytest.mark.parametrize(
    ("q", "position"),
    [("title:", 0), ('"learned caches', 0), ("((learning", 1), ("learning year:abc", 14)],
)
def test_a_malformed_query_passes_through_as_a_query_error_with_its_position(q, position):
    with pytest.raises(QueryError) as caught:
        search_request_from({"q": q})
    assert caught.value.details["position"] == position


def test_a_malformed_query_keeps_its_position_in_the_text_as_typed():
    # blank_is_absent strips other parameters, never q: the position counts in q as typed.
    with pytest.raises(QueryError) as caught:
        search_request_from({"q": "  title:"}, blank_is_absent=True)
    assert caught.value.details["position"] == 2
    assert search_request_from({"q": "   "}, blank_is_absent=True).q == ""


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"facets": "author"}, SearchRequest(facets=("author",))),
        ({"facets": ""}, SearchRequest(facets=())),
        ({"fields": "title,authors"}, SearchRequest(fields=("title", "authors"))),
        (MultiDict([("fields", "title")]), SearchRequest(fields=("title",))),
    ],
)
def test_comma_list_parameters_are_read_as_comma_lists(params, expected):
    assert search_request_from(params) == expected


# -- query_params, the inverse ------------------------------------------------------------------


def test_query_params_leave_defaults_out_in_a_stable_order():
    assert query_params(SearchRequest()) == []
    request = SearchRequest(
        q="learning",
        filters={"category": ("cs.DC", "cs.LG"), "author": ("A",), "year": (2021,)},
        year_from=2020,
        sort="oldest",
        page=2,
        highlight=False,
    )
    assert query_params(request) == [
        ("q", "learning"),
        ("author", "A"),
        ("year", "2021"),
        ("category", "cs.DC"),
        ("category", "cs.LG"),
        ("year_from", "2020"),
        ("sort", "oldest"),
        ("page", "2"),
        ("highlight", "false"),
    ]
    assert query_params(request, omit=("page", "category")) == [
        ("q", "learning"),
        ("author", "A"),
        ("year", "2021"),
        ("year_from", "2020"),
        ("sort", "oldest"),
        ("highlight", "false"),
    ]


def _parses(text: str) -> bool:
    try:
        parse_query(text)
    except QueryError:
        return False
    return True


QUERIES = st.one_of(
    st.sampled_from(["", "learning", '"learned caches"', "title:(a OR b)", "year:2020..2023"]),
    st.text(max_size=30).filter(_parses),
)
VALUES = st.text(min_size=1, max_size=20)
YEARS = st.integers(MIN_YEAR, MAX_YEAR)


@st.composite
def search_requests(draw, *, with_lists: bool = False) -> SearchRequest:
    """Valid SearchRequests; the comma-list parameters (facets, fields) only `with_lists`."""
    year_from, year_to = draw(st.none() | YEARS), draw(st.none() | YEARS)
    if year_from is not None and year_to is not None and year_from > year_to:
        year_from, year_to = year_to, year_from
    options = {}
    per_page = draw(st.integers(1, MAX_PER_PAGE))
    if with_lists:
        options["facets"] = draw(st.lists(st.sampled_from(FACET_NAMES), unique=True))
        options["fields"] = draw(st.lists(st.sampled_from(SEARCH_FIELDS), min_size=1, unique=True))
    return SearchRequest(
        q=draw(QUERIES),
        filters={
            "author": draw(st.lists(VALUES, max_size=3)),
            "category": draw(st.lists(VALUES, max_size=3)),
            "year": draw(st.lists(YEARS, max_size=3)),
        },
        year_from=year_from,
        year_to=year_to,
        sort=draw(st.none() | st.sampled_from(SORTS)),
        page=draw(st.integers(1, MAX_RESULT_WINDOW // per_page)),
        per_page=per_page,
        facet_size=draw(st.integers(1, MAX_FACET_SIZE)),
        highlight=draw(st.booleans()),
        **options,
    )


@settings(max_examples=examples(300), deadline=None)
@given(search_requests())
def test_the_query_params_of_a_request_translate_back_into_it(request):
    pairs = query_params(request)
    assert search_request_from(MultiDict(pairs)) == request
    assert search_request_from(MultiDict(pairs)).to_dict() == request.to_dict()


@settings(max_examples=examples(50), deadline=None)
@given(
    search_requests(with_lists=True).filter(
        lambda r: r.facets != FACET_NAMES or r.fields != SEARCH_FIELDS
    )
)
def test_the_query_params_of_a_request_with_facets_and_fields_translate_back_into_it(request):
    assert search_request_from(MultiDict(query_params(request))) == request


# -- the API, the web page and the CLI reach the same request -----------------------------------


@pytest.fixture
def captured(monkeypatch):
    """The SearchRequests every surface hands the service, in order."""
    requests: list[SearchRequest] = []
    original = SearchService.search_request

    def capture(self, request):
        requests.append(request)
        return original(self, request)

    monkeypatch.setattr(SearchService, "search_request", capture)
    return requests


SAME_PARAMETERS = [
    [("q", "learning")],
    [
        ("q", "deep learning NOT caches"),
        ("author", "Aditya Akella"),
        ("author", "Ada Lovelace"),
        ("category", "cs.DC"),
        ("year", "2021"),
        ("year", "2023"),
        ("year_from", "2020"),
        ("year_to", "2023"),
        ("sort", "oldest"),
    ],
    [("q", '"learned caches" OR title:congestion'), ("page", "2"), ("sort", "title")],
    [("category", "cs.LG"), ("year_from", "2022")],
]
_CLI_OPTIONS = {
    "author": "--author",
    "category": "--category",
    "year": "--year",
    "year_from": "--from",
    "year_to": "--to",
    "sort": "--sort",
    "page": "--page",
}


@pytest.mark.parametrize("pairs", SAME_PARAMETERS, ids=lambda pairs: pairs[0][1])
def test_the_api_the_web_page_and_the_cli_reach_the_translators_request(
    pairs, fixture_index, captured, runner
):
    expected = search_request_from(MultiDict(pairs))
    client = create_app({"INDEX": fixture_index, "TESTING": True}).test_client()

    # The echo names the mode the service chose (the fixture index has no vectors: lexical).
    echoed = expected.to_dict() | {"mode": "lexical"}
    response = client.get("/api/v1/search", query_string=pairs)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["query"] == echoed
    assert captured.pop() == expected

    assert client.get("/", query_string=pairs).status_code == 200
    # The page fixes its page size and fetches more facet values for its sidebar.
    web = replace(expected, per_page=web_params.PER_PAGE, facet_size=web_params.FACET_SIZE)
    # First the page's search; with a subject ticked, a second one counts the subject headings
    # (web/views.py, _subject_counts).
    assert captured[0] == web
    captured.clear()
    assert web_params.parse_search_args(MultiDict(pairs)) == web

    q = dict(pairs).get("q", "")
    options = [part for key, value in pairs if key != "q" for part in (_CLI_OPTIONS[key], value)]
    result = runner("search", q, *options, "--json", "--index", fixture_index)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["query"] == echoed
    assert captured.pop() == expected


def test_the_default_page_size_is_the_same_for_the_api_and_the_cli(fixture_index, captured, runner):
    assert runner("search", "learning", "--index", fixture_index).exit_code == 0
    assert captured.pop().per_page == DEFAULT_PER_PAGE
    assert SearchRequest().facet_size == DEFAULT_FACET_SIZE
