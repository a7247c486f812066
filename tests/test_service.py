"""The in-process Python API, SearchService, over real indexes."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from searchsvc.app import create_app
from searchsvc.backends import WriteResult
from searchsvc.backends.whoosh.accel.lexicon import Lexicon
from searchsvc.backends.whoosh.search import searcher as searcher_module
from searchsvc.domain.errors import (
    IndexUnavailable,
    InvalidRequest,
    QueryError,
    RecordNotFound,
    UnknownFacet,
)
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import Hit, IndexStats, SearchRequest, SearchResult, Suggestions
from searchsvc.extension import get_service
from searchsvc.service import SearchService
from tests.support import FIXTURE_RECORDS, build_index


@pytest.fixture(scope="module")
def service(fixture_index):
    with SearchService.open(fixture_index) as service:
        yield service


def test_search_with_keyword_arguments_returns_the_domain_result(service):
    result = service.search(q="learning", category=["cs.LG"], facets=["author"])
    assert isinstance(result, SearchResult)
    assert result.total == 2
    assert {hit.record.id for hit in result.hits} == {"2301.00001", "2201.00002"}
    assert set(result.facets) == {"author"}
    assert all(isinstance(hit, Hit) for hit in result.hits)


def test_single_filter_values_may_be_plain_strings_and_ints(service):
    assert service.search(author="Aditya Akella", year=2021).total == 1
    assert service.search(category="cs.DC").total == 2
    assert service.search(year="2021").total == 1


def test_filters_are_keywords_named_after_the_facets(service):
    result = service.search(author=["Aditya Akella", "Ada Lovelace"], category="cs.DC", year=2021)
    assert [hit.record.id for hit in result.hits] == ["2101.00003"]
    assert result.request.filters == {
        "author": ("Aditya Akella", "Ada Lovelace"),
        "category": ("cs.DC",),
        "year": (2021,),
    }
    assert result.request.selected("year") == ("2021",)
    # The request as run: the mode the service chose filled in (no vectors: lexical).
    assert result.request == SearchRequest.from_params(
        author=["Aditya Akella", "Ada Lovelace"], category="cs.DC", year=2021, mode="lexical"
    )


@pytest.mark.parametrize("keyword", ["colour", "authors", "categories", "pge"])
def test_an_unknown_keyword_is_invalid_request_naming_it(service, keyword):
    with pytest.raises(InvalidRequest) as caught:
        service.search("learning", **{keyword: "x"})
    assert caught.value.details["parameter"] == keyword
    assert ", ".join(FACET_NAMES) in caught.value.message


def test_a_malformed_query_is_a_query_error_with_its_position(service):
    with pytest.raises(QueryError) as caught:
        service.search("learning year:abc")
    assert caught.value.details["position"] == len("learning year:")


def test_search_request_runs_a_prepared_request(service):
    request = SearchRequest(q="congestion", highlight=False, facets=())
    result = service.search_request(request)
    assert [hit.record.id for hit in result.hits] == ["2101.00003"]
    assert result.request == replace(request, mode="lexical")


def test_same_answer_as_the_http_api(service, fixture_index):
    client = create_app({"INDEX": fixture_index, "TESTING": True}).test_client()
    body = client.get("/api/v1/search?q=learning&category=cs.LG").get_json()
    expected = service.search(q="learning", category=["cs.LG"]).to_dict()
    body.pop("took_ms"), expected.pop("took_ms")
    assert body == expected


@pytest.mark.parametrize(
    "kwargs", [{"per_page": 0}, {"sort": "random"}, {"facets": ["colour"]}, {"page": "1"}]
)
def test_bad_arguments_raise_invalid_request(service, kwargs):
    with pytest.raises(InvalidRequest):
        service.search(**kwargs)


def test_records_similar_suggest_facets_author(service):
    assert service.get("0704.0001") == FIXTURE_RECORDS[3]
    with pytest.raises(RecordNotFound):
        service.get("nope")
    similar = service.similar("2301.00001", limit=2)
    assert 0 < len(similar) <= 2
    assert isinstance(service.suggest("ad"), Suggestions)
    assert service.facet_values("category", "cs.d")[0].value == "cs.DC"
    assert [v.value for v in service.facet_values("author", limit=1)] == ["Aditya Akella"]
    assert service.author("Aditya Akella").total == 2
    assert {record.id for record in service.records()} == {r.id for r in FIXTURE_RECORDS}
    with pytest.raises(InvalidRequest):
        service.similar("2301.00001", limit=0)


def test_an_unknown_facet_is_unknown_facet_listing_the_facets(service):
    with pytest.raises(UnknownFacet) as caught:
        service.facet_values("colour")
    assert caught.value.details == {"facet": "colour", "facets": list(FACET_NAMES)}


def test_stats_top_limits_the_values_of_each_facet(service):
    stats = service.stats(top=3)
    assert stats.documents == len(FIXTURE_RECORDS)
    assert {name: len(values) for name, values in stats.facets.items()} == {
        "author": 3,
        "year": 3,
        "category": 3,
        "subject": 2,
    }
    assert [v.value for v in stats.facets["author"]][:2] == [
        "Aditya Akella",
        "Shivaram Venkataraman",
    ]
    assert stats.cardinalities == {"author": 6, "year": 5, "category": 5, "subject": 2}
    assert stats.facets["author"] == service.stats().facets["author"][:3]


def test_stats_are_reused_while_the_index_version_is_unchanged(service):
    stats = service.stats()
    assert isinstance(stats, IndexStats) and stats.documents == len(FIXTURE_RECORDS)
    assert stats.version == service.version()
    assert service.stats() is stats


def test_a_rebuilt_index_is_picked_up_without_reopening(tmp_path):
    build_index(tmp_path, FIXTURE_RECORDS[:1])
    with SearchService.open(tmp_path) as service:
        version, stats = service.version(), service.stats()
        assert stats.documents == 1
        extra = replace(FIXTURE_RECORDS[1], id="2402.00001", title="Brand New Paper")
        build_index(tmp_path, (FIXTURE_RECORDS[0], extra))
        deadline = time.monotonic() + 5
        while service.version() == version and time.monotonic() < deadline:
            time.sleep(0.05)
        assert service.version() != version
        assert service.stats().documents == 2
        assert service.get("2402.00001").title == "Brand New Paper"


def test_missing_index_raises_index_unavailable_until_one_is_built(tmp_path):
    with SearchService.open(tmp_path / "later") as service:
        with pytest.raises(IndexUnavailable):
            service.search()
        build_index(tmp_path / "later")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                assert service.search().total == len(FIXTURE_RECORDS)
                break
            except IndexUnavailable:
                time.sleep(0.05)
        else:
            pytest.fail("the new index was never picked up")


def test_get_service_is_one_service_per_app_reused_across_requests(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True})
    with app.app_context():
        first = get_service()
    with app.test_request_context("/"):
        assert get_service() is first
    other = create_app({"INDEX": fixture_index, "TESTING": True})
    with other.app_context():
        assert get_service() is not first


def test_warm_up_opens_the_index_or_says_why_not(service, tmp_path):
    service.warm_up()
    with SearchService.open(tmp_path / "none") as missing, pytest.raises(IndexUnavailable):
        missing.warm_up()


def test_warm_up_loads_the_words_did_you_mean_reads(fixture_index, monkeypatch):
    fresh = SearchService.open(fixture_index)  # nothing built yet, whatever ran before
    fresh.warm_up()

    def not_again(*args, **kwargs):
        raise AssertionError("loaded on a request, not by warm_up")

    monkeypatch.setattr(Lexicon, "read", not_again)
    monkeypatch.setattr(searcher_module, "load_terms", not_again)
    with fresh:
        assert fresh.search(q="schedulng").suggestion == "scheduling"


def test_upserts_and_deletes_are_visible_to_the_next_search_at_once(tmp_path):
    location = build_index(tmp_path / "index")
    new = replace(FIXTURE_RECORDS[0], id="2402.00009", title="A Quokka Survey")
    renamed = replace(FIXTURE_RECORDS[1], title="Learned Caches Revisited")
    with SearchService.open(location) as service:
        version = service.version()
        assert service.search("quokka").total == 0
        written = service.upsert([new, renamed])
        assert isinstance(written, WriteResult)
        assert (written.added, written.replaced, written.deleted) == (1, 1, 0)
        assert [hit.record.id for hit in service.search("quokka").hits] == ["2402.00009"]
        assert service.get("2201.00002").title == "Learned Caches Revisited"
        assert service.search("revisited").total == 1
        assert service.version() != version
        assert service.stats().documents == len(FIXTURE_RECORDS) + 1

        deleted = service.delete(["2402.00009", "never-indexed"])
        assert (deleted.added, deleted.replaced, deleted.deleted) == (0, 0, 1)
        assert service.search("quokka").total == 0
        with pytest.raises(RecordNotFound):
            service.get("2402.00009")
        assert service.search().total == len(FIXTURE_RECORDS)


def test_an_upsert_of_the_same_id_twice_keeps_the_last(tmp_path):
    location = build_index(tmp_path / "index", FIXTURE_RECORDS[:1])
    first = replace(FIXTURE_RECORDS[1], id="dup", title="First Version")
    last = replace(first, title="Last Version")
    with SearchService.open(location) as service:
        assert service.upsert([first, last]).added == 1
        assert service.get("dup").title == "Last Version"


def test_the_service_is_importable_from_the_package():
    import searchsvc

    assert searchsvc.SearchService is SearchService


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda s: s.search("x", highlight="no"), "highlight"),
        (lambda s: s.search("x", author=None), "author"),
        (lambda s: s.search("x", year=2023.0), "year"),
        (lambda s: s.search("x", facets=None), "facets"),
        (lambda s: s.get(None), "id"),
        (lambda s: s.get(""), "id"),
        (lambda s: s.similar(None), "id"),
        (lambda s: s.suggest(None), "prefix"),
        (lambda s: s.facet_values("year", None), "prefix"),
        (lambda s: s.author(None), "name"),
        (lambda s: s.stats(top=0), "top"),
        (lambda s: s.stats(top="a"), "top"),
        (lambda s: s.upsert([None]), "records"),
        (lambda s: s.upsert(FIXTURE_RECORDS[0]), "records"),
        (lambda s: s.delete([None]), "id"),
        (lambda s: s.delete(7), "ids"),
    ],
)
def test_a_bad_argument_is_an_invalid_request_naming_it(service, call, parameter):
    with pytest.raises(InvalidRequest) as caught:
        call(service)
    assert caught.value.details["parameter"] == parameter


def test_delete_takes_one_id_as_well_as_many(tmp_path):
    with SearchService.open(build_index(tmp_path / "index")) as service:
        assert service.delete(FIXTURE_RECORDS[0].id).deleted == 1
        assert service.delete([FIXTURE_RECORDS[1].id, FIXTURE_RECORDS[2].id]).deleted == 2
        assert service.search().total == len(FIXTURE_RECORDS) - 3


def test_a_search_parses_its_query_once_on_every_surface(fixture_index, monkeypatch):
    # The service and the page copy a request (its mode, the page's subject counts, the pager's
    # links) without parsing q again.
    import searchsvc.domain.query as query_module

    parsed: list[str] = []
    real_parse = query_module.parse_query

    def counting(text: str):
        parsed.append(text)
        return real_parse(text)

    monkeypatch.setattr(query_module, "parse_query", counting)
    with SearchService.open(fixture_index) as service:
        service.search("learning OR caches", per_page=1)
    assert parsed.count("learning OR caches") == 1
    parsed.clear()
    client = create_app({"INDEX": fixture_index, "TESTING": True}).test_client()
    assert client.get("/?q=learning+OR+caches&per_page=1").status_code == 200
    assert parsed.count("learning OR caches") == 1
    request = SearchRequest(q="learning OR caches")
    evolved = request.evolve(page=3, facets=(), mode="lexical")
    assert evolved.tree is request.tree and (evolved.page, evolved.mode) == (3, "lexical")
    with pytest.raises(InvalidRequest):
        request.evolve(per_page=1000)
