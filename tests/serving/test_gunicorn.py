"""Real gunicorn (the Makefile's command) on a free port over a temp index, queried over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import requests

from tests.raw_http import (
    assert_json_error,
    chunked_post,
    huge_request_line,
    send_raw,
)
from tests.support import FIXTURE_RECORDS, build_index, stop_process

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
NEW_RECORD = replace(
    FIXTURE_RECORDS[0], id="2409.00042", title="Zeppelin Routing for Rebuilt Indexes"
)

pytestmark = pytest.mark.slow


@dataclass
class LiveServer:
    base_url: str
    index_dir: Path
    log: Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, seconds: float = 15.0, interval: float = 0.1):
    deadline = time.monotonic() + seconds
    while True:
        try:
            result = condition()
        except requests.RequestException:
            result = None
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)


@contextmanager
def gunicorn(root: Path, *extra_args: str) -> Iterator[tuple[LiveServer, subprocess.Popen]]:
    """gunicorn with gunicorn_conf.py and two workers, serving a temp index of the fixtures."""
    index_dir = Path(build_index(root / "index"))
    log = root / "gunicorn.log"
    with serving(
        index_dir, log, {"PROMETHEUS_MULTIPROC_DIR": str(root / "metrics")}, extra_args
    ) as (
        base_url,
        process,
    ):
        yield LiveServer(base_url, index_dir, log), process


@contextmanager
def serving(
    index_dir: Path | str,
    log: Path,
    env: dict[str, str | None],
    extra_args: tuple[str, ...] = (),
    ready: str = "/readyz",
    wait: float = 30,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """The Makefile's gunicorn command (two workers unless `env` says otherwise; a None in
    `env` unsets the variable) serving the index location `index_dir` on a free port, once
    `ready` answers (within `wait` s); stopped with SIGTERM afterwards if still running."""
    port = free_port()
    merged = {
        **os.environ,
        "SEARCHSVC_INDEX": str(index_dir),
        "SEARCHSVC_WORKERS": "2",
        **env,
    }
    env = {name: value for name, value in merged.items() if value is not None}
    command = [str(GUNICORN), "--config", "python:searchsvc.serving.gunicorn_conf", *extra_args]
    command += ["--bind", f"127.0.0.1:{port}", "wsgi:app"]
    with open(log, "ab") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        up = wait_until(lambda: requests.get(f"{base_url}{ready}", timeout=5).ok, wait)
        assert up, log.read_text()
        yield base_url, process
    finally:
        stop_process(process, timeout=30)


@pytest.fixture(scope="session")
def live_server(tmp_path_factory) -> Iterator[LiveServer]:
    with gunicorn(tmp_path_factory.mktemp("live")) as (server, _):
        yield server


def test_gunicorn_serves_search_over_http(live_server):
    response = requests.get(
        f"{live_server.base_url}/api/v1/search",
        params={"q": "learning", "facets": "author,year"},
        headers={"Accept-Encoding": "gzip"},
        timeout=5,
    )
    assert response.status_code == 200
    assert response.headers["Content-Encoding"] == "gzip"
    body = response.json()
    assert body["total"] == 2 and set(body["facets"]) == {"author", "year"}


def test_gunicorn_answers_errors_in_json(live_server):
    response = requests.delete(f"{live_server.base_url}/api/v1/search", timeout=5)
    assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"
    # A 10,000-character query goes in a POST body: the request line is bounded.
    long_query = requests.post(
        f"{live_server.base_url}/api/v1/search", json={"q": "a " * 5000}, timeout=10
    )
    assert long_query.status_code in (200, 400)
    assert "error" not in long_query.json() or long_query.json()["error"]["code"] == "invalid_query"
    too_long = requests.get(f"{live_server.base_url}/api/v1/search?q={'a' * 70_000}", timeout=5)
    assert too_long.status_code == 414
    assert too_long.headers["Content-Type"] == "application/json"
    error = too_long.json()["error"]
    assert error["code"] == "request_uri_too_long" and "POST /api/v1/search" in error["message"]


def port_of(server: LiveServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def test_a_16_mb_request_line_is_refused_at_the_bound_in_json(live_server):
    # Unbounded, gunicorn parsed such a line until its worker timed out (a 500 after 30 s).
    answer = send_raw(port_of(live_server), huge_request_line(), timeout=30)
    assert assert_json_error(answer, 414)["code"] == "request_uri_too_long"


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /api/v1/search?q=a\xffb HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET /api/v1/search?q=a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        (b"GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", 431),
    ],
    ids=["xff-in-line", "nul-in-line", "negative-content-length", "9-kb-header"],
)
def test_requests_gunicorn_cannot_parse_get_json_errors(live_server, request_bytes, status):
    assert_json_error(send_raw(port_of(live_server), request_bytes), status)


def test_a_malformed_chunked_body_is_a_json_400(live_server):
    request_bytes = (
        b"GET /api/v1/search?q=a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nabc\r\n0\r\n\r\n"
    )
    answer = send_raw(port_of(live_server), request_bytes)
    assert answer.status == 400, answer.body[:300]
    assert answer.json()["error"]["code"] == "invalid_parameter"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_chunked_body_over_the_limit_is_a_413(live_server, method):
    # Without a Content-Length the app measures the body by reading it (GET views never did).
    request = chunked_post("/api/v1/search", 10 * 1024 * 1024).replace(b"POST", method.encode(), 1)
    error = assert_json_error(send_raw(port_of(live_server), request, timeout=30), 413)
    assert error["code"] == "request_entity_too_large"


def test_workers_pick_up_an_index_rebuilt_while_running(live_server):
    url = f"{live_server.base_url}/api/v1/search"
    before = requests.get(url, params={"q": "zeppelin"}, timeout=5)
    assert before.json()["total"] == 0
    build_index(live_server.index_dir, (*FIXTURE_RECORDS, NEW_RECORD))

    def every_worker_sees_it() -> bool:
        # Concurrent requests: while one worker answers, the other takes the next connection.
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(
                    lambda _: requests.get(url, params={"q": "zeppelin"}, timeout=5), range(12)
                )
            )
        return all(answer.json()["total"] == 1 for answer in answers)

    assert wait_until(every_worker_sees_it, seconds=10)
    after = requests.get(url, params={"q": "zeppelin"}, timeout=5)
    assert after.json()["hits"][0]["id"] == NEW_RECORD.id
    assert after.headers["ETag"] != before.headers["ETag"]
    record = requests.get(f"{live_server.base_url}/api/v1/records/{NEW_RECORD.id}", timeout=5)
    assert record.json()["title"] == NEW_RECORD.title


def test_metrics_add_up_the_requests_of_every_worker(live_server):
    for _ in range(20):
        requests.get(f"{live_server.base_url}/healthz", timeout=5)
    text = requests.get(f"{live_server.base_url}/metrics", timeout=5).text
    counted = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('searchsvc_http_requests_total{endpoint="/healthz"')
    )
    assert counted >= 20
    assert "searchsvc_index_size_bytes" in text


def test_access_log_records_requests_with_their_duration(live_server):
    requests.get(f"{live_server.base_url}/api/v1/stats", timeout=5)
    assert wait_until(lambda: "GET /api/v1/stats" in live_server.log.read_text(), seconds=5)


@pytest.fixture
def own_server(tmp_path) -> Iterator[tuple[LiveServer, subprocess.Popen]]:
    """A server for one test, which may stop it."""
    with gunicorn(tmp_path) as started:
        yield started


def test_every_access_line_is_written_by_the_time_the_server_stops(own_server):
    # The worker writes a request's access line after accepting the next connection.
    server, process = own_server
    for n in range(70):  # more lines than a worker holds back at once
        missing = requests.get(f"{server.base_url}/api/v1/records/no-such-{n}", timeout=5)
        assert missing.status_code == 404
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: requests.get(f"{server.base_url}/healthz", timeout=5), range(8)))
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    lines = server.log.read_text().splitlines()
    unlogged = [n for n in range(70) if not any(f"/no-such-{n} " in line for line in lines)]
    assert unlogged == []
    assert sum('"GET /healthz HTTP/1.1" 200' in line for line in lines) == 8


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "SEARCHSVC_INDEX",
            "nosuch://host/index",
            "error: unknown index location scheme nosuch://",
        ),
        ("SEARCHSVC_GZIP_LEVEL", "9", "error: SEARCHSVC_GZIP_LEVEL=9: expected 0 to 3"),
    ],
)
def test_a_bad_setting_stops_gunicorn_at_start_with_one_line(tmp_path, variable, value, message):
    env = {**os.environ, variable: value, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    command = [str(GUNICORN), "--config", "python:searchsvc.serving.gunicorn_conf"]
    command += ["--bind", f"127.0.0.1:{free_port()}", "wsgi:app"]
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr and "Worker failed to boot" not in result.stderr
