"""Every error status answers the one JSON shape; no request gets a 500 or an HTML page."""

from __future__ import annotations

import pytest

from searchsvc.app import create_app


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()
    assert list(body) == ["error"]
    error = body["error"]
    assert list(error) == ["status", "code", "message", "details"]
    assert error["status"] == status and error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    return error


def test_bad_parameter_is_400(client):
    assert_error(client.get("/api/v1/search?per_page=1000"), 400, "invalid_parameter")


def test_bad_query_is_400(client):
    assert_error(client.get("/api/v1/search?q=" + "(" * 40), 400, "invalid_query")


@pytest.mark.parametrize(
    ("q", "position"),
    [
        ("title:", 0),  # a dangling field prefix
        ("%22learned%20caches", 0),  # an unclosed quote
        ("((learning", 1),  # an unclosed parenthesis
        ("year:2023..2020", 5),  # a reversed range
        ("learning%20AND", 9),  # a lone operator
        ("NOT", 0),
    ],
)
def test_a_malformed_query_is_400_with_the_position_in_its_details(client, q, position):
    error = assert_error(client.get(f"/api/v1/search?q={q}"), 400, "invalid_query")
    assert error["details"] == {"position": position}
    assert error["message"].endswith(f"(at character {position + 1})")


def test_unknown_facet_is_404_naming_the_facets(client):
    error = assert_error(client.get("/api/v1/facets/colour"), 404, "unknown_facet")
    assert error["details"] == {
        "facet": "colour",
        "facets": ["author", "year", "category", "subject"],
    }


def test_each_domain_error_has_one_status():
    from searchsvc.domain.errors import (
        IndexUnavailable,
        InvalidLocation,
        InvalidRequest,
        QueryError,
        RecordNotFound,
        UnknownFacet,
    )
    from searchsvc.http.status import STATUS_OF_ERROR, status_of

    assert status_of(InvalidRequest("x")) == status_of(QueryError("x")) == 400
    assert status_of(RecordNotFound("x")) == status_of(UnknownFacet("x")) == 404
    assert status_of(IndexUnavailable("x")) == 503
    assert status_of(InvalidLocation("x")) == 500  # a misconfigured service, not the client
    assert all(400 <= status < 600 for status in STATUS_OF_ERROR.values())


@pytest.mark.parametrize(
    "url",
    ["/api/v1/nothing", "/api/v2/search", "/api/v1/search/", "/api/v1/records/", "/nothing"],
)
def test_unknown_path_is_404(client, url):
    assert_error(client.get(url), 404, "not_found")


def test_unknown_record_is_404(client):
    error = assert_error(client.get("/api/v1/records/none"), 404, "not_found")
    assert error["details"] == {"id": "none"}


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_wrong_method_is_405_with_allow_header(client, method):
    # (POST is the search with a JSON body.)
    response = client.open("/api/v1/search", method=method)
    assert_error(response, 405, "method_not_allowed")
    assert {"GET", "POST"} <= set(response.headers["Allow"].replace(" ", "").split(","))


def test_oversized_body_is_413(client, app):
    body = b"x" * (app.config["MAX_CONTENT_LENGTH"] + 1)
    response = client.get("/api/v1/search", data=body)
    assert_error(response, 413, "request_entity_too_large")


def test_over_long_query_string_is_413(client, app):
    q = "a" * (app.config["MAX_QUERY_STRING_LENGTH"] + 1)
    assert_error(client.get(f"/api/v1/search?q={q}"), 413, "request_entity_too_large")


def test_missing_index_is_503_and_not_ready(tmp_path):
    client = create_app({"INDEX": tmp_path / "none", "TESTING": True}).test_client()
    for url in ("/api/v1/search", "/api/v1/records/x", "/api/v1/stats", "/readyz"):
        response = client.get(url)
        assert_error(response, 503, "index_unavailable")
        assert response.headers["Retry-After"]
    assert client.get("/healthz").status_code == 200
    assert client.get("/metrics").status_code == 200


def test_unexpected_exception_is_a_json_500(fixture_index):
    app = create_app({"INDEX": fixture_index, "TESTING": True})

    @app.route("/api/v1/boom")
    def boom():
        raise RuntimeError("boom")

    error = assert_error(app.test_client().get("/api/v1/boom"), 500, "internal_error")
    assert "boom" not in error["message"]  # no internals leak to clients


def test_browsers_get_html_errors_outside_the_api(client):
    response = client.get("/no-such-page", headers={"Accept": "text/html"})
    assert response.status_code == 404 and response.mimetype == "text/html"
    api = client.get("/api/v1/nothing", headers={"Accept": "text/html"})
    assert_error(api, 404, "not_found")


def test_a_message_about_a_whole_location_keeps_the_error_shape():
    # webargs reports a JSON body that does not parse for the location, not a field.
    from searchsvc.api.errors import _flatten_locations

    assert _flatten_locations({"json": ["Invalid JSON body."]}) == {"_json": ["Invalid JSON body."]}
    assert _flatten_locations({"query": {"page": ["Not a valid integer."]}}) == {
        "page": ["Not a valid integer."]
    }
