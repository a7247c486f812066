"""Solr's failures as the service's own errors, at every entry point (API, web page, CLI, Python).

- A malformed `solr://` location is refused with InvalidLocation naming the problem, by the CLI
  (one `error:` line, exit 1) and when the app starts.
- Nodes that do not answer (a closed port), a collection that does not exist yet: 503
  `index_unavailable` in the API's one error shape, a not-ready /readyz, a 503 web page, one CLI
  line; /metrics and /healthz keep answering.
- Solr refusing a request is InvalidRequest (400), its other failures IndexUnavailable (503),
  and none of Solr's Java class names or stack traces reach a response.

The first parts need no cluster: a closed port, and a fake Solr on a local port answering what
a failing Solr answers. The parts that need a real SolrCloud are marked `slow`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from searchsvc.app import create_app
from searchsvc.backends import open_backend
from searchsvc.backends.solr import search as solr_search
from searchsvc.backends.solr.connection import SolrConnection
from searchsvc.backends.solr.location import parse_location
from searchsvc.cli import main
from searchsvc.domain.errors import IndexUnavailable, InvalidLocation, InvalidRequest
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, TaskWriter
from tests.support import FIXTURE_RECORDS, build_index

SEARCHSVC = Path(sys.executable).with_name("searchsvc")
# What must never reach a client: Java stack frames, exception class names, tracebacks.
LEAKS = ("at org.apache", "org.apache", "Exception", "java.", "Traceback")
READ_PATHS = (
    "/api/v1/search?q=learning",
    "/api/v1/search?q=sched*&facets=author,year",
    "/api/v1/search.atom?q=learning",
    "/api/v1/records/2301.00001",
    "/api/v1/records/2301.00001/similar",
    "/api/v1/suggest?q=sched",
    "/api/v1/facets/author?q=ak",
    "/api/v1/authors/Aditya%20Akella",
    "/api/v1/stats",
)
WEB_PATHS = ("/", "/?q=learning", "/records/2301.00001", "/authors/Aditya%20Akella")


def run(*args: object):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def assert_one_line_error(result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: "), result.output
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output


def assert_no_leak(text: str) -> None:
    for leak in LEAKS:
        assert leak not in text, (leak, text[:2000])


def assert_error(response, status: int, code: str) -> dict:
    """The API's one error shape, with its status and code; nothing of Solr's internals."""
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert list(body) == ["error"]
    error = body["error"]
    assert list(error) == ["status", "code", "message", "details"]
    assert (error["status"], error["code"]) == (status, code)
    assert error["message"] and "\n" not in error["message"]
    if status == 503:
        assert response.headers["Retry-After"]
    assert_no_leak(response.get_data(as_text=True))
    return error


def closed_port() -> int:
    """A port nothing listens on (bound by the kernel's choice, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def down_location() -> str:
    """A well-formed location whose only node does not answer."""
    return f"solr://127.0.0.1:{closed_port()}/solr/papers"


# -- (a) malformed locations -----------------------------------------------------------------
MALFORMED = [
    pytest.param("solr://bad", "/solr/COLLECTION", id="no-path"),
    pytest.param("solr://127.0.0.1:8983/solr", "/solr/COLLECTION", id="no-collection"),
    pytest.param("solr://127.0.0.1:8983/solr/", "/solr/COLLECTION", id="empty-collection"),
    pytest.param("solr://127.0.0.1:8983/solr/a/b", "/solr/COLLECTION", id="extra-path"),
    pytest.param("solr://127.0.0.1:99999/solr/papers", "port 99999", id="port-too-high"),
    pytest.param("solr://127.0.0.1:0/solr/papers", "port 0", id="port-zero"),
    pytest.param(
        "solr://127.0.0.1:8983,127.0.0.1:70000/solr/papers", "port 70000", id="second-port"
    ),
    pytest.param("solr://127.0.0.1:port/solr/papers", "HOST:PORT", id="port-not-a-number"),
    pytest.param("solr:///solr/papers", "HOST:PORT", id="no-host"),
    pytest.param("solr://127.0.0.1:8983/solr/papers?colour=red", "unknown option 'colour'"),
    pytest.param("solr://127.0.0.1:8983/solr/papers?shards=0", "shards", id="shards-0"),
    pytest.param("solr://127.0.0.1:8983/solr/papers?shards=two", "shards", id="shards-word"),
    pytest.param("solr://127.0.0.1:8983/solr/papers?replicas=9", "replicas", id="replicas-9"),
    pytest.param("solr://127.0.0.1:8983/solr/papers?timeout=0", "timeout", id="timeout-0"),
    pytest.param("solr://127.0.0.1:8983/solr/pa%20pers", "no Solr collection name", id="name"),
    pytest.param("solr:127.0.0.1:8983/solr/papers", "solr://", id="no-slashes"),
]


@pytest.mark.parametrize(("location", "message"), MALFORMED)
def test_a_malformed_location_is_one_line_at_the_command_line(location, message):
    for command in (["search", "x"], ["stats"], ["export"]):
        assert_one_line_error(run(*command, "--index", location), message)


@pytest.mark.parametrize(("location", "message"), MALFORMED)
def test_a_malformed_location_stops_the_app_at_start_up(location, message, monkeypatch):
    with pytest.raises(InvalidLocation) as refused:
        create_app({"INDEX": location, "TESTING": True})
    assert message in refused.value.message
    # From the environment, as gunicorn's workers get it.
    monkeypatch.setenv("SEARCHSVC_INDEX", location)
    with pytest.raises(InvalidLocation) as from_environment:
        create_app({"TESTING": True})
    assert message in from_environment.value.message
    # And in Python.
    with pytest.raises(InvalidLocation):
        SearchService.open(location)


def test_a_malformed_location_is_refused_before_reading_the_sources(seeds_dir, tmp_path):
    tasks_db = tmp_path / "tasks.sqlite3"
    result = run("index", seeds_dir, "--index", "solr://127.0.0.1:8983/solr/papers?shards=0")
    assert_one_line_error(result, "shards in a Solr location is a whole number from 1 to 64")
    update = run("index", seeds_dir, "--update", "--index", "solr://h:1/solr")
    assert_one_line_error(update, "/solr/COLLECTION")
    keys = run("keys", "create", "app", "--index", "solr://h:12x/solr/x", "--tasks-db", tasks_db)
    assert_one_line_error(keys, "HOST:PORT")
    assert not tasks_db.exists()


def test_the_real_command_prints_one_line_and_no_traceback():
    result = subprocess.run(
        [str(SEARCHSVC), "search", "x", "--index", "solr://bad"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert "/solr/COLLECTION" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_gunicorn_refuses_a_malformed_location_in_one_line(tmp_path):
    from tests.serving.test_gunicorn import GUNICORN, ROOT, free_port

    env = {
        **os.environ,
        "SEARCHSVC_INDEX": "solr://127.0.0.1:8983/solr/papers?shards=0",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    command = [str(GUNICORN), "--config", "python:searchsvc.serving.gunicorn_conf"]
    command += ["--bind", f"127.0.0.1:{free_port()}", "wsgi:app"]
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode != 0
    assert "error: shards in a Solr location is a whole number from 1 to 64" in result.stderr
    assert "Traceback" not in result.stderr and "Worker failed to boot" not in result.stderr


def test_a_well_formed_location_is_taken_as_it_is():
    parsed = parse_location("solr://a:8983,b:8984/solr/papers?shards=3&replicas=1&timeout=2.5")
    assert parsed.hosts == ("a:8983", "b:8984")
    assert (parsed.collection, parsed.shards, parsed.replicas, parsed.timeout) == (
        "papers",
        3,
        1,
        2.5,
    )
    assert parse_location(parsed.url) == parsed
    # The app starts without reaching Solr.
    create_app({"INDEX": parsed.url, "TESTING": True})


# -- (b) nodes that do not answer ------------------------------------------------------------
@pytest.fixture
def down_client(down_location):
    return create_app({"INDEX": down_location, "TESTING": True}).test_client()


@pytest.mark.parametrize("path", READ_PATHS)
def test_the_api_answers_503_when_no_node_answers(down_client, down_location, path):
    error = assert_error(down_client.get(path), 503, "index_unavailable")
    assert error["message"] == f"no Solr node of {down_location} answered"


def test_readyz_says_not_ready_and_healthz_and_metrics_still_answer(down_client):
    assert_error(down_client.get("/readyz"), 503, "index_unavailable")
    assert down_client.get("/healthz").get_json() == {"status": "ok"}
    metrics = down_client.get("/metrics")
    assert metrics.status_code == 200
    assert "searchsvc_http_requests_total" in metrics.get_data(as_text=True)


@pytest.mark.parametrize("path", WEB_PATHS)
def test_the_web_page_says_search_is_unavailable_without_a_trace(down_client, path):
    response = down_client.get(path, headers={"Accept": "text/html"})
    assert response.status_code == 503
    page = response.get_data(as_text=True)
    assert "Search is not available right now" in page
    # The operator's message (node addresses) is logged, not shown.
    assert "Solr" not in page
    assert_no_leak(page)


@pytest.mark.parametrize(
    "command",
    [["search", "learning"], ["stats"], ["export"], ["search", "--json"]],
    ids=" ".join,
)
def test_the_cli_prints_one_line_when_no_node_answers(down_location, command):
    assert_one_line_error(run(*command, "--index", down_location), "no Solr node of")


def test_a_build_or_an_update_fails_in_one_line_before_reading(down_location, seeds_dir):
    for extra in ([], ["--update"]):
        result = run("index", seeds_dir, "--index", down_location, *extra)
        assert_one_line_error(result, f"no Solr node of {down_location} answered")


def test_an_update_through_the_queue_says_its_task_stays_queued(down_location, tmp_path):
    source = tmp_path / "more.jsonl"
    source.write_text(json.dumps({"id": "later-1", "title": "Applied later"}) + "\n")
    tasks_db = tmp_path / "tasks.sqlite3"
    result = run("index", source, "--update", "--index", down_location, "--tasks-db", tasks_db)
    assert_one_line_error(result, "no Solr node of")
    assert "(task 1 stays queued: a writer applies it once the index can be written)" in (
        result.stderr
    )
    (task,) = TaskQueue(tasks_db).tasks()
    assert (task.status, task.origin) == ("enqueued", "cli")


def test_the_python_api_raises_index_unavailable(down_location):
    with SearchService.open(down_location) as service:
        with pytest.raises(IndexUnavailable, match="no Solr node"):
            service.search("learning")
        with pytest.raises(IndexUnavailable):
            service.get("2301.00001")


def test_writes_are_accepted_while_solr_is_down_and_kept_queued(down_location, tmp_path):
    tasks_db = tmp_path / "tasks.sqlite3"
    app = create_app(
        {"INDEX": down_location, "TASKS_DB": str(tasks_db), "TESTING": True, "WRITE_RATE_LIMIT": ""}
    )
    created = run("keys", "create", "app", "--index", down_location, "--tasks-db", tasks_db)
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    accepted = app.test_client().post(
        "/api/v1/records",
        json={"id": "queued-1", "title": "Written while Solr is down"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert accepted.status_code == 202
    queue = TaskQueue(tasks_db)
    with open_backend(down_location) as backend, pytest.raises(IndexUnavailable):
        TaskWriter(queue, backend).apply_next_batch()
    # Put back for the writer's next try, not failed.
    assert queue.get(accepted.get_json()["id"]).status == "enqueued"


def test_without_a_tasks_db_writes_say_what_to_set(down_location):
    client = create_app({"INDEX": down_location, "TESTING": True}).test_client()
    response = client.post(
        "/api/v1/records", json={"id": "a", "title": "T"}, headers={"Authorization": "Bearer x"}
    )
    error = assert_error(response, 503, "task_queue_unavailable")
    assert "SEARCHSVC_TASKS_DB" in error["message"]
    result = run("keys", "create", "app", "--index", down_location)
    assert_one_line_error(result, "set SEARCHSVC_TASKS_DB (--tasks-db")


# -- (d) without a cluster: a fake Solr answering as a failing one does ----------------------
SOLR_TRACE = (
    "org.apache.solr.common.SolrException: boom\n"
    "\tat org.apache.solr.handler.component.SearchHandler.handleRequestBody(SearchHandler.java:1)\n"
    "\tat org.apache.solr.handler.RequestHandlerBase.handleRequest(RequestHandlerBase.java:2)\n"
)


def solr_error(code: int, message: str) -> bytes:
    """A Solr error answer as Solr 9 writes it (wt=json), stack trace included."""
    return json.dumps(
        {
            "responseHeader": {"status": code, "QTime": 1},
            "error": {
                "metadata": ["error-class", "org.apache.solr.common.SolrException"],
                "msg": message,
                "trace": SOLR_TRACE,
                "code": code,
            },
        }
    ).encode()


JETTY_500 = (
    b"<html><body><h2>HTTP ERROR 500 java.lang.NullPointerException</h2><pre>"
    + SOLR_TRACE.encode()
    + b"</pre></body></html>"
)
# What a fake node answers: (status, content type, body, seconds to wait first).
Answer = tuple[int, str, bytes, float]


@contextmanager
def fake_solr(answer: Answer) -> Iterator[str]:
    """A local HTTP server answering every request with `answer`; its `solr://` location."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            status, content_type, body, delay = answer
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            if delay:
                time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the slow answer)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"solr://127.0.0.1:{server.server_address[1]}/solr/papers?timeout=1"
    finally:
        server.shutdown()
        server.server_close()


JSON = "application/json;charset=utf-8"
FAKE_ANSWERS = [
    pytest.param(
        (400, JSON, solr_error(400, "org.apache.solr.search.SyntaxError: Cannot parse 'x'"), 0),
        400,
        "invalid_parameter",
        "Solr refused the request: Cannot parse 'x'",
        id="refused",
    ),
    pytest.param(
        (400, JSON, solr_error(400, "sort param field can't be found: nosuch"), 0),
        400,
        "invalid_parameter",
        "Solr refused the request: sort param field can't be found: nosuch",
        id="bad-sort",
    ),
    pytest.param(
        (500, JSON, solr_error(500, "java.lang.NullPointerException"), 0),
        503,
        "index_unavailable",
        "Solr could not answer (HTTP 500)",
        id="server-error",
    ),
    pytest.param(
        (500, "text/html", JETTY_500, 0),
        503,
        "index_unavailable",
        "Solr could not answer (HTTP 500)",
        id="html-error-page",
    ),
    pytest.param(
        (503, JSON, solr_error(503, "no servers hosting shard: shard2"), 0),
        503,
        "index_unavailable",
        "no servers hosting shard",
        id="shard-down",
    ),
    pytest.param(
        (404, "text/html", b"<html>Not Found</html>", 0),
        503,
        "index_unavailable",
        "there is no index in the Solr collection 'papers' yet",
        id="no-collection",
    ),
    pytest.param(
        (200, "text/html", b"<html>a proxy's login page</html>", 0),
        503,
        "index_unavailable",
        "Solr could not answer",
        id="not-json",
    ),
    pytest.param(
        (200, JSON, b"{}", 3.0),
        503,
        "index_unavailable",
        "Solr did not answer within 1 s",
        id="too-slow",
    ),
]


@pytest.mark.parametrize(("answer", "status", "code", "message"), FAKE_ANSWERS)
def test_solr_failures_become_the_services_errors(answer, status, code, message):
    with fake_solr(answer) as location:
        client = create_app({"INDEX": location, "TESTING": True}).test_client()
        error = assert_error(client.get("/api/v1/search?q=learning"), status, code)
        assert message in error["message"]
        assert error["details"].get("engine") == "solr"
        page = client.get("/?q=learning", headers={"Accept": "text/html"})
        assert page.status_code == status
        assert_no_leak(page.get_data(as_text=True))
        result = run("search", "learning", "--index", location)
        assert_one_line_error(result, message)
        assert_no_leak(result.output)


@contextmanager
def gunicorn_on(location: str, root: Path) -> Iterator[tuple[str, Path]]:
    """The Makefile's gunicorn (one worker, its default timeout) serving `location`, once it
    answers /healthz (/readyz would not: the index is unavailable); its URL and log."""
    from tests.serving.test_gunicorn import serving

    log = root / "gunicorn.log"
    env = {
        "SEARCHSVC_WORKERS": "1",
        "SEARCHSVC_TIMEOUT": None,  # gunicorn's default, which a read must beat
        "PROMETHEUS_MULTIPROC_DIR": str(root / "metrics"),
    }
    # The worker warms up first (a search, which waits for Solr's timeout).
    with serving(location, log, env, ready="/healthz", wait=120) as (base_url, _):
        yield base_url, log


@pytest.mark.slow
def test_a_hanging_solr_is_a_503_before_gunicorn_kills_the_worker(tmp_path):
    """With the default timeouts a read gives up on Solr before gunicorn's worker timeout (30 s):
    the client gets the service's 503, not a killed worker's empty 500."""
    with fake_solr((200, JSON, b"{}", 120.0)) as location:
        default_timeout = location.split("?")[0]
        with gunicorn_on(default_timeout, tmp_path) as (base_url, log):
            response = requests.get(f"{base_url}/api/v1/search?q=learning", timeout=120)
            ready = requests.get(f"{base_url}/readyz", timeout=120)
    assert response.status_code == 503, response.text[:500]
    error = response.json()["error"]
    assert error["code"] == "index_unavailable"
    assert error["message"].startswith("Solr did not answer within ")
    assert ready.status_code == 503
    text = log.read_text()
    assert "WORKER TIMEOUT" not in text and "Traceback" not in text


def test_a_refused_request_is_invalid_request_through_the_connection():
    answer = (400, JSON, solr_error(400, "org.apache.solr.search.SyntaxError: Cannot parse"), 0)
    with fake_solr(answer) as location:
        connection = SolrConnection(parse_location(location))
        try:
            with pytest.raises(InvalidRequest) as refused:
                connection.get("select", {"q": "*:*", "sort": "nosuch asc"})
        finally:
            connection.close()
    assert refused.value.message == "Solr refused the request: Cannot parse"
    assert_no_leak(refused.value.message)


# -- (c) and (d) on a real SolrCloud --------------------------------------------------------
def location_on(hosts: str, name: str) -> str:
    return f"solr://{hosts}/solr/errors{os.getpid()}_{name}?replicas=1"


@pytest.fixture(scope="module")
def fixture_location(solr_hosts) -> Iterator[str]:
    """The five fixture records in a collection of their own."""
    from tests.solr.support import drop_collections

    location = build_index(location_on(solr_hosts, "fixture"), FIXTURE_RECORDS)
    yield location
    drop_collections(location)


@pytest.mark.slow
def test_a_collection_not_made_yet_is_503_no_index_yet(solr_hosts, tmp_path):
    location = location_on(solr_hosts, "never_made")
    collection = parse_location(location).collection
    client = create_app({"INDEX": location, "TESTING": True}).test_client()
    for path in (*READ_PATHS, "/readyz"):
        error = assert_error(client.get(path), 503, "index_unavailable")
        assert error["message"] == f"there is no index in the Solr collection {collection!r} yet"
    assert client.get("/metrics").status_code == 200
    for path in WEB_PATHS:
        page = client.get(path, headers={"Accept": "text/html"})
        assert page.status_code == 503
        assert "Search is not available right now" in page.get_data(as_text=True)
    for command in (["search", "learning"], ["stats"], ["export"]):
        assert_one_line_error(run(*command, "--index", location), "no index")
    with SearchService.open(location) as service, pytest.raises(IndexUnavailable, match="no index"):
        service.search("learning")


@pytest.mark.slow
def test_a_collection_of_an_older_document_layout_is_refused_until_rebuilt(solr_hosts):
    from tests.solr.support import drop_collections

    location = build_index(location_on(solr_hosts, "old_layout"), FIXTURE_RECORDS)
    try:
        with open_backend(location) as backend:
            # What an earlier searchsvc left: its meta document had no layout number.
            _, meta = backend._meta(force=True)
            backend._commit(backend.collections.target(), {**meta, "layout": 1})
            backend._meta(force=True)
            with pytest.raises(IndexUnavailable, match="rebuild it") as refused:
                backend.search(SearchRequest(q="learning"))
            assert_no_leak(refused.value.message)
            for read in (
                lambda: backend.facet_values("subject"),
                lambda: backend.author("Ada Lovelace"),
                backend.stats,
            ):
                with pytest.raises(IndexUnavailable, match="rebuild it"):
                    read()
            with pytest.raises(IndexUnavailable, match="rebuild it"):
                backend.upsert([FIXTURE_RECORDS[0]])
            backend.rebuild(FIXTURE_RECORDS)
            backend._meta(force=True)
            assert backend.search(SearchRequest()).total == len(FIXTURE_RECORDS)
    finally:
        drop_collections(location)


@pytest.mark.slow
def test_solr_refusing_a_request_is_invalid_request(fixture_location):
    connection = SolrConnection(parse_location(fixture_location))
    try:
        for params in (
            {"q": "*:*", "sort": "nosuchfield asc"},
            {"q": "title:("},
            {"q": "*:*", "rows": "many"},
            {"q": "{!nosuchparser}x"},
        ):
            with pytest.raises(InvalidRequest, match=r"^Solr refused the request: ") as refused:
                connection.get("select", params)
            assert_no_leak(refused.value.message)
            assert "\n" not in refused.value.message
        # Sent the way the backend sends searches, as a form.
        with pytest.raises(InvalidRequest, match="sort param field can't be found"):
            connection.post("select", [("q", "*:*"), ("sort", "nosuchfield asc")], form=True)
    finally:
        connection.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("patch", "message"),
    [
        pytest.param(
            lambda mp: mp.setitem(solr_search.SORTS, "title", "nosuchfield asc"),
            "sort param field can't be found: nosuchfield",
            id="sort",
        ),
        pytest.param(
            lambda mp: mp.setattr(solr_search, "RECORDS_ONLY", "kind:("),
            "Cannot parse 'kind:('",
            id="syntax",
        ),
    ],
)
def test_a_request_solr_refuses_is_a_400_without_solr_internals(
    fixture_location, monkeypatch, patch: Callable, message: str
):
    """A search the backend builds wrong (patched in here: the backend builds none such) reaches
    the client as the service's 400, with Solr's reason but none of its Java."""
    patch(monkeypatch)
    client = create_app({"INDEX": fixture_location, "TESTING": True}).test_client()
    error = assert_error(
        client.get("/api/v1/search?q=learning&sort=title"), 400, "invalid_parameter"
    )
    assert error["message"].startswith("Solr refused the request: ")
    assert message in error["message"]
    page = client.get("/?q=learning&sort=title", headers={"Accept": "text/html"})
    assert page.status_code == 400
    assert_no_leak(page.get_data(as_text=True))
    result = run("search", "learning", "--sort", "title", "--index", fixture_location)
    assert_one_line_error(result, message)


@pytest.mark.slow
def test_the_fixture_collection_answers_when_nothing_is_patched(fixture_location):
    # The control of the test above: the same requests succeed on the same collection.
    client = create_app({"INDEX": fixture_location, "TESTING": True}).test_client()
    response = client.get("/api/v1/search?q=learning&sort=title")
    assert response.status_code == 200
    assert response.get_json()["total"] == 2
    record = Record.from_dict(client.get("/api/v1/records/2301.00001").get_json())
    assert record == FIXTURE_RECORDS[0]
