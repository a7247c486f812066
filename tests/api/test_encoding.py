"""JSON responses: encoded by orjson, decoding to the same content as Flask's own encoder."""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest
from flask import Flask
from flask.json.provider import DefaultJSONProvider
from hypothesis import given
from hypothesis import strategies as st

from searchsvc.api.encoding import JSONProvider
from searchsvc.app import create_app


def flask_provider(app: Flask) -> DefaultJSONProvider:
    """Flask's own provider, keys in insertion order as the service configures it."""
    provider = DefaultJSONProvider(app)
    provider.sort_keys = False
    return provider


def content(body: bytes):
    """The decoded JSON, objects as lists of pairs so that key order counts too."""
    return json.loads(body, object_pairs_hook=list)


def bodies(app: Flask, value) -> tuple[bytes, bytes]:
    """The response body for `value` from the service's provider, then from Flask's."""
    with app.app_context():
        return app.json.response(value).get_data(), flask_provider(app).response(value).get_data()


surrogate_free_text = st.text(st.characters(exclude_categories=("Cs",)))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # beyond 64 bits: Flask's encoder
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=1e-12, max_value=1e-3)  # where the two spell floats differently
    | st.floats(min_value=1e15, max_value=1e300)
    | surrogate_free_text,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(surrogate_free_text.filter(lambda s: len(s) <= 8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(value=json_values)
def test_any_json_value_decodes_to_what_flask_would_send(app, value):
    fast, flasks = bodies(app, value)
    assert content(fast) == content(flasks)
    assert fast.endswith(b"\n")


def test_non_ascii_text_is_written_as_utf8_not_escapes(app):
    text = 'Balázs \u2026 \U0001f600 \x7f "q" \\ </script>'
    fast, flasks = bodies(app, {"author": text})
    assert fast == b'{"author":' + json.dumps(text, ensure_ascii=False).encode() + b"}\n"
    assert content(fast) == content(flasks)


def test_small_and_large_floats_keep_their_values(app):
    value = [1e-05, 2.5e-9, 0.0001, 12.5, 1e16, 1.5e300, -0.0, 5e-324]
    fast, flasks = bodies(app, value)
    assert json.loads(fast) == json.loads(flasks) == value


def test_nan_is_written_as_null(app):
    fast, _ = bodies(app, {"score": float("nan")})
    assert fast == b'{"score":null}\n'


@pytest.mark.parametrize(
    "value",
    [
        {"big": 2**64},  # beyond orjson's 64-bit integers
        {1: "integer key"},
        "lone \ud800 surrogate",
    ],
)
def test_values_orjson_refuses_are_written_by_flask(app, value):
    fast, flasks = bodies(app, value)
    assert fast == flasks


def test_dataclasses_and_dates_are_written_the_flask_way(app):
    @dataclasses.dataclass
    class Point:
        x: int
        seen: datetime.date

    value = {"when": datetime.date(2024, 1, 2), "point": Point(1, datetime.date(2024, 1, 3))}
    fast, flasks = bodies(app, value)
    assert content(fast) == content(flasks)
    assert b'"when":"Tue, 02 Jan 2024 00:00:00 GMT"' in fast


def test_sort_keys_is_still_honoured(app):
    with app.app_context():
        provider = JSONProvider(app)
        provider.sort_keys = True
        assert provider.response({"b": 1, "a": {"d": 2, "c": 3}}).get_data() == (
            b'{"a":{"c":3,"d":2},"b":1}\n'
        )


@pytest.fixture(scope="module")
def flask_client(fixture_index):
    """The same service answering through Flask's own JSON provider."""
    app = create_app({"INDEX": fixture_index, "TESTING": True})
    app.json = flask_provider(app)
    return app.test_client()


def without_timing(pairs):
    return [(key, value) for key, value in pairs if key != "took_ms"]


@pytest.mark.parametrize(
    "path",
    [
        # Non-ASCII author (Balázs), highlights, facets, null url/doi/score fields.
        "/api/v1/search?q=calculation&facets=author,year,category",
        "/api/v1/search?sort=newest&per_page=100",
        "/api/v1/search?q=<script>",
        "/api/v1/records/0704.0001",
        "/api/v1/stats",
        "/api/v1/nowhere",
    ],
)
def test_api_responses_carry_the_content_flask_would_send(client, flask_client, path):
    response, flasks = client.get(path), flask_client.get(path)
    body = response.get_data()
    assert response.status_code == flasks.status_code
    assert without_timing(content(body)) == without_timing(content(flasks.get_data()))
    assert response.headers["Content-Type"] == flasks.headers["Content-Type"] == "application/json"
    assert response.content_length == len(body)
    assert body.endswith(b"}\n")


def test_search_answer_writes_non_ascii_authors_as_utf8(client):
    body = client.get("/api/v1/search?q=calculation&facets=author").get_data()
    assert "C. Balázs".encode() in body
    assert b"\\u00e1" not in body


def test_debug_mode_keeps_flasks_indented_output(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True, "DEBUG": True})
    body = app.test_client().get("/api/v1/records/0704.0001").get_data()
    assert body.startswith(b'{\n  "id"')
    assert "Balázs" in json.loads(body)["authors"][0]
