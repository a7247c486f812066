"""The in-process Python API, SearchService, over real indexes."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from searchsvc.app import create_app
from searchsvc.backends.whoosh.accel.lexicon import Lexicon
from searchsvc.backends.whoosh.search import searcher as searcher_module
from searchsvc.errors import IndexUnavailable, InvalidRequest, RecordNotFound
from searchsvc.extension import get_service
from searchsvc.query import Hit, IndexStats, SearchRequest, SearchResult, Suggestions
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


def test_search_request_runs_a_prepared_request(service):
    request = SearchRequest(q="congestion", highlight=False, facets=())
    result = service.search_request(request)
    assert [hit.record.id for hit in result.hits] == ["2101.00003"]
    assert result.request == request


def test_same_answer_as_the_http_api(service, fixture_index):
    client = create_app({"INDEX_DIR": fixture_index, "TESTING": True}).test_client()
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
    assert service.author("Aditya Akella").total == 2
    assert {record.id for record in service.records()} == {r.id for r in FIXTURE_RECORDS}
    with pytest.raises(InvalidRequest):
        service.similar("2301.00001", limit=0)


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
    app = create_app({"INDEX_DIR": fixture_index, "TESTING": True})
    with app.app_context():
        first = get_service()
    with app.test_request_context("/"):
        assert get_service() is first
    other = create_app({"INDEX_DIR": fixture_index, "TESTING": True})
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
