"""SearchClient against a live gunicorn server: the same results and errors as in-process."""

from __future__ import annotations

import pytest

from searchsvc.client import SearchClient, ServiceUnreachable
from searchsvc.errors import IndexUnavailable, InvalidRequest, QueryError, RecordNotFound
from searchsvc.query import IndexStats, SearchResult
from searchsvc.service import SearchService
from tests.support import FIXTURE_RECORDS
from tests.test_gunicorn import free_port, live_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(live_server):  # noqa: F811
    with SearchClient(live_server.base_url) as client:
        yield client


def test_search_returns_the_same_result_objects_as_in_process(client, live_server):  # noqa: F811
    remote = client.search("learning", category=["cs.LG"], facets=["author", "year"], per_page=5)
    assert isinstance(remote, SearchResult)
    with SearchService.open(live_server.index_dir) as service:
        local = service.search(
            "learning", category=["cs.LG"], facets=["author", "year"], per_page=5
        )
    assert remote.total == local.total == 2
    assert [hit.record for hit in remote.hits] == [hit.record for hit in local.hits]
    # Scores travel rounded (to 4 places), so compare them as the API shows them.
    assert [hit.to_dict() for hit in remote.hits] == [hit.to_dict() for hit in local.hits]
    assert remote.facets == local.facets
    assert remote.request.to_dict() == local.request.to_dict()


def test_filters_sort_and_paging_reach_the_server(client):
    result = client.search(author="Aditya Akella", year_from=2022, sort="oldest", highlight=False)
    assert [hit.record.id for hit in result.hits] == ["2201.00002"]
    assert result.request.sort == "oldest" and result.request.highlight is False
    assert client.search(facets=[]).facets == {}


def test_records_similar_suggest_facets_author_stats(client):
    assert client.get("0704.0001") == FIXTURE_RECORDS[3]
    assert client.similar("2301.00001", limit=1)[0].record.id == "2201.00002"
    assert "Ada Lovelace" in client.suggest("ad").authors
    assert client.facet_values("author", "adi")[0].value == "Aditya Akella"
    view = client.author("Aditya Akella", per_page=1)
    assert view.total == 2 and len(view.records) == 1
    stats = client.stats()
    assert isinstance(stats, IndexStats) and stats.documents >= len(FIXTURE_RECORDS)
    assert client.version() == stats.version


def test_server_errors_come_back_as_the_domain_exceptions(client):
    with pytest.raises(RecordNotFound) as missing:
        client.get("0000.00000")
    assert missing.value.details["status"] == 404
    with pytest.raises(QueryError):
        client.search("(" * 40)
    with pytest.raises(InvalidRequest) as invalid:
        client.similar("2301.00001", limit=1000)
    assert "limit" in invalid.value.details["errors"]


def test_bad_arguments_fail_before_any_request(client):
    with pytest.raises(InvalidRequest):
        client.search(per_page=0)


def test_unreachable_service_raises_service_unreachable():
    with pytest.raises(ServiceUnreachable):
        SearchClient(f"http://127.0.0.1:{free_port()}", timeout=2).stats()


def test_index_unavailable_is_reported(tmp_path):
    from searchsvc.app import create_app

    # The test client speaks WSGI, not HTTP: plug it in through a requests transport adapter.
    app = create_app({"INDEX": tmp_path / "none", "TESTING": True})
    client = SearchClient("http://testserver", session=_wsgi_session(app))
    with pytest.raises(IndexUnavailable):
        client.search()


def _wsgi_session(app):
    import requests
    from requests.adapters import BaseAdapter

    class WSGIAdapter(BaseAdapter):
        def send(self, request, **kwargs):
            answer = app.test_client().open(
                request.path_url, method=request.method, headers=dict(request.headers)
            )
            response = requests.Response()
            response.status_code = answer.status_code
            response.headers.update(answer.headers)
            response._content = answer.get_data()
            response.url = request.url
            response.request = request
            return response

        def close(self):
            pass

    session = requests.Session()
    session.mount("http://testserver", WSGIAdapter())
    return session
