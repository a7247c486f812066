"""HTTP manners: ETag/304 keyed to the index version, Cache-Control, CORS and gzip."""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import replace

import pytest

from searchsvc.app import create_app
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
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


def cors_headers(response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.lower().startswith("access-control-")}


def preflight(client, path: str, origin: str, method: str = "PUT"):
    """What a browser asks before a keyed JSON write from a page on `origin`."""
    return client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )


def test_no_cors_by_default(client):
    response = client.get("/api/v1/stats", headers={"Origin": "https://example.org"})
    assert cors_headers(response) == {}
    assert "Origin" not in response.headers.get("Vary", "")
    asked = preflight(client, "/api/v1/records/2401.00001", "https://example.org")
    assert cors_headers(asked) == {}


def test_cors_for_configured_origins(fixture_index, monkeypatch):
    monkeypatch.setenv("SEARCHSVC_CORS_ORIGINS", "https://a.example, https://b.example/")
    client = create_app({"INDEX": fixture_index, "TESTING": True}).test_client()
    allowed = client.get("/api/v1/stats", headers={"Origin": "https://b.example"})
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://b.example"
    assert "Origin" in allowed.headers["Vary"]
    exposed = allowed.headers["Access-Control-Expose-Headers"].split(", ")
    assert {"ETag", "Location", "Retry-After", "Searchsvc-Wait"} <= set(exposed)
    assert "Access-Control-Allow-Credentials" not in allowed.headers
    refused = client.get("/api/v1/stats", headers={"Origin": "https://evil.example"})
    assert cors_headers(refused) == {}
    assert "Origin" in refused.headers["Vary"]  # a cache must not hand it to b.example
    # Without an Origin (not a browser's cross-origin request): no CORS header either.
    plain = client.get("/api/v1/stats")
    assert cors_headers(plain) == {} and "Origin" in plain.headers["Vary"]
    # Only the API: the web page and the operations routes are for their own origin.
    assert cors_headers(client.get("/healthz", headers={"Origin": "https://a.example"})) == {}


@pytest.mark.parametrize("require_key_for_reads", [False, True])
@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/v1/records/2401.00001", "PUT"),
        ("/api/v1/records/2401.00001", "DELETE"),
        ("/api/v1/records", "POST"),
        ("/api/v1/search", "GET"),
        ("/api/v1/tasks/1", "GET"),
    ],
)
def test_a_preflight_allows_a_keyed_request_without_a_key(
    fixture_index, path, method, require_key_for_reads
):
    app = create_app(
        {
            "INDEX": fixture_index,
            "TESTING": True,
            "CORS_ORIGINS": "https://app.example",
            "REQUIRE_KEY_FOR_READS": require_key_for_reads,
        }
    )
    client = app.test_client()
    answer = preflight(client, path, "https://app.example", method)
    assert answer.status_code in (200, 204), answer.get_data(as_text=True)
    assert answer.headers["Access-Control-Allow-Origin"] == "https://app.example"
    methods = answer.headers["Access-Control-Allow-Methods"].split(", ")
    assert {"GET", "POST", "PUT", "DELETE"} <= set(methods)
    allowed = answer.headers["Access-Control-Allow-Headers"].lower().split(", ")
    assert {"authorization", "content-type"} <= set(allowed)
    assert int(answer.headers["Access-Control-Max-Age"]) > 0
    assert "Access-Control-Allow-Credentials" not in answer.headers
    # An origin not configured is told nothing: the browser refuses the request itself.
    other = preflight(client, path, "https://evil.example", method)
    assert "Access-Control-Allow-Origin" not in other.headers
    assert "Access-Control-Allow-Methods" not in other.headers


def test_a_configured_origin_is_matched_whole_never_as_a_pattern(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True, "CORS_ORIGINS": "https://*.example"})
    client = app.test_client()
    for origin in ("https://a.example", "https:///.example", "https://*.example.evil"):
        response = client.get("/api/v1/stats", headers={"Origin": origin})
        assert "Access-Control-Allow-Origin" not in response.headers, origin
    exact = client.get("/api/v1/stats", headers={"Origin": "https://*.example"})
    assert exact.headers["Access-Control-Allow-Origin"] == "https://*.example"


def test_errors_and_write_answers_carry_cors_headers_for_a_configured_origin(tmp_path):
    index = build_index(tmp_path / "index")
    app = create_app({"INDEX": index, "TESTING": True, "CORS_ORIGINS": "https://app.example"})
    client = app.test_client()
    origin = {"Origin": "https://app.example"}
    # A page must be able to read a refusal: 401 without a key, with its challenge.
    refused = client.post("/api/v1/records", json={"id": "x", "title": "T"}, headers=origin)
    assert refused.status_code == 401
    assert refused.headers["Access-Control-Allow-Origin"] == "https://app.example"
    token = KeyStore(TaskQueue(queue_path(index))).create("page", ("write",))[1]
    accepted = client.post(
        "/api/v1/records",
        json={"id": "x", "title": "T"},
        headers={**origin, "Authorization": f"Bearer {token}"},
    )
    assert accepted.status_code == 202
    assert accepted.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "Location" in accepted.headers["Access-Control-Expose-Headers"]
    assert "Access-Control-Allow-Credentials" not in accepted.headers


def test_cors_wildcard(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True, "CORS_ORIGINS": "*"})
    client = app.test_client()
    response = client.get("/api/v1/stats", headers={"Origin": "https://x.example"})
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in response.headers
    assert client.get("/api/v1/stats").headers["Access-Control-Allow-Origin"] == "*"
    answer = preflight(client, "/api/v1/records/2401.00001", "https://x.example", "DELETE")
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    assert "DELETE" in answer.headers["Access-Control-Allow-Methods"]
    assert "authorization" in answer.headers["Access-Control-Allow-Headers"].lower()


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
