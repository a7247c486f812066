"""`searchsvc serve` (nginx in front of gunicorn, as `make run` and Docker run it), attacked with
requests that used to hold gunicorn's sync workers or get HTML answers (issue 19, items 1 and 6),
and its per-address limits, record writes refused before their bodies, and workers that are not
root (issue 33, item 12).

Every refusal is in the service's JSON error shape; the tests assert answers and closed
connections, never wall-clock times (benchmarks/bench_attack.py measures those).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from searchsvc.serving import limits
from searchsvc.serving.front import Front, write_front
from searchsvc.serving.serve import ServeError, find_nginx
from tests.raw_http import (
    SEARCHSVC,
    RawAnswer,
    ask,
    assert_json_error,
    chunked_post,
    connect,
    huge_request_line,
    send_raw,
    serve,
)
from tests.support import build_index

# Longest a refused connection may stay open: nginx reads and drops what is still coming for
# at most LINGERING_TIME, an idle one is closed after CLIENT_HEADER_TIMEOUT; with slack for a
# busy machine.
CLOSED_WITHIN = max(limits.LINGERING_TIME, limits.CLIENT_HEADER_TIMEOUT) + 20


def _nginx_or_skip() -> None:
    try:
        find_nginx()
    except ServeError as exc:
        pytest.skip(f"{exc.message} (.ci/run installs it)")


@pytest.fixture(scope="module")
def front(tmp_path_factory) -> Iterator[tuple[int, Path]]:
    """`searchsvc serve` with 2 workers over the fixture records: (port, log)."""
    _nginx_or_skip()
    root = tmp_path_factory.mktemp("front")
    index = build_index(root / "index")
    log = root / "serve.log"
    env = {"PROMETHEUS_MULTIPROC_DIR": str(root / "metrics")}
    with serve(index, log, workers=2, env=env) as (port, _):
        yield port, log


@pytest.mark.slow
def test_a_16_mb_request_line_is_a_json_414_and_the_connection_is_closed(front):
    port, _ = front
    answer = send_raw(port, huge_request_line(), timeout=CLOSED_WITHIN)
    error = assert_json_error(answer, 414, 400)
    assert error["code"] == "request_uri_too_long"
    assert "POST /api/v1/search" in error["message"]


@pytest.mark.slow
def test_a_9_kb_header_is_a_json_431(front):
    port, _ = front
    request = b"GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n"
    error = assert_json_error(send_raw(port, request), 431, 400)
    assert error["code"] in ("request_header_fields_too_large", "bad_request")


@pytest.mark.slow
@pytest.mark.parametrize("byte", [b"\xff", b"\x00"])
def test_raw_bytes_in_the_request_line_are_a_json_400(front, byte):
    port, _ = front
    request = (
        b"GET /api/v1/search?q=a" + byte + b"b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert assert_json_error(send_raw(port, request), 400)["code"] == "bad_request"


@pytest.mark.slow
def test_a_negative_content_length_is_a_json_400(front):
    port, _ = front
    request = b"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"
    assert assert_json_error(send_raw(port, request), 400)["code"] == "bad_request"


@pytest.mark.slow
def test_a_10_mb_chunked_body_is_a_json_413(front):
    port, _ = front
    answer = send_raw(port, chunked_post("/api/v1/search", 10 * 1024 * 1024), CLOSED_WITHIN)
    error = assert_json_error(answer, 413)
    assert error["code"] == "request_entity_too_large"


@pytest.mark.slow
def test_an_unknown_transfer_coding_is_json_too(front):
    port, _ = front
    request = b"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nxxxx"
    assert_json_error(send_raw(port, request), 501, 400)


def _post_over_the_read_limit(port: int) -> requests.Response:
    # 100 KB is over the reads' 64 KiB (and nginx's memory buffer: it goes to a temporary
    # file) but within the writes' limit: the front passes it on, and the app answers (an
    # unknown key here: 401).
    return requests.post(
        f"http://127.0.0.1:{port}/api/v1/records",
        data=b"{" + b" " * 100_000 + b"}",
        headers={"Content-Type": "application/json", "Authorization": "Bearer not-a-key"},
        timeout=10,
    )


@pytest.mark.slow
def test_record_writes_may_send_bodies_over_the_read_limit(front):
    port, _ = front
    response = _post_over_the_read_limit(port)
    assert response.status_code == 401, response.text
    assert response.json()["error"]["message"] == "the API key is unknown or revoked"


# Within the write routes' 32 MiB: nginx used to take it, and wait for the body to come.
LARGE_BODY = 30 * 1024 * 1024


def _head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: x", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/records"),
        ("POST", "/api/v1/records/delete"),
        ("PUT", "/api/v1/records/2401.00001"),
    ],
)
def test_a_write_without_a_key_is_a_json_401_before_its_body_is_read(front, method, path):
    port, _ = front
    # The head only, announcing 30 MB: the answer comes without the body (the front used to
    # wait for it, and answer 408 when it did not come).
    head = _head(method, path, "Content-Type: application/json", f"Content-Length: {LARGE_BODY}")
    answer = ask(port, head, timeout=CLOSED_WITHIN)
    error = assert_json_error(answer, 401, ended=False)
    assert error["code"] == "unauthorized"
    assert "Authorization: Bearer" in error["message"]
    assert answer.headers["www-authenticate"] == 'Bearer realm="searchsvc"'
    assert answer.headers["cache-control"] == "no-store"


@pytest.mark.slow
@pytest.mark.parametrize(
    "request_",
    [
        _head("GET", "/api/v1/records/2401.00001", "Content-Length: 5") + b"hello",
        _head("GET", "/api/v1/records", f"Content-Length: {LARGE_BODY}"),
        _head("GET", "/api/v1/records/2401.00001/similar", "Transfer-Encoding: chunked")
        + b"5\r\nhello\r\n0\r\n\r\n",
        _head(
            "DELETE", "/api/v1/records/2401.00001", "Authorization: Bearer k", "Content-Length: 9"
        ),
    ],
    ids=["small-body", "30-mb-announced", "chunked", "delete-with-body"],
)
def test_a_body_on_a_records_url_that_takes_none_is_a_json_413(front, request_):
    port, _ = front
    answer = ask(port, request_, timeout=CLOSED_WITHIN)
    error = assert_json_error(answer, 413, ended=False)
    assert error["message"] == "this request takes no body"


@pytest.mark.slow
def test_a_long_query_goes_through_post_and_not_through_the_url(front):
    port, _ = front
    base = f"http://127.0.0.1:{port}/api/v1/search"
    # Within the query language's limits (100 words of up to 100 characters), too long for a URL.
    long_query = "learning " + " ".join(f"{n:02d}" + "z" * 95 for n in range(90))
    posted = requests.post(base, json={"q": long_query, "facets": ["author"]}, timeout=20)
    assert posted.status_code == 200, posted.text
    assert posted.json()["query"]["q"] == long_query and posted.json()["total"] == 2
    in_url = requests.get(base, params={"q": long_query}, timeout=20)
    assert in_url.status_code == 414
    assert in_url.headers["Content-Type"] == "application/json"
    assert in_url.json()["error"]["code"] == "request_uri_too_long"


@pytest.mark.slow
def test_idle_and_half_sent_connections_are_closed_by_the_front(front):
    port, _ = front
    partial = [b"", b"GET /api/v1/search?q=lear", b"GET /api/v1/stats HTTP/1.1\r\nHost: x\r\n"]
    sockets = []
    for data in partial:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(data)
        sockets.append(sock)
    try:
        for sock in sockets:
            sock.settimeout(CLOSED_WITHIN)
            try:
                rest = sock.recv(65536)
            except ConnectionResetError:
                rest = b""
            # Closed, with nothing or an answer in the JSON shape (408).
            assert rest == b"" or b"application/json" in rest, rest[:300]
    finally:
        for sock in sockets:
            sock.close()


def _hold_idle_connections(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET /api/v1/search?q=")  # and never the rest
        sockets.append(sock)
    return sockets


def _send_huge_lines(port: int, stop: threading.Event, answers: list[RawAnswer]) -> None:
    while not stop.is_set():
        answers.append(send_raw(port, huge_request_line(), timeout=CLOSED_WITHIN))


def search(url: str) -> requests.Response:
    return requests.get(url, params={"q": "learning"}, timeout=10)


@pytest.mark.slow
def test_searches_succeed_while_8_huge_senders_and_64_idle_connections_attack(front):
    port, _ = front
    stop = threading.Event()
    answers: list[RawAnswer] = []
    idle = _hold_idle_connections(port, 64)
    senders = [
        threading.Thread(target=_send_huge_lines, args=(port, stop, answers), daemon=True)
        for _ in range(8)
    ]
    for sender in senders:
        sender.start()
    try:
        time.sleep(0.5)  # the attack under way
        url = f"http://127.0.0.1:{port}/api/v1/search"
        # Each within 10 s, where gunicorn alone kept searches waiting for up to 30 s.
        with ThreadPoolExecutor(2) as pool:
            searches = list(pool.map(lambda _: search(url), range(20)))
        assert [s.status_code for s in searches] == [200] * 20
        assert all(s.json()["total"] == 2 for s in searches)
    finally:
        stop.set()
        for sender in senders:
            sender.join(CLOSED_WITHIN * 2)
        for sock in idle:
            sock.close()
    assert answers and all(a.status in (414, 400) for a in answers)


@pytest.mark.slow
def test_the_client_address_reaches_gunicorn_and_front_refusals_are_logged(front):
    port, log = front
    requests.get(f"http://127.0.0.1:{port}/api/v1/stats", timeout=5)
    big_header = b"X-Big: " + b"b" * 9000
    send_raw(port, b"GET /api/v1/logged-refusal HTTP/1.1\r\nHost: x\r\n" + big_header + b"\r\n\r\n")
    by_gunicorn = '127.0.0.1 "GET /api/v1/stats HTTP/1.0" 200'
    by_nginx = '127.0.0.1 "GET /api/v1/logged-refusal HTTP/1.1" 431'

    def logged() -> bool:
        lines = log.read_text(errors="replace").splitlines()
        return any(by_gunicorn in line for line in lines) and any(
            by_nginx in line and line.endswith(" front") for line in lines
        )

    deadline = time.monotonic() + 10
    while not logged() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert logged(), log.read_text(errors="replace")[-3000:]


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _command(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


@pytest.fixture
def own_front(tmp_path) -> Iterator[tuple[int, subprocess.Popen]]:
    _nginx_or_skip()
    index = build_index(tmp_path / "index")
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    with serve(index, tmp_path / "serve.log", workers=1, env=env) as started:
        yield started


@pytest.mark.slow
def test_sigterm_stops_nginx_and_gunicorn(own_front):
    port, process = own_front
    children = _children(process.pid)
    assert len(children) == 2
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    for child in children:
        assert not Path(f"/proc/{child}").exists() or _zombie(child)
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _zombie(pid: int) -> bool:
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    return True


@pytest.mark.slow
def test_when_gunicorn_dies_nginx_is_stopped_and_serve_fails(own_front):
    port, process = own_front
    (gunicorn,) = [pid for pid in _children(process.pid) if "gunicorn" in _command(pid)]
    os.kill(gunicorn, signal.SIGKILL)
    assert process.wait(timeout=60) == 1
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _uids(pid: int) -> list[int]:
    """Real, effective, saved and filesystem user ids of a process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(uid) for uid in line.split()[1:]]
    raise AssertionError(f"no Uid line for {pid}")


@pytest.mark.slow
def test_nginx_workers_never_run_as_root(own_front):
    if os.geteuid() != 0:
        pytest.skip("started without root, nginx cannot switch users: its workers are ours")
    port, process = own_front
    (nginx,) = [pid for pid in _children(process.pid) if "nginx" in _command(pid)]
    workers = _children(nginx)
    assert workers and all("worker process" in _command(pid) for pid in workers)
    for worker in workers:
        assert 0 not in _uids(worker), _uids(worker)
    # And they still reach gunicorn's socket, the error pages and the temporary files.
    found = requests.get(f"http://127.0.0.1:{port}/api/v1/search?q=learning", timeout=10)
    assert found.status_code == 200 and found.json()["total"] == 2
    assert _post_over_the_read_limit(port).status_code == 401
    assert requests.get(f"http://127.0.0.1:{port}/nowhere", timeout=10).status_code == 404


# The limited front's bounds: few, so that a test reaches them at once.
CONNECTIONS_PER_ADDRESS = 4
REQUESTS_PER_SECOND = 5


@pytest.fixture(scope="module")
def limited_front(tmp_path_factory) -> Iterator[int]:
    """`searchsvc serve` with 1 worker and small per-address limits: its port."""
    _nginx_or_skip()
    root = tmp_path_factory.mktemp("limited")
    index = build_index(root / "index")
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(root / "metrics"),
        "SEARCHSVC_FRONT_CONNECTIONS_PER_ADDRESS": str(CONNECTIONS_PER_ADDRESS),
        "SEARCHSVC_FRONT_REQUESTS_PER_SECOND": str(REQUESTS_PER_SECOND),
    }
    with serve(index, root / "serve.log", workers=1, env=env) as (port, _):
        yield port


@contextlib.contextmanager
def _trickling_writes(port: int, count: int, source: str) -> Iterator[list[socket.socket]]:
    """`count` connections from `source`, each sending a write's head (with a key, so that the
    front reads the body) and then one byte of its body a second: in progress until closed."""
    stop = threading.Event()
    head = _head(
        "POST",
        "/api/v1/records",
        "Authorization: Bearer trickler",
        "Content-Type: application/json",
        "Content-Length: 1000",
    )
    sockets = []
    for _ in range(count):
        sock = connect(port, source=source)
        sock.sendall(head)
        sockets.append(sock)

    def trickle() -> None:
        while not stop.wait(1.0):
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.sendall(b" ")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        yield sockets
    finally:
        stop.set()
        thread.join()
        for sock in sockets:
            sock.close()


def _stats(port: int, source: str) -> RawAnswer:
    request = _head("GET", "/api/v1/stats", "Connection: close")
    return ask(port, request, timeout=CLOSED_WITHIN, source=source)


def _assert_429(answer: RawAnswer) -> None:
    error = assert_json_error(answer, 429, ended=False)
    assert error["code"] == "too_many_requests"
    assert answer.headers["retry-after"] == "1"


@pytest.mark.slow
def test_connections_over_the_per_address_limit_are_refused_and_other_addresses_served(
    limited_front,
):
    port = limited_front
    with _trickling_writes(port, CONNECTIONS_PER_ADDRESS, "127.0.0.2") as held:
        time.sleep(0.5)  # their heads read: each counted
        for sock in held:  # none answered: all in progress
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
            sock.setblocking(True)
        _assert_429(_stats(port, "127.0.0.2"))
        assert _stats(port, "127.0.0.3").status == 200
    # Closed: the address has its connections back.
    deadline = time.monotonic() + 10
    while (answer := _stats(port, "127.0.0.2")).status != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answer.status == 200, answer.status


@pytest.mark.slow
def test_requests_over_the_per_address_rate_are_a_json_429_with_retry_after(limited_front):
    port = limited_front
    # Ten times the rate in a burst from one address: its burst (2x the rate) passes at once,
    # the rest is refused.
    answers = [_stats(port, "127.0.0.4") for _ in range(REQUESTS_PER_SECOND * 10)]
    statuses = [answer.status for answer in answers]
    assert set(statuses) == {200, 429}, statuses
    assert statuses[0] == 200
    _assert_429(next(answer for answer in answers if answer.status == 429))
    assert _stats(port, "127.0.0.5").status == 200


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # A process of its own: `searchsvc serve` replaces itself with the serving program.
    return subprocess.run(
        [str(SEARCHSVC), "serve", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_nginx_serve_says_so_in_one_line(fixture_index, tmp_path):
    missing = tmp_path / "nginx"
    result = run_serve(
        "--index", fixture_index, "--bind", "127.0.0.1:1", env={"SEARCHSVC_NGINX": str(missing)}
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: nginx not found at SEARCHSVC_NGINX={missing}: `searchsvc serve` runs it in "
        "front of gunicorn (Debian: apt-get install nginx)"
    ]


def test_nginx_is_looked_for_in_path_and_debian_sbin(tmp_path, monkeypatch):
    from searchsvc.serving import serve as serving

    monkeypatch.delenv("SEARCHSVC_NGINX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(serving, "SBIN", str(tmp_path / "sbin"))
    with pytest.raises(ServeError, match=r"apt-get install nginx"):
        find_nginx()
    (tmp_path / "sbin").mkdir()
    fake = tmp_path / "sbin" / "nginx"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_nginx() == str(fake)


@pytest.mark.parametrize(
    "name", ["SEARCHSVC_FRONT_CONNECTIONS_PER_ADDRESS", "SEARCHSVC_FRONT_REQUESTS_PER_SECOND"]
)
def test_a_negative_per_address_limit_stops_serve_in_one_line(fixture_index, name):
    result = run_serve("--index", fixture_index, "--bind", "127.0.0.1:1", env={name: "-1"})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {name}=-1: expected 0 (no limit) or more"
    ]


@pytest.mark.parametrize("bind", ["8000", "127.0.0.1:http", "127.0.0.1:70000"])
def test_a_malformed_bind_address_is_refused(fixture_index, bind):
    result = run_serve("--index", fixture_index, "--bind", bind)
    assert result.returncode == 2 and "expected HOST:PORT" in result.stderr


@pytest.mark.parametrize(("connections", "rate"), [(64, 100), (0, 0), (0, 7)])
def test_the_front_config_passes_nginx_own_check_and_its_pages_are_json(
    tmp_path, connections, rate
):
    _nginx_or_skip()
    front = Front("127.0.0.1", 8000, 65536, 32 << 20, 30, connections, rate)
    config = write_front(tmp_path, front)
    check = subprocess.run(
        [find_nginx(), "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    text = config.read_text()
    assert re.search(r"@[A-Z_]+@", text) is None  # every value filled in
    assert "client_max_body_size 65536;" in text
    # The write limit only in the record URLs' locations.
    locations = re.findall(r"location ([^{]*)\{[^}]*client_max_body_size 33554432;", text)
    assert [where.strip() for where in locations] == [
        "= /api/v1/records",
        "= /api/v1/records/delete",
        "/api/v1/records/",
    ]
    assert ("limit_conn connections 64;" in text) == (connections == 64)
    assert "limit_conn " not in text if connections == 0 else "limit_conn_status 429;" in text
    assert f"zone=requests burst={2 * rate} nodelay;" in text if rate else "limit_req " not in text
    # A refusal for the limits is not drained for seconds.
    assert re.search(r"location = /_errors/429\.json \{\s*lingering_timeout 100ms;", text)
    for page in (tmp_path / "_errors").glob("**/*.json"):
        error = json.loads(page.read_text())["error"]
        assert error["status"] == int(page.stem) and error["code"] and error["message"]
        assert f"/_errors/{page.relative_to(tmp_path / '_errors')}" in text
