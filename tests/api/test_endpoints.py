"""Every read endpoint besides search, and the operations endpoints, over real indexes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from searchsvc.app import create_app
from tests.support import FIXTURE_RECORDS, build_index

OLD_STYLE_ID = "hep-th/9901001"


@pytest.fixture(scope="module")
def slash_client(tmp_path_factory):
    """An index holding a record whose id has a slash, as old arXiv ids do."""
    old = replace(FIXTURE_RECORDS[3], id=OLD_STYLE_ID, title="Old Style Identifier Paper")
    location = build_index(tmp_path_factory.mktemp("slash-index"), (*FIXTURE_RECORDS, old))
    return create_app({"INDEX": location, "TESTING": True}).test_client()


def get_json(client, url, status=200, **kwargs):
    response = client.get(url, **kwargs)
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    return response.get_json()


def test_record_by_id(client):
    record = get_json(client, "/api/v1/records/0704.0001")
    assert record == FIXTURE_RECORDS[3].to_dict()


def test_record_ids_may_contain_slashes(slash_client):
    assert get_json(slash_client, f"/api/v1/records/{OLD_STYLE_ID}")["id"] == OLD_STYLE_ID
    similar = get_json(slash_client, f"/api/v1/records/{OLD_STYLE_ID}/similar")
    assert similar["id"] == OLD_STYLE_ID


def test_unknown_record_is_404_not_found(client):
    error = get_json(client, "/api/v1/records/9999.99999", status=404)["error"]
    assert error == {
        "status": 404,
        "code": "not_found",
        "message": error["message"],
        "details": {"id": "9999.99999"},
    }
    assert get_json(client, "/api/v1/records/9999.99999/similar", status=404)["error"]


def test_similar_records_exclude_the_record_itself(client):
    body = get_json(client, "/api/v1/records/2301.00001/similar", query_string={"limit": 2})
    ids = [hit["id"] for hit in body["hits"]]
    assert body["id"] == "2301.00001"
    assert 0 < len(ids) <= 2 and "2301.00001" not in ids
    assert ids[0] == "2201.00002"  # the other deep learning paper


def test_suggest_titles_and_authors_for_a_prefix(client):
    body = get_json(client, "/api/v1/suggest", query_string={"q": "ad", "limit": 5})
    assert body["prefix"] == "ad"
    assert set(body["authors"]) == {"Aditya Akella", "Ada Lovelace"}
    titles = get_json(client, "/api/v1/suggest", query_string={"q": "lea"})["titles"]
    assert "Learned Caches for Inference Serving" in titles


def test_facet_values_with_prefix_and_limit(client):
    body = get_json(client, "/api/v1/facets/author", query_string={"q": "a"})
    assert body["facet"] == "author" and body["prefix"] == "a"
    assert body["values"][0] == {
        "value": "Aditya Akella",
        "count": 2,
        "selected": False,
        "label": "Aditya Akella",
        "parent": None,
    }
    years = get_json(client, "/api/v1/facets/year", query_string={"limit": 2})["values"]
    assert len(years) == 2
    categories = get_json(client, "/api/v1/facets/category")["values"]
    assert {
        "value": "cs.DC",
        "count": 2,
        "selected": False,
        "label": "Distributed, Parallel, and Cluster Computing",
        "parent": "cs",
    } in categories


def test_subject_values_are_found_by_name_and_carry_label_and_parent(client):
    body = get_json(client, "/api/v1/facets/category", query_string={"q": "distributed"})
    assert [(v["value"], v["label"], v["parent"]) for v in body["values"]] == [
        ("cs.DC", "Distributed, Parallel, and Cluster Computing", "cs")
    ]
    subjects = get_json(client, "/api/v1/facets/subject")["values"]
    assert subjects[0] == {
        "value": "cs",
        "count": 4,
        "selected": False,
        "label": "Computer Science",
        "parent": "grp_cs",
    }


@pytest.mark.parametrize("facet", ["author", "year", "category", "subject"])
def test_every_facet_has_a_values_endpoint(client, facet):
    from searchsvc.domain.facets import facet_named

    body = get_json(client, f"/api/v1/facets/{facet}")
    assert body["facet"] == facet and body["prefix"] == ""
    expected = {
        value for record in FIXTURE_RECORDS for value in facet_named(facet).values_of(record)
    }
    assert {v["value"] for v in body["values"]} == expected


@pytest.mark.parametrize("name", ["colour", "authors", "Author"])
def test_a_facet_name_is_exact(client, name):
    error = get_json(client, f"/api/v1/facets/{name}", status=404)["error"]
    assert error["details"]["facet"] == name


def test_unknown_facet_is_404(client):
    error = get_json(client, "/api/v1/facets/colour", status=404)["error"]
    assert error["code"] == "unknown_facet"
    assert error["details"] == {
        "facet": "colour",
        "facets": ["author", "year", "category", "subject"],
    }
    assert "author, year, category, subject" in error["message"]


def test_author_view_pages_records_and_counts(client):
    body = get_json(client, "/api/v1/authors/Aditya Akella", query_string={"per_page": 1})
    assert body["name"] == "Aditya Akella"
    assert body["total"] == 2 and body["pages"] == 2 and len(body["records"]) == 1
    assert body["records"][0]["year"] == 2022  # newest first
    assert {v["value"] for v in body["years"]} == {"2021", "2022"}
    assert {v["value"] for v in body["coauthors"]} == {"Shivaram Venkataraman"}
    assert {v["value"] for v in body["categories"]} >= {"cs.LG", "cs.NI"}


def test_unknown_author_is_404(client):
    assert get_json(client, "/api/v1/authors/Nobody", status=404)["error"]["code"] == "not_found"


def test_stats(client):
    body = get_json(client, "/api/v1/stats")
    assert body["documents"] == len(FIXTURE_RECORDS)
    assert body["cardinalities"]["author"] == 6
    assert body["built_at"] and body["version"] and body["size_bytes"] > 0


def test_stats_and_the_other_read_answers_never_tell_where_the_index_is(client, fixture_index):
    # Where a server keeps its files is its own business (issue 19): not in any answer.
    body = get_json(client, "/api/v1/stats")
    assert "index_dir" not in body
    path = str(fixture_index)
    for url in (
        "/api/v1/stats",
        "/readyz",
        "/healthz",
        "/metrics",
        "/api/v1/search?q=learning",
        "/api/v1/records/0704.0001",
        "/api/v1/openapi.json",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert path not in response.get_data(as_text=True), url
    schema = get_json(client, "/api/v1/openapi.json")["components"]["schemas"]["Stats"]
    assert "index_dir" not in schema["properties"] and "index_dir" not in schema["required"]


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/v1/records/2301.00001/similar?limit=0", "limit"),
        ("/api/v1/suggest?limit=101", "limit"),
        ("/api/v1/facets/author?limit=201", "limit"),
        ("/api/v1/authors/Aditya Akella?per_page=101", "per_page"),
        ("/api/v1/authors/Aditya Akella?page=0", "page"),
    ],
)
def test_bad_parameters_of_every_endpoint_are_400(client, url, parameter):
    error = get_json(client, url, status=400)["error"]
    assert error["code"] == "invalid_parameter"
    assert parameter in error["details"]["errors"]


def test_healthz_and_readyz(client):
    assert get_json(client, "/healthz") == {"status": "ok"}
    ready = get_json(client, "/readyz")
    assert ready["status"] == "ready" and ready["documents"] == len(FIXTURE_RECORDS)


def test_metrics_count_requests_by_endpoint_and_status(client):
    client.get("/api/v1/records/9999.99999")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    assert (
        'searchsvc_http_requests_total{endpoint="/api/v1/records/<path:record_id>",'
        'method="GET",status="404"}' in text
    )
    assert "searchsvc_http_request_duration_seconds_bucket" in text
    assert "searchsvc_index_documents 5.0" in text
    assert "searchsvc_index_size_bytes" in text


def test_docs_page_renders_every_operation_without_external_resources(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    for path in ("/api/v1/search", "/api/v1/records/{record_id}", "/api/v1/stats", "/readyz"):
        assert path in page
    assert "per_page" in page and "SearchResult" in page
    assert "http://" not in page and "https://" not in page  # works offline: no CDN
