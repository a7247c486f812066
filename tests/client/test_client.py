"""SearchClient against live gunicorn servers: the same results and errors as in-process, and
writes through the task queue."""

from __future__ import annotations

from dataclasses import replace

import pytest

from searchsvc.client import (
    AuthenticationError,
    PermissionDenied,
    RateLimited,
    SearchClient,
    ServiceUnreachable,
    TaskTimeout,
)
from searchsvc.domain.errors import (
    IndexUnavailable,
    InvalidRequest,
    KeyQueueFull,
    PayloadTooLarge,
    QueryError,
    RecordNotFound,
    TaskNotFound,
)
from searchsvc.domain.query import IndexStats, SearchResult
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from searchsvc.tasks import Task, TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.serving.test_gunicorn import free_port, gunicorn, live_server, wait_until  # noqa: F401
from tests.support import FIXTURE_RECORDS, build_index

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
            # Uncompressed: the raw body goes into the Response as it is, never gunzipped.
            headers = {**request.headers, "Accept-Encoding": "identity"}
            answer = app.test_client().open(
                request.path_url, method=request.method, headers=headers, data=request.body
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


# -- writes ------------------------------------------------------------------------------------
# A gunicorn of their own (its workers run the task writer): these tests change its index.


@pytest.fixture(scope="module")
def writable_server(tmp_path_factory):
    with gunicorn(tmp_path_factory.mktemp("writes")) as (server, _):
        yield server


@pytest.fixture(scope="module")
def keys(writable_server) -> dict[str, str]:
    """A key of each scope, made in the server's queue database as `searchsvc keys` makes them."""
    store = KeyStore(TaskQueue(queue_path(writable_server.index_dir)))
    return {scope: store.create(f"test-{scope}", (scope,))[1] for scope in ("read", "write")}


@pytest.fixture
def writer(writable_server, keys):
    with SearchClient(writable_server.base_url, api_key=keys["write"]) as client:
        yield client


def new_record(number: int, title: str = "Zeppelin Routing for Queued Writes") -> Record:
    return replace(FIXTURE_RECORDS[0], id=f"2409.{number:05d}", title=f"{title} {number}")


def found(client: SearchClient, record_id: str) -> Record | None:
    try:
        return client.get(record_id)
    except RecordNotFound:
        return None


def test_added_records_are_searchable_once_their_task_is_waited_for(writer):
    record = new_record(1)
    as_dict = {"id": "2409.00002", "title": "Dirigible Routing", "authors": ["Ada Lovelace"]}
    [task] = writer.add([record, as_dict])
    assert isinstance(task, Task) and task.kind == "upsert" and task.size == 2
    assert task.status == "enqueued"
    done = writer.wait(task)
    assert done.id == task.id and done.status == "succeeded" and done.error is None
    # The writer's worker sees the batch at once, the other one within its refresh: a read
    # may reach either.
    assert wait_until(lambda: writer.search("zeppelin").total == 1)
    assert wait_until(lambda: writer.search("dirigible").total == 1)
    assert wait_until(lambda: found(writer, record.id) == record)
    # One record, not in a list, is one too.
    assert writer.wait(writer.add(new_record(3))[0].id).status == "succeeded"


def test_delete_queues_a_task_that_task_reads_and_removes_the_record(writer):
    record = new_record(10)
    writer.wait(writer.add(record)[0])
    task = writer.delete(record.id)
    assert task.kind == "delete" and task.size == 1
    assert writer.task(task.id).id == task.id
    assert writer.wait(task).status == "succeeded"
    assert writer.task(task.id).status == "succeeded"
    assert wait_until(lambda: found(writer, record.id) is None)
    assert writer.wait(writer.delete([new_record(11).id, "never-indexed"])).size == 2


def test_many_records_go_in_several_requests_one_task_each(writer, monkeypatch):
    monkeypatch.setattr(SearchClient, "records_per_request", 2)
    records = [new_record(20 + n, "Airship Scheduling") for n in range(5)]
    tasks = writer.add(iter(records))
    assert [task.size for task in tasks] == [2, 2, 1]
    assert [writer.wait(task).status for task in tasks] == ["succeeded"] * 3
    assert wait_until(lambda: writer.search('"airship scheduling"').total == 5)


def test_a_bad_record_raises_invalid_request_listing_its_position(writer):
    bad = {"id": "2409.00030", "year": "1999"}
    with pytest.raises(InvalidRequest) as refused:
        writer.add([new_record(31), bad])
    details = refused.value.details
    assert details["status"] == 400
    assert {(error["position"], error["field"]) for error in details["errors"]} == {
        (1, "title"),
        (1, "year"),
    }
    with pytest.raises(InvalidRequest):
        writer.add([])


def test_a_bad_record_in_a_later_request_counts_its_position_in_the_whole_input(
    writer, monkeypatch
):
    monkeypatch.setattr(SearchClient, "records_per_request", 2)
    records = [new_record(40).to_dict(), new_record(41).to_dict(), new_record(42).to_dict()]
    records.append({"id": "2409.00043"})
    with pytest.raises(InvalidRequest) as refused:
        writer.add(records)
    assert [error["position"] for error in refused.value.details["errors"]] == [3]
    [queued] = refused.value.details["queued"]
    assert queued.size == 2 and "records 2 to 3" in refused.value.message


def test_unknown_tasks_raise_task_not_found(writer):
    with pytest.raises(TaskNotFound) as missing:
        writer.wait(10**9)
    assert missing.value.details["status"] == 404
    with pytest.raises(TaskNotFound):
        writer.task(10**9)


def test_no_key_or_an_unknown_one_raises_authentication_error(writable_server):
    unknown = "ssk_000000000000_" + "a" * 43
    for api_key in (None, unknown):
        with SearchClient(writable_server.base_url, api_key=api_key) as client:
            with pytest.raises(AuthenticationError) as refused:
                client.add(new_record(50))
            assert refused.value.details["status"] == 401
            with pytest.raises(AuthenticationError):
                client.task(1)
            assert client.search("learning").total >= 2  # reads need no key here


def test_a_key_without_the_write_scope_raises_permission_denied(writable_server, keys):
    with SearchClient(writable_server.base_url, api_key=keys["read"]) as client:
        with pytest.raises(PermissionDenied) as refused:
            client.add(new_record(60))
        assert refused.value.details["status"] == 403
        with pytest.raises(PermissionDenied):
            client.delete("2409.00060")
        with pytest.raises(PermissionDenied):
            client.wait(1)


# In-process apps (no writer runs in them, so tasks stay queued), with their own settings.


def writable_app(tmp_path, **settings):
    """An app over a fresh index with `settings`, and a write key of its queue."""
    from searchsvc.app import create_app

    index = build_index(tmp_path / "index")
    app = create_app({"INDEX": index, "TESTING": True, **settings})
    _, key = KeyStore(TaskQueue(queue_path(index))).create("test", ("read", "write"))
    return app, key


def test_wait_raises_task_timeout_with_the_unfinished_task(tmp_path):
    app, key = writable_app(tmp_path)
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    [task] = client.add(new_record(70))
    with pytest.raises(TaskTimeout) as timed_out:
        client.wait(task, timeout=0.2)
    assert isinstance(timed_out.value, TimeoutError)
    assert timed_out.value.task.id == task.id and timed_out.value.task.status == "enqueued"


def test_requests_over_the_limits_raise_payload_too_large(tmp_path):
    app, key = writable_app(tmp_path, MAX_BATCH_RECORDS=2, MAX_WRITE_CONTENT_LENGTH=2000)
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    with pytest.raises(PayloadTooLarge) as too_many:
        client.add([new_record(80), new_record(81), new_record(82)])
    assert too_many.value.details["status"] == 413
    with pytest.raises(PayloadTooLarge):  # the body is over the size limit
        client.add(replace(new_record(83), abstract="x" * 3000))


def test_too_many_writes_raise_rate_limited_with_retry_after(tmp_path):
    app, key = writable_app(tmp_path, WRITE_RATE_LIMIT="2/year")
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    client.add(new_record(90))
    client.add(new_record(91))
    with pytest.raises(RateLimited) as limited:
        client.add(new_record(92))
    assert limited.value.details["status"] == 429 and limited.value.details["retry_after"] > 0


def test_the_key_is_sent_on_reads_too(tmp_path):
    app, key = writable_app(tmp_path, REQUIRE_KEY_FOR_READS=True)
    with pytest.raises(AuthenticationError):
        SearchClient("http://testserver", session=_wsgi_session(app)).search("learning")
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    assert client.search("learning").total == 2


def test_a_full_backlog_raises_key_queue_full_with_retry_after(tmp_path):
    app, key = writable_app(tmp_path, QUEUE_MAX_BYTES_PER_KEY=1)
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    client.add(new_record(95))  # into an empty backlog: taken whatever its size
    with pytest.raises(KeyQueueFull) as full:
        client.add(new_record(96))
    assert full.value.details["status"] == 429 and full.value.details["retry_after"] > 0


def test_wait_pauses_when_the_service_answers_a_wait_at_once(tmp_path, monkeypatch):
    app, key = writable_app(tmp_path, MAX_WAITS_PER_KEY=1)
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    [task] = client.add(new_record(97))
    queue = TaskQueue(queue_path(app.config["INDEX"]))
    asked = []
    get = client._get
    monkeypatch.setattr(client, "_get", lambda *args: asked.append(args) or get(*args))
    key_id = key.split("_")[1]
    with queue.wait_slot(key_id, 1) as held:  # another request of the key holds its one wait
        assert held
        with pytest.raises(TaskTimeout):
            client.wait(task, timeout=1.5)
    assert len(asked) <= 3


def test_a_bulk_load_larger_than_the_queue_takes_is_paced_to_the_writer(tmp_path, monkeypatch):
    from searchsvc.backends import open_backend
    from searchsvc.tasks import TaskWriter
    from searchsvc.tasks import queue as queue_module

    monkeypatch.setattr(SearchClient, "records_per_request", 2)
    monkeypatch.setattr(queue_module, "BACKLOG_RETRY_SECONDS", 1)
    app, key = writable_app(tmp_path, QUEUE_MAX_BYTES_PER_KEY=1)
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    queue = TaskQueue(queue_path(app.config["INDEX"]))
    with open_backend(app.config["INDEX"]) as backend:
        thread, stop = TaskWriter(queue, backend).start_thread()
        try:
            # One request's records at a time fit in the key's backlog: the rest wait for room.
            tasks = client.add([new_record(100 + n) for n in range(6)])
            assert len(tasks) == 3
            assert [client.wait(task).status for task in tasks] == ["succeeded"] * 3
        finally:
            stop.set()
            thread.join()
