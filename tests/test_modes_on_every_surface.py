"""The search modes on every surface: the HTTP API, the web page, the command line and the Python
API, over a real index of the seed corpus with vectors (the engine-level rules are in
tests/contract/test_modes.py, the encoder's in tests/embeddings/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from searchsvc.app import create_app
from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.modes import SEMANTIC_DEPTH
from searchsvc.domain.query import MAX_RESULT_WINDOW, SearchRequest, SearchResult
from searchsvc.indexing.indexer import build_index_from_records
from searchsvc.service import SearchService

REFERENCE = Path(__file__).parent / "data" / "minilm_reference_vectors.json"


@pytest.fixture(scope="module")
def vector_index(tmp_path_factory, seed_records) -> str:
    location = str(tmp_path_factory.mktemp("vectors") / "index")
    build_index_from_records(seed_records, location, vectors=True)
    return location


@pytest.fixture(scope="module")
def vector_client(vector_index):
    return create_app({"INDEX": vector_index, "TESTING": True}).test_client()


# -- the HTTP API ------------------------------------------------------------------------------
def test_the_api_searches_in_each_mode(vector_client, seed_records):
    default = vector_client.get("/api/v1/search?q=gpu+training").get_json()
    assert default["mode"] == "hybrid"
    assert default["query"]["mode"] == "hybrid"
    for mode in ("lexical", "hybrid", "semantic"):
        body = vector_client.get(f"/api/v1/search?q=gpu+training&mode={mode}").get_json()
        assert body["mode"] == mode
    semantic = vector_client.get("/api/v1/search?q=gpu+training&mode=semantic").get_json()
    # The records near enough the query's meaning (modes.MEANING_FLOOR), counted apart.
    assert 0 < semantic["total"] < min(SEMANTIC_DEPTH, len(seed_records))
    assert semantic["total"] == semantic["matched_by_words"] + semantic["added_by_meaning"]
    assert semantic["meaning_adds"] is True
    posted = vector_client.post("/api/v1/search", json={"q": "gpu training", "mode": "semantic"})
    assert posted.get_json()["hits"] == semantic["hits"]


def test_a_bad_mode_is_a_clear_400(vector_client):
    response = vector_client.get("/api/v1/search?q=x&mode=fuzzy")
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert "mode" in json.dumps(error["details"])


def test_asking_for_meaning_without_vectors_says_why(client):
    response = client.get("/api/v1/search?q=cache&mode=semantic")
    assert response.status_code == 409  # a valid request this index cannot serve
    error = response.get_json()["error"]
    assert error["code"] == "mode_unavailable"
    assert error["details"]["parameter"] == "mode"
    assert "vectors" in error["message"]
    assert client.get("/api/v1/search?q=cache").get_json()["mode"] == "lexical"


def test_similar_records_come_from_the_vectors(vector_index, vector_client):
    with SearchService.open(vector_index) as service:
        record_id = service.search("learned caches", mode="lexical").hits[0].record.id
    body = vector_client.get(f"/api/v1/records/{record_id}/similar?limit=5").get_json()
    scores = [hit["score"] for hit in body["hits"]]
    assert len(scores) == 5
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= score <= 1.0 for score in scores)  # cosines, not BM25 scores


# -- what a reader types, in the default mode (issue 31) ---------------------------------------
# On the seed index: exactly what lexical mode selects, however the query is asked.
EXACT_ANSWERS = {"category:cs.NI": 4, '"learned caches"': 1, "qzxwv": 0, "2301.00001": 0}


def _lexical_ids(service: SearchService, q: str) -> set[str]:
    first = service.search(q, mode="lexical", per_page=100)
    assert first.pages == 1
    return {hit.record.id for hit in first.hits}


@pytest.mark.parametrize("q", [*EXACT_ANSWERS, 'author:"Aditya Akella" year:2023'])
def test_the_query_language_keeps_its_meaning_in_the_default_mode_on_every_surface(
    vector_index, vector_client, runner, q
):
    with SearchService.open(vector_index) as service:
        wanted = _lexical_ids(service, q)
        assert len(wanted) == EXACT_ANSWERS.get(q, len(wanted))
        result = service.search(q, per_page=100)  # the default mode
        assert {hit.record.id for hit in result.hits} == wanted
        assert result.total == result.matched_by_words == len(wanted)
        assert result.added_by_meaning == 0
    body = vector_client.get("/api/v1/search", query_string={"q": q, "per_page": 100}).get_json()
    assert {hit["id"] for hit in body["hits"]} == wanted
    assert (body["total"], body["matched_by_words"], body["added_by_meaning"]) == (
        len(wanted),
        len(wanted),
        0,
    )
    posted = vector_client.post("/api/v1/search", json={"q": q, "per_page": 100}).get_json()
    assert posted["total"] == len(wanted)
    heading = _results_heading(vector_client.get("/", query_string={"q": q}))
    assert (
        "No records found" in heading
        if not wanted
        else f"{len(wanted)} record{'' if len(wanted) == 1 else 's'}" in heading
    )
    printed = runner("search", q, "--index", vector_index)
    assert printed.exit_code == 0, printed.output
    assert printed.output.splitlines()[0].startswith(
        f"{len(wanted)} record{'' if len(wanted) == 1 else 's'}"
    )


def _results_heading(response) -> str:
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    found = re.search(r'<h2 id="results-heading"[^>]*>(.*?)</h2>', page, re.S)
    assert found is not None
    return " ".join(found.group(1).split())


def test_an_excluded_word_never_comes_back_in_any_mode(vector_index):
    with SearchService.open(vector_index) as service:
        with_word = _lexical_ids(service, "learning")
        for mode in (None, "hybrid", "semantic", "lexical"):
            found = service.search("NOT learning", mode=mode, per_page=100)
            ids = {hit.record.id for hit in found.hits}
            assert ids and not ids & with_word
            assert found.total == len(ids) and found.added_by_meaning == 0


def test_free_words_are_counted_apart_on_every_surface(vector_index, vector_client, runner):
    q = "making deep learning training cheaper on shared clusters"
    with SearchService.open(vector_index) as service:
        result = service.search(q, per_page=100)
        with_words = _lexical_ids(service, q)
    assert result.mode == "hybrid" and result.meaning_adds
    assert result.matched_by_words == len(with_words)
    assert result.total == result.matched_by_words + result.added_by_meaning
    body = vector_client.get("/api/v1/search", query_string={"q": q}).get_json()
    assert body["meaning_adds"] is True
    assert (body["matched_by_words"], body["added_by_meaning"]) == (
        result.matched_by_words,
        result.added_by_meaning,
    )
    page = vector_client.get("/", query_string={"q": q}).get_data(as_text=True)
    assert (
        f"{result.matched_by_words} with your words, {result.added_by_meaning} related by meaning"
        in page
    )
    first_line = runner("search", q, "--index", vector_index).output.splitlines()[0]
    assert f"({result.matched_by_words} with your words, " in first_line


def test_a_structured_query_says_meaning_only_ranks_it(vector_client):
    body = vector_client.get("/api/v1/search", query_string={"q": '"learned caches"'}).get_json()
    assert body["mode"] == "hybrid" and body["meaning_adds"] is False
    page = vector_client.get("/", query_string={"q": '"learned caches"'}).get_data(as_text=True)
    assert "Only your query&#39;s matches: meaning ranks them with the words and adds none" in page


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "semantic"])
def test_no_search_reaches_past_the_result_window(vector_client, mode):
    # page x per_page at most 10,000 (MAX_RESULT_WINDOW), on every search endpoint.
    deep = {"q": "training", "mode": mode, "page": 101, "per_page": 100}
    responses = {
        "GET": vector_client.get("/api/v1/search", query_string=deep),
        "POST": vector_client.post("/api/v1/search", json=deep),
        "Atom": vector_client.get("/api/v1/search.atom", query_string={**deep, "page": 1001}),
        "page": vector_client.get("/", query_string={**deep, "page": 1001}),
    }
    for name, response in responses.items():
        assert response.status_code == 400, name
        assert "10,000" in response.get_data(as_text=True), name
    edge = vector_client.get("/api/v1/search", query_string={**deep, "page": 100})
    assert edge.status_code == 200
    with pytest.raises(InvalidRequest):
        SearchRequest(q="training", page=2, per_page=MAX_RESULT_WINDOW)


def test_pages_end_at_the_result_window():
    # A search of 50,000 matches pages to the 10,000th result, and no further link is made.
    request = SearchRequest(q="x", per_page=7)
    result = SearchResult(request=request, total=50_000, hits=(), facets={}, took_ms=0.0)
    assert result.pages == MAX_RESULT_WINDOW // 7 and result.total == 50_000


# -- the web page ------------------------------------------------------------------------------
def test_the_page_offers_the_modes_and_keeps_the_chosen_one(vector_client):
    page = vector_client.get("/?q=gpu+training").get_data(as_text=True)
    toggle = re.search(r'<select id="mode" name="mode"[^>]*>(.*?)</select>', page, re.S)
    assert toggle is not None
    options = re.findall(r'<option value="(\w+)"( selected)?>', toggle.group(1))
    assert [value for value, _ in options] == ["hybrid", "lexical", "semantic"]
    assert [value for value, selected in options if selected] == ["hybrid"]
    chosen = vector_client.get("/?q=gpu+training&mode=semantic").get_data(as_text=True)
    assert re.search(r'<option value="semantic" selected>', chosen)
    # A new search from the box keeps the mode.
    assert '<input type="hidden" name="mode" value="semantic">' in chosen


def test_the_page_has_no_toggle_without_vectors(client):
    assert 'id="mode"' not in client.get("/?q=cache").get_data(as_text=True)


def test_a_bad_mode_on_the_page_is_a_400_page(vector_client):
    response = vector_client.get("/?q=x&mode=fuzzy")
    assert response.status_code == 400
    assert "mode" in response.get_data(as_text=True)


# -- the command line --------------------------------------------------------------------------
def test_the_command_line_searches_in_each_mode(runner, vector_index):
    for mode in ("lexical", "hybrid", "semantic"):
        result = runner("search", "gpu training", "--index", vector_index, "--mode", mode)
        assert result.exit_code == 0, result.output
        assert f" · {mode} · " in result.output.splitlines()[0]
    as_json = runner("search", "gpu", "--index", vector_index, "--json")
    assert json.loads(as_json.output)["mode"] == "hybrid"


def test_index_makes_vectors_by_default_where_the_model_is_installed(
    runner, tmp_path, seeds_dir, monkeypatch
):
    monkeypatch.setenv("SEARCHSVC_VECTORS", "auto")
    result = runner("index", str(seeds_dir), "--index", str(tmp_path / "auto"))
    assert result.exit_code == 0, result.output
    with SearchService.open(tmp_path / "auto") as service:
        assert service.search("cache").mode == "hybrid"
    result = runner("index", str(seeds_dir), "--index", str(tmp_path / "off"), "--no-vectors")
    assert result.exit_code == 0, result.output
    with SearchService.open(tmp_path / "off") as service:
        assert service.search("cache").mode == "lexical"


def test_vectors_options_are_for_a_rebuild(runner, tmp_path, seeds_dir):
    result = runner("index", str(seeds_dir), "--index", str(tmp_path), "--update", "--vectors")
    assert result.exit_code == 2
    assert "for a rebuild" in result.output
