"""Who may read what (issue 33, "Access", items 1, 2, 4 and 15's forwarded scheme), through the
real app over a real index: the read key on every route that shows records or counts, a browser
asked for it, key-authenticated answers kept out of shared caches, bounded metric labels, the
public URL setting and the scheme gunicorn believes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from openapi_spec_validator import validate

from searchsvc import config
from searchsvc.api import auth
from searchsvc.app import create_app
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.support import build_index, stop_process

# What each route argument is filled with when the URL map is walked.
SAMPLE_ARGUMENTS = {
    "record_id": "2301.00001",
    "name": "Ada Lovelace",
    "facet": "category",
    "filename": "style.css",
    "task_id": 1,
}
# The endpoints that answer without the read key, as the service lists them (auth.OPEN_ENDPOINTS):
# opening one more is a decision made in both places.
OPEN = {
    "ops.healthz",
    "ops.readyz",
    "api-docs.openapi_json",
    "api_docs",
    "api_docs_style",
    "api_docs_script",
    "static",
    "web.static",
}
# What issue 33 found answering without a key while REQUIRE_KEY_FOR_READS was set.
LEAKS = (
    "/?q=learning",
    "/records/2301.00001",
    "/records/2301.00001?format=json",
    "/records/2301.00001.json",
    "/records/2301.00001.bib",
    "/authors/Ada%20Lovelace",
    "/metrics",
)


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return build_index(tmp_path_factory.mktemp("access") / "index")


@pytest.fixture(scope="module")
def keys(index) -> KeyStore:
    return KeyStore(TaskQueue(queue_path(index)))


@pytest.fixture(scope="module")
def reader(keys) -> str:
    return keys.create("reader", ("read",))[1]


@pytest.fixture(scope="module")
def writer(keys) -> str:
    return keys.create("writer", ("write",))[1]


@pytest.fixture(scope="module")
def closed_app(index):
    return create_app({"INDEX": index, "TESTING": True, "REQUIRE_KEY_FOR_READS": True})


@pytest.fixture
def closed(closed_app):
    return closed_app.test_client()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def requests_of_every_route(app):
    """(endpoint, method, path) for every rule of the URL map and each method it takes."""
    adapter = app.url_map.bind("localhost")
    for rule in app.url_map.iter_rules():
        values = {name: SAMPLE_ARGUMENTS[name] for name in rule.arguments}
        for method in sorted(rule.methods - {"OPTIONS", "HEAD"}):
            yield rule.endpoint, method, adapter.build(rule.endpoint, values, method=method)


# -- item 1: the read key on every route that shows records or counts ---------------------------
def test_the_open_routes_are_the_listed_ones():
    assert set(auth.OPEN_ENDPOINTS) == OPEN


def test_every_route_needs_the_read_key_but_the_listed_open_ones(closed_app, reader, writer):
    client = closed_app.test_client()
    walked = set()
    for endpoint, method, path in requests_of_every_route(closed_app):
        walked.add(endpoint)
        anonymous = client.open(path, method=method, json={})
        if endpoint in auth.OPEN_ENDPOINTS:
            assert anonymous.status_code not in (401, 403), (method, path)
            assert b"Lovelace" not in anonymous.data, (method, path)
            if endpoint.startswith("ops."):
                assert b"documents" not in anonymous.data, (method, path)
            continue
        assert anonymous.status_code == 401, (method, path, anonymous.status_code)
        assert "WWW-Authenticate" in anonymous.headers, (method, path)
        assert b"Lovelace" not in anonymous.data and b"Fair Cluster" not in anonymous.data
        read = client.open(path, method=method, json={}, headers=bearer(reader))
        if endpoint.startswith("writes."):
            # Writes and tasks take a key with the write scope, whatever the setting.
            assert read.status_code == 403, (method, path)
            written = client.open(path, method=method, json={}, headers=bearer(writer))
            assert written.status_code not in (401, 403), (method, path)
        else:
            assert read.status_code not in (401, 403), (method, path, read.status_code)
            assert client.open(path, method=method, headers=bearer(writer)).status_code == 403
    assert walked >= OPEN


@pytest.mark.parametrize("path", LEAKS)
def test_what_issue_33_read_without_a_key_now_needs_one(closed, reader, path):
    refused = closed.get(path)
    assert refused.status_code == 401
    assert b"Lovelace" not in refused.data and b"searchsvc_index_documents" not in refused.data
    assert closed.get(path, headers=bearer(reader)).status_code == 200


def test_readiness_answers_probes_without_a_key_but_counts_only_for_a_reader(closed, reader):
    probe = closed.get("/readyz")
    assert probe.status_code == 200
    assert probe.get_json()["status"] == "ready" and "documents" not in probe.get_json()
    assert closed.get("/readyz", headers=bearer(reader)).get_json()["documents"] == 5
    health = closed.get("/healthz")
    assert health.status_code == 200 and health.get_json() == {"status": "ok"}


def test_a_browser_is_asked_for_the_key_and_may_give_it_as_a_password(closed, reader, writer):
    refused = closed.get("/?q=learning", headers={"Accept": "text/html"})
    assert refused.status_code == 401
    assert refused.mimetype == "text/html"
    assert refused.headers["WWW-Authenticate"].startswith('Basic realm="searchsvc"')
    assert "password" in refused.get_data(as_text=True)
    page = closed.get("/?q=learning", auth=("anyone", reader))
    assert page.status_code == 200 and "Fair Cluster Scheduling" in page.get_data(as_text=True)
    assert closed.get("/records/2301.00001.bib", auth=("", reader)).status_code == 200
    assert closed.get("/?q=learning", auth=("anyone", reader + "x")).status_code == 401
    assert closed.get("/?q=learning", auth=("anyone", writer)).status_code == 403


def test_the_api_answers_401_in_json_with_a_bearer_challenge(closed, reader):
    refused = closed.get("/api/v1/search?q=learning", headers={"Accept": "text/html"})
    assert refused.status_code == 401 and refused.mimetype == "application/json"
    assert refused.headers["WWW-Authenticate"].startswith('Bearer realm="searchsvc"')
    assert refused.headers["Cache-Control"] == "no-store"
    assert refused.get_json()["error"]["code"] == "unauthorized"
    wrong = closed.get("/api/v1/search", headers=bearer("ssk_nonsense"))
    assert wrong.status_code == 401 and "unknown or revoked" in wrong.get_json()["error"]["message"]
    # The same key as a password works here too: a browser that gave it to the page sends it.
    assert closed.get("/api/v1/search?q=learning", auth=("anyone", reader)).status_code == 200
    # A feed reader can prompt for it as well.
    feed = closed.get("/api/v1/search.atom")
    assert feed.status_code == 401
    challenges = feed.headers.getlist("WWW-Authenticate")
    assert any(c.startswith("Bearer") for c in challenges)
    assert any(c.startswith("Basic") for c in challenges)


def test_reads_stay_open_without_the_setting(client):
    for path in ("/?q=learning", "/records/2301.00001.bib", "/metrics", "/api/v1/stats"):
        assert client.get(path).status_code == 200, path
    assert "documents" in client.get("/readyz").get_json()


def test_the_openapi_document_says_reads_take_the_key_when_they_do(closed, client):
    closed_spec = closed.get("/api/v1/openapi.json").get_json()
    validate(closed_spec)
    for path in ("/api/v1/search", "/api/v1/records/{record_id}", "/metrics"):
        operation = closed_spec["paths"][path]["get"]
        assert operation["security"] == [{"bearerAuth": []}, {"basicAuth": []}], path
        assert {"401", "403"} <= set(operation["responses"]), path
    readiness = closed_spec["paths"]["/readyz"]["get"]["security"]
    assert readiness == [{}, {"bearerAuth": []}, {"basicAuth": []}]
    assert closed_spec["components"]["securitySchemes"]["basicAuth"]["scheme"] == "basic"
    assert "security" not in closed_spec["paths"]["/healthz"]["get"]
    open_spec = client.get("/api/v1/openapi.json").get_json()
    assert "security" not in open_spec["paths"]["/api/v1/search"]["get"]
    assert "401" not in open_spec["paths"]["/api/v1/search"]["get"]["responses"]


# -- item 2: key-authenticated answers stay out of shared caches --------------------------------
def test_answers_to_a_key_are_private(closed, reader):
    answer = closed.get("/api/v1/search?q=learning", headers=bearer(reader))
    assert answer.status_code == 200
    assert "private" in answer.headers["Cache-Control"]
    assert "public" not in answer.headers["Cache-Control"]
    assert "Authorization" in answer.headers["Vary"]
    again = closed.get(
        "/api/v1/search?q=learning",
        headers={**bearer(reader), "If-None-Match": answer.headers["ETag"]},
    )
    assert again.status_code == 304
    assert "private" in again.headers["Cache-Control"]
    assert "public" not in again.headers["Cache-Control"]
    page = closed.get("/?q=learning", auth=("anyone", reader))
    assert "private" in page.headers["Cache-Control"]
    assert "Authorization" in page.headers["Vary"]


def test_open_answers_stay_public(client):
    assert client.get("/api/v1/search?q=learning").headers["Cache-Control"].startswith("public")


# -- item 4: request methods as metric labels ---------------------------------------------------
def test_an_unknown_method_is_counted_as_other(client):
    assert client.open("/api/v1/search", method="FROBNICATE").status_code == 405
    assert client.open("/healthz", method="X-CUSTOM-1").status_code == 405
    metrics = client.get("/metrics").get_data(as_text=True)
    assert "FROBNICATE" not in metrics and "X-CUSTOM-1" not in metrics
    # A method no rule takes matches no URL rule either.
    assert 'endpoint="<unmatched>",method="other",status="405"' in metrics
    assert 'method="GET"' in metrics


# -- item 15: the public URL setting, and the scheme gunicorn believes --------------------------
@pytest.mark.parametrize("url", ["", "https://search.example.org", "http://127.0.0.1:8000/search/"])
def test_a_public_url_is_an_absolute_http_url_or_nothing(url):
    assert config.load({"PUBLIC_URL": url})["PUBLIC_URL"] == url.rstrip("/")
    environ = {"SEARCHSVC_PUBLIC_URL": url}
    assert config.load(environ=environ)["PUBLIC_URL"] == url.rstrip("/")


@pytest.mark.parametrize(
    "url",
    [
        "search.example.org",
        "/search",
        "ftp://example.org",
        "https://",
        "https://x.org/?a=1",
        "javascript:alert(1)",
    ],
)
def test_any_other_public_url_stops_the_service_at_start(url):
    with pytest.raises(ValueError, match="PUBLIC_URL"):
        config.load({"PUBLIC_URL": url})


ECHO_APP = """
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [environ["wsgi.url_scheme"].encode()]
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _scheme_over_unix_socket(path: Path) -> str:
    with socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(5)
        connection.connect(str(path))
        connection.sendall(b"GET / HTTP/1.0\r\nHost: x\r\nX-Forwarded-Proto: https\r\n\r\n")
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    return answer.split(b"\r\n\r\n", 1)[1].decode()


@pytest.mark.slow
def test_gunicorn_believes_a_forwarded_scheme_from_the_front_only(tmp_path):
    """gunicorn with the service's config (in its own process: importing it here would set up
    Prometheus' multiprocess mode for the tests that follow), serving a WSGI app that answers
    the scheme it was given. A client on the machine is not the front: only the unix socket
    nginx reaches (`searchsvc serve`) may say the request came over https."""
    (tmp_path / "echo.py").write_text(ECHO_APP)
    port = _free_port()
    socket_path = tmp_path / "gunicorn.sock"
    env = {
        **os.environ,
        "SEARCHSVC_INDEX": str(tmp_path / "index"),
        "SEARCHSVC_WORKERS": "1",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    env.pop("FORWARDED_ALLOW_IPS", None)
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:searchsvc.serving.gunicorn_conf",
    ]
    command += ["--chdir", str(tmp_path), "--bind", f"127.0.0.1:{port}"]
    command += ["--bind", f"unix:{socket_path}", "echo:app"]
    log = tmp_path / "gunicorn.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                direct = requests.get(
                    f"http://127.0.0.1:{port}/", headers={"X-Forwarded-Proto": "https"}, timeout=5
                )
                break
            except requests.ConnectionError:
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        assert direct.text == "http"
        assert _scheme_over_unix_socket(socket_path) == "https"
    finally:
        stop_process(process)
