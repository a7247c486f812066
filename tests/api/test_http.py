"""HTTP manners: ETag/304 keyed to the index version, Cache-Control, CORS and gzip."""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import replace

from searchsvc.app import create_app
from tests.support import FIXTURE_RECORDS, build_index


def test_get_responses_carry_an_etag_and_revalidate(client):
    first = client.get("/api/v1/search?q=learning")
    assert first.status_code == 200
    etag = first.headers["ETag"]
    assert etag.startswith('W/"')
    assert first.headers["Cache-Control"] == "public, no-cache"
    again = client.get("/api/v1/search?q=learning", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    assert again.headers["ETag"] == etag
    other = client.get("/api/v1/search?q=learning", headers={"If-None-Match": 'W/"old"'})
    assert other.status_code == 200


def test_cache_max_age_is_configurable(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True, "CACHE_MAX_AGE": 60})
    response = app.test_client().get("/api/v1/stats")
    assert response.headers["Cache-Control"] == "public, max-age=60"


def test_etag_changes_when_the_index_is_rebuilt(tmp_path):
    build_index(tmp_path, FIXTURE_RECORDS[:2])
    client = create_app({"INDEX": tmp_path, "TESTING": True}).test_client()
    before = client.get("/api/v1/search")
    assert before.get_json()["total"] == 2
    extra = replace(FIXTURE_RECORDS[2], id="2402.00009", title="Rebuilt Index Paper")
    build_index(tmp_path, (*FIXTURE_RECORDS[:2], extra))
    # The backend looks for a new generation at most about once a second.
    after = _poll(client, "/api/v1/search", lambda body: body["total"] == 3)
    assert after.headers["ETag"] != before.headers["ETag"]
    stale = client.get("/api/v1/search", headers={"If-None-Match": before.headers["ETag"]})
    assert stale.status_code == 200


def _poll(client, url, accept, seconds=5.0):
    deadline = time.monotonic() + seconds
    while True:
        response = client.get(url)
        if accept(response.get_json()) or time.monotonic() > deadline:
            assert accept(response.get_json()), response.get_json()
            return response
        time.sleep(0.1)


def test_errors_have_no_etag(client):
    response = client.get("/api/v1/records/none")
    assert "ETag" not in response.headers


def test_no_cors_by_default(client):
    response = client.get("/api/v1/stats", headers={"Origin": "https://example.org"})
    assert "Access-Control-Allow-Origin" not in response.headers


def test_cors_for_configured_origins(fixture_index, monkeypatch):
    monkeypatch.setenv("SEARCHSVC_CORS_ORIGINS", "https://a.example, https://b.example")
    client = create_app({"INDEX": fixture_index, "TESTING": True}).test_client()
    allowed = client.get("/api/v1/stats", headers={"Origin": "https://b.example"})
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://b.example"
    assert "Origin" in allowed.headers["Vary"]
    assert "ETag" in allowed.headers["Access-Control-Expose-Headers"]
    refused = client.get("/api/v1/stats", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in refused.headers
    preflight = client.options(
        "/api/v1/search",
        headers={"Origin": "https://a.example", "Access-Control-Request-Method": "GET"},
    )
    assert preflight.status_code == 204  # no body: the Allow and CORS headers say it all
    assert "GET" in preflight.headers["Access-Control-Allow-Methods"]


def test_cors_wildcard(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True, "CORS_ORIGINS": "*"})
    response = app.test_client().get("/api/v1/stats", headers={"Origin": "https://x.example"})
    assert response.headers["Access-Control-Allow-Origin"] == "*"


def test_large_responses_are_gzipped_for_clients_that_accept_it(client):
    plain = client.get("/api/v1/search")
    assert "Content-Encoding" not in plain.headers
    zipped = client.get("/api/v1/search", headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped.headers["Vary"]
    unzipped = json.loads(gzip.decompress(zipped.data))
    assert unzipped["hits"] == plain.get_json()["hits"]  # the same answer (took_ms varies)
    assert int(zipped.headers["Content-Length"]) == len(zipped.data) < len(plain.data)


def test_small_responses_are_not_gzipped(client):
    response = client.get("/healthz", headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in response.headers


def test_server_timing_splits_app_time_from_engine_time(client):
    response = client.get("/api/v1/search?q=learning")
    timings = dict(
        part.strip().split(";dur=") for part in response.headers["Server-Timing"].split(",")
    )
    assert set(timings) == {"app", "search"}
    assert 0 < float(timings["search"]) <= float(timings["app"])
    assert client.get("/healthz").headers["Server-Timing"].startswith("app;dur=")
