"""Security headers on every response, OPTIONS and `//` paths in the error shape, safe download
names: issue 19's items 6 and 7 on the real app."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest

from searchsvc.app import create_app
from searchsvc.domain.records import Record
from tests.support import build_index

PAGES = ("/", "/records/2301.00001", "/authors/Aditya%20Akella", "/api/v1/docs")
DATA = (
    "/api/v1/search?q=learning",
    "/api/v1/stats",
    "/api/v1/search.atom",
    "/records/2301.00001.bib",
    "/records/2301.00001.json",
    "/api/v1/openapi.json",
    "/api/v1/records/no-such-record",  # an error
    "/healthz",
)


@pytest.mark.parametrize("path", PAGES + DATA)
def test_every_response_carries_the_security_headers(client, path):
    response = client.get(path)
    assert response.status_code in (200, 404), path
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
    policy = response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy
    if path in PAGES:
        # The service's own scripts and styles only: no inline script, no inline style.
        assert "script-src 'self';" in policy and "style-src 'self';" in policy
        assert "unsafe-inline" not in policy
    else:
        assert policy.startswith("default-src 'none'")


@pytest.mark.parametrize("path", PAGES)
def test_pages_have_no_inline_script_style_or_handlers(client, path):
    markup = client.get(path).get_data(as_text=True)
    assert not re.search(r"<script(?![^>]*\bsrc=)", markup)
    assert not re.search(r"<style", markup)
    assert not re.search(r"<[a-z][^>]*\s(on[a-z]+|style)=", markup)


def test_the_docs_page_loads_its_style_and_script_from_the_service(client):
    markup = client.get("/api/v1/docs").get_data(as_text=True)
    assert '<link rel="stylesheet" href="docs.css">' in markup
    assert '<script src="docs.js" defer></script>' in markup
    assert client.get("/api/v1/docs.css").mimetype == "text/css"
    script = client.get("/api/v1/docs.js")
    assert script.mimetype == "text/javascript" and b"input.disabled = true" in script.data


def test_options_is_204_with_the_allowed_methods_and_no_body(client):
    response = client.options("/api/v1/search")
    assert response.status_code == 204
    assert not response.data and "Content-Type" not in response.headers
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "HEAD", "OPTIONS"}


def test_a_path_with_an_empty_segment_is_a_json_404_not_a_redirect(client):
    # Ids never start with "/" (records.id_problem), so nothing is there; no HTML redirect.
    response = client.get("/api/v1/records//etc/passwd")
    assert response.status_code == 404
    assert response.mimetype == "application/json"
    assert response.get_json()["error"]["code"] == "not_found"
    assert client.get("/api/v1/search//").status_code == 404  # not a 308 to /api/v1/search/


@pytest.fixture(scope="module")
def odd_client(tmp_path_factory):
    records = [
        Record(id='a"b;c/d é', title="Odd name", authors=("A",), year=2020),
        Record(id="notes/evil.bib", title="An id ending as a download", authors=("A",)),
    ]
    location = build_index(tmp_path_factory.mktemp("odd-index") / "index", records)
    return create_app({"INDEX": location, "TESTING": True}).test_client()


def test_the_bibtex_download_name_is_escaped(odd_client):
    response = odd_client.get("/records/a%22b;c/d%20%C3%A9.bib")
    assert response.status_code == 200
    disposition = response.headers["Content-Disposition"]
    plain, encoded = re.fullmatch(
        r'inline; filename="([A-Za-z0-9._-]+)"; filename\*=UTF-8\'\'(\S+)', disposition
    ).groups()
    assert plain == "a_b_c_d__.bib"
    assert unquote(encoded) == 'a"b;c/d é.bib'


def test_a_record_whose_id_ends_as_a_download_still_has_its_page(odd_client):
    page = odd_client.get("/records/notes/evil.bib")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert "An id ending as a download" in page.get_data(as_text=True)
    download = odd_client.get("/records/notes/evil.bib.bib")
    assert download.mimetype == "application/x-bibtex"
    assert odd_client.get("/records/notes/evil.bib.json").get_json()["id"] == "notes/evil.bib"
    assert odd_client.get("/records/notes/nothing.bib").status_code == 404
