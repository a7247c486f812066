"""The whole service on SolrCloud: "change one setting", and everything answers as on Whoosh.

The seed corpus is indexed by the command line into a Solr collection and into a Whoosh
directory; the same app (API, web page), CLI and Python API over each then answer the same
requests the same: totals, hits, facet counts, highlights, records, suggestions, authors and
stats. Relevance scores are the engines' own (BM25 over two shards against Whoosh's BM25F), so
only a clear winner is held equal. Writes go through the task queue on Solr as on Whoosh (the
API with a key, `index --update`, a rebuild keeping the API's records), and a real gunicorn
serves a Solr location over HTTP.

Needs a SolrCloud (the session's `solr_cluster`, or SEARCHSVC_TEST_SOLR=solr://HOST:PORT,...).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from click.testing import CliRunner
from flask.testing import FlaskClient
from markupsafe import escape

from searchsvc.app import create_app
from searchsvc.cli import main
from searchsvc.domain.records import Record
from searchsvc.extension import start_writer
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue
from tests.serving.test_gunicorn import serving, wait_until
from tests.solr.support import drop_collections

pytestmark = pytest.mark.slow

SEARCHSVC = Path(sys.executable).with_name("searchsvc")
AKELLA = "Aditya Akella"
VENKATARAMAN = "Shivaram Venkataraman"
MARKED = re.compile(r"<mark>(.*?)</mark>")
# How long a write may take to be applied by the writer on a loaded machine.
TASK_SECONDS = 90.0


def run(*args: object):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def location_on(hosts: str, name: str) -> str:
    # One replica per shard: replicas change nothing seen here, and halve the creation time.
    return f"solr://{hosts}/solr/service{os.getpid()}_{name}?replicas=1"


@dataclass(frozen=True)
class Indexed:
    """The seed corpus indexed by `searchsvc index seeds/` on both engines."""

    solr: str
    whoosh: str
    solr_output: str
    whoosh_output: str


@pytest.fixture(scope="module")
def indexed(solr_hosts, seeds_dir, tmp_path_factory) -> Iterator[Indexed]:
    solr = location_on(solr_hosts, "seeds")
    whoosh = str(tmp_path_factory.mktemp("whoosh") / "index")
    solr_result = run("index", seeds_dir, "--index", solr)
    whoosh_result = run("index", seeds_dir, "--index", whoosh)
    assert solr_result.exit_code == 0, solr_result.output
    assert whoosh_result.exit_code == 0, whoosh_result.output
    yield Indexed(solr, whoosh, solr_result.stdout, whoosh_result.stdout)
    drop_collections(solr)


@pytest.fixture(scope="module")
def apps(indexed):
    return (
        create_app({"INDEX": indexed.solr, "TESTING": True}),
        create_app({"INDEX": indexed.whoosh, "TESTING": True}),
    )


@dataclass
class Both:
    """Test clients of the same app on Solr and on Whoosh."""

    solr: FlaskClient
    whoosh: FlaskClient

    def get(self, path: str, **options):
        """Both answers, after checking that their statuses are equal."""
        on_solr = self.solr.get(path, **options)
        on_whoosh = self.whoosh.get(path, **options)
        assert on_solr.status_code == on_whoosh.status_code, (path, on_solr.get_data()[:500])
        return on_solr, on_whoosh

    def json(self, path: str, status: int = 200):
        on_solr, on_whoosh = self.get(path)
        assert on_solr.status_code == status, (path, on_solr.get_data()[:500])
        return on_solr.get_json(), on_whoosh.get_json()


@pytest.fixture
def both(apps) -> Both:
    return Both(apps[0].test_client(), apps[1].test_client())


def hits_by_id(result: dict) -> dict[str, dict]:
    return {hit["id"]: hit for hit in result["hits"]}


def without_scores(hit: dict) -> dict:
    return {key: value for key, value in hit.items() if key != "score"}


# -- building with the command line ----------------------------------------------------------
def test_the_cli_indexes_the_seeds_into_solr_as_into_whoosh(indexed, seed_records):
    for output in (indexed.solr_output, indexed.whoosh_output):
        assert output.startswith("read 36, indexed 33, merged 3, skipped 0 in "), output
    assert indexed.solr_output.rstrip().endswith(f"-> {indexed.solr}")
    with SearchService.open(indexed.solr) as service:
        assert {r.id: r for r in service.records()} == {r.id: r for r in seed_records}


# -- searches --------------------------------------------------------------------------------
SEARCHES = [
    # Relevance: every hit on one page, so that the sets compare whatever the ranking.
    "q=cluster+scheduling&per_page=100",
    f"q=deep+learning&author={quote(VENKATARAMAN)}&year_from=2021&facets=author,year"
    "&facet_size=3&per_page=100",
    "q=%22learned+caches%22",
    "q=%22deep+learning%22~2&per_page=100",
    "q=sched*+AND+NOT+gpu&per_page=100",
    "q=(caches+OR+tlb)+AND+learning&per_page=100",
    "q=year:2020..2022+title:(network+OR+caches)&per_page=100",
    "q=author:akella&category=cs.db&per_page=100",
    "q=category:cs.NI&per_page=100",
    "q=schedular~&per_page=100",
    "q=learning%5E2+serving&per_page=100",
    "q=schedulng",
    "q=nosuchwordanywhere",
    "q=title:scheduling+abstract:latency&per_page=100",
    # Sorted and browsed: the order too.
    "q=scheduling&category=cs.DC&category=cs.NI&sort=newest&highlight=false&facets=",
    "per_page=100",
    "q=*&per_page=100&sort=oldest",
    f"author={quote(AKELLA)}&year=2021&year=2023&facet_size=100&sort=title",
    "category=cs.DC&year_from=2020&year_to=2022&sort=newest&per_page=100",
    "sort=oldest&per_page=5&page=2",
    "sort=title&per_page=7&page=3",
    "q=learning&sort=newest&per_page=4&page=2",
    "q=learning&page=99",
    # Refused the same way.
    "q=title:",
    "q=%22learned+caches",
    "per_page=500",
    "sort=sideways",
]


@pytest.mark.parametrize("query", SEARCHES)
def test_searches_answer_the_same_on_both_engines(both, query):
    on_solr, on_whoosh = both.get(f"/api/v1/search?{query}")
    solr, whoosh = on_solr.get_json(), on_whoosh.get_json()
    if on_solr.status_code != 200:
        assert solr == whoosh
        return
    assert solr["total"] == whoosh["total"]
    assert (solr["page"], solr["pages"], solr["per_page"]) == (
        whoosh["page"],
        whoosh["pages"],
        whoosh["per_page"],
    )
    assert solr["facets"] == whoosh["facets"]  # values, counts, order and selection
    assert solr["suggestion"] == whoosh["suggestion"]
    ranked = "q=" in query and "sort=" not in query and "q=*" not in query
    if ranked:
        assert set(hits_by_id(solr)) == set(hits_by_id(whoosh))
        assert all(hit["score"] is not None for hit in solr["hits"])
    else:
        assert [hit["id"] for hit in solr["hits"]] == [hit["id"] for hit in whoosh["hits"]]
    # The records and their highlights, hit by hit.
    whoosh_hits = hits_by_id(whoosh)
    for hit in solr["hits"]:
        assert without_scores(hit) == without_scores(whoosh_hits[hit["id"]])


def test_a_few_searches_have_the_expected_totals_on_solr(both):
    expected = {"q=%22learned+caches%22": 1, "per_page=1": 33, "q=category:cs.NI": 4}
    for query, total in expected.items():
        solr, _ = both.json(f"/api/v1/search?{query}")
        assert solr["total"] == total, query
    solr, _ = both.json("/api/v1/search?q=schedulng")
    assert solr["suggestion"] == "scheduling"


@pytest.mark.parametrize("sort", ["newest", "oldest", "title"])
def test_paging_walks_the_same_records_in_the_same_order(both, sort):
    pages = []
    for page in range(1, 7):
        solr, whoosh = both.json(f"/api/v1/search?sort={sort}&per_page=7&page={page}&facets=")
        assert [h["id"] for h in solr["hits"]] == [h["id"] for h in whoosh["hits"]]
        pages.append([h["id"] for h in solr["hits"]])
    walked = [record_id for page in pages for record_id in page]
    assert len(walked) == len(set(walked)) == 33 and pages[-1] == []


def test_a_clear_winner_ranks_first_on_both_engines(both):
    """Scores differ between the engines; a top hit well ahead of the second is held equal."""
    compared = 0
    for q in ("deep learning", "cluster", "network", "congestion control", "serverless", "caches"):
        solr, whoosh = both.json(f"/api/v1/search?q={quote(q)}&per_page=2&facets=")
        ahead = [
            len(result["hits"]) == 1
            or result["hits"][0]["score"] > 1.03 * result["hits"][1]["score"]
            for result in (solr, whoosh)
        ]
        if all(ahead):
            assert solr["hits"][0]["id"] == whoosh["hits"][0]["id"], q
            compared += 1
    assert compared >= 2


# -- records, similar, suggest, facets, authors, stats ---------------------------------------
def test_every_record_is_the_same_by_id(both, seed_records):
    for record in seed_records:
        solr, whoosh = both.json(f"/api/v1/records/{quote(record.id, safe='')}")
        assert solr == whoosh == record.to_dict()
    solr, whoosh = both.json("/api/v1/records/no-such-record", status=404)
    assert solr == whoosh and solr["error"]["code"] == "not_found"


def test_similar_records_are_other_records_of_the_index(both, seed_records):
    ids = {record.id for record in seed_records}
    for record in seed_records[:5]:
        solr, whoosh = both.json(f"/api/v1/records/{quote(record.id, safe='')}/similar?limit=5")
        assert solr["id"] == record.id
        found = [hit["id"] for hit in solr["hits"]]
        # Each engine's own "more like this": other records of the index, not the same ones.
        assert found and len(found) <= 5 and len(set(found)) == len(found)
        assert record.id not in found and set(found) <= ids
        assert all(hit["score"] is not None for hit in solr["hits"])
        assert {hit["id"] for hit in whoosh["hits"]} <= ids
    solr, whoosh = both.json("/api/v1/records/no-such-record/similar", status=404)
    assert solr == whoosh


@pytest.mark.parametrize("prefix", ["sched", "deep le", "ad", "Shiv", "learned cach", "zzz", "a"])
def test_suggestions_are_the_same(both, prefix):
    solr, whoosh = both.json(f"/api/v1/suggest?q={quote(prefix)}&limit=5")
    assert solr == whoosh


def test_suggestions_find_titles_and_authors_on_solr(both):
    solr, _ = both.json("/api/v1/suggest?q=sched&limit=3")
    assert solr["titles"] and all("sched" in title.lower() for title in solr["titles"])
    solr, _ = both.json("/api/v1/suggest?q=aditya")
    assert solr["authors"] == [AKELLA]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/facets/category?q=cs.&limit=3",
        "/api/v1/facets/category",
        "/api/v1/facets/author?q=ven",
        "/api/v1/facets/author?q=AKELLA",
        "/api/v1/facets/year?limit=100",
        "/api/v1/facets/year?q=202",
        "/api/v1/facets/author?q=nobody",
    ],
)
def test_facet_value_search_is_the_same(both, path):
    solr, whoosh = both.json(path)
    assert solr == whoosh


def test_an_unknown_facet_is_the_same_404(both):
    solr, whoosh = both.json("/api/v1/facets/colour", status=404)
    assert solr == whoosh and solr["error"]["code"] == "unknown_facet"


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/authors/{quote(AKELLA)}?per_page=5",
        f"/api/v1/authors/{quote(AKELLA.lower())}?per_page=5&page=2",
        f"/api/v1/authors/{quote(VENKATARAMAN)}?per_page=100",
    ],
)
def test_author_views_are_the_same(both, path):
    solr, whoosh = both.json(path)
    assert solr == whoosh
    assert solr["total"] == 18


def test_an_unknown_author_is_the_same_404(both):
    solr, whoosh = both.json("/api/v1/authors/Nobody%20At%20All", status=404)
    assert solr == whoosh


def test_stats_count_the_same_documents_and_facet_values(both):
    solr, whoosh = both.json("/api/v1/stats")
    assert solr["documents"] == whoosh["documents"] == 33
    assert solr["facets"] == whoosh["facets"]
    assert solr["cardinalities"] == whoosh["cardinalities"]
    assert solr["built_at"] and solr["version"]


def test_the_atom_feed_lists_the_same_entries(both):
    on_solr, on_whoosh = both.get("/api/v1/search.atom?q=scheduling&category=cs.DC")
    assert on_solr.status_code == 200
    # Each feed is stamped with the second it was made (its <updated>, and that of entries
    # without a year): the two requests may fall in different seconds.
    assert _made_at_removed(on_solr.get_data()) == _made_at_removed(on_whoosh.get_data())


def _made_at_removed(feed: bytes) -> bytes:
    made_at = re.search(rb"<updated>([^<]+)</updated>", feed)
    assert made_at is not None
    return feed.replace(made_at.group(1), b"MADE-AT")


def test_etags_follow_the_solr_index_version(both):
    first = both.solr.get("/api/v1/search?q=learning")
    again = both.solr.get(
        "/api/v1/search?q=learning", headers={"If-None-Match": first.headers["ETag"]}
    )
    assert again.status_code == 304


# -- the web page ----------------------------------------------------------------------------
def test_the_search_page_renders_the_same_hits_with_marks(both):
    on_solr, on_whoosh = both.get("/?q=scheduling&sort=newest", headers={"Accept": "text/html"})
    assert on_solr.status_code == 200
    page = on_solr.get_data(as_text=True)
    api, _ = both.json("/api/v1/search?q=scheduling&sort=newest")
    for hit in api["hits"]:
        assert f'href="/records/{hit["id"]}"' in page
    marked = [word.lower() for word in MARKED.findall(page)]
    assert marked and all(word.startswith("schedul") for word in marked)
    assert MARKED.findall(page) == MARKED.findall(on_whoosh.get_data(as_text=True))


def test_record_and_author_pages_render_on_solr(both, seed_records):
    record = seed_records[0]
    page, _ = both.get(f"/records/{quote(record.id, safe='')}")
    assert page.status_code == 200
    assert str(escape(record.title.split(":")[0])) in page.get_data(as_text=True)
    bibtex, whoosh_bibtex = both.get(f"/records/{quote(record.id, safe='')}?format=bibtex")
    assert bibtex.get_data() == whoosh_bibtex.get_data()
    author, _ = both.get(f"/authors/{quote(AKELLA)}")
    assert author.status_code == 200 and AKELLA in author.get_data(as_text=True)
    missing, _ = both.get("/records/no-such-record")
    assert missing.status_code == 404


# -- the command line and the Python API -----------------------------------------------------
def test_export_gives_every_record(indexed, seed_records):
    exported = subprocess.run(
        [str(SEARCHSVC), "export", "--index", indexed.solr],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    records = [Record.from_dict(json.loads(line)) for line in exported.stdout.splitlines()]
    assert len(records) == 33
    assert {r.id: r for r in records} == {r.id: r for r in seed_records}
    from_whoosh = run("export", "--index", indexed.whoosh).stdout
    assert sorted(exported.stdout.splitlines()) == sorted(from_whoosh.splitlines())


def test_cli_search_and_stats_answer_as_on_whoosh(indexed):
    for query in ('"learned caches"', "cluster scheduling"):
        found = [
            json.loads(run("search", query, "--json", "--per-page", "100", "--index", at).stdout)
            for at in (indexed.solr, indexed.whoosh)
        ]
        assert found[0]["total"] == found[1]["total"] > 0
        assert {h["id"] for h in found[0]["hits"]} == {h["id"] for h in found[1]["hits"]}
    # The terminal text, hits in the same order (no scores when sorted), less the time taken.
    texts = [
        run("search", "scheduling", "--category", "cs.NI", "--sort", "newest", "--index", at)
        for at in (indexed.solr, indexed.whoosh)
    ]
    assert texts[0].exit_code == 0 and texts[0].stdout.startswith("2 records · page 1 of 1 · ")
    untimed = [re.sub(r" · \d+ ms", "", text.stdout, count=1) for text in texts]
    assert untimed[0] == untimed[1]
    stats = [
        json.loads(run("stats", "--json", "--index", at).stdout)
        for at in (indexed.solr, indexed.whoosh)
    ]
    for key in ("documents", "facets", "cardinalities"):
        assert stats[0][key] == stats[1][key]
    assert stats[0]["index_dir"] == indexed.solr


def test_the_python_api_on_solr(indexed):
    with (
        SearchService.open(indexed.solr) as solr,
        SearchService.open(indexed.whoosh) as whoosh,
    ):
        searches = [
            service.search(
                "deep learning", category=["cs.DC", "cs.LG"], year_from=2021, per_page=100
            )
            for service in (solr, whoosh)
        ]
        assert searches[0].total == searches[1].total > 0
        assert {h.record.id for h in searches[0].hits} == {h.record.id for h in searches[1].hits}
        assert searches[0].facets == searches[1].facets
        first = searches[0].hits[0].record
        assert solr.get(first.id) == whoosh.get(first.id) == first
        assert solr.suggest("sched") == whoosh.suggest("sched")
        assert solr.author(AKELLA, per_page=3) == whoosh.author(AKELLA, per_page=3)
        assert solr.facet_values("year") == whoosh.facet_values("year")
        assert solr.stats().documents == 33


# -- writes through the task queue -----------------------------------------------------------
@dataclass(frozen=True)
class Writable:
    location: str
    tasks_db: Path
    token: str


@pytest.fixture(scope="module")
def writable(solr_hosts, seeds_dir, tmp_path_factory) -> Iterator[Writable]:
    """A Solr collection of the seeds with a task queue and a write key, for tests that write
    (each with ids of its own)."""
    location = location_on(solr_hosts, "writes")
    tasks_db = tmp_path_factory.mktemp("tasks") / "tasks.sqlite3"
    built = run("index", seeds_dir, "--index", location, "--tasks-db", tasks_db)
    assert built.exit_code == 0, built.output
    created = run("keys", "create", "app", "--index", location, "--tasks-db", tasks_db)
    assert created.exit_code == 0, created.output
    yield Writable(location, tasks_db, created.stdout.strip())
    drop_collections(location)


@pytest.fixture
def write_app(writable):
    """The app on the writable location with its embedded writer running (as in gunicorn)."""
    app = create_app(
        {
            "INDEX": writable.location,
            "TASKS_DB": str(writable.tasks_db),
            "TESTING": True,
            "WRITE_RATE_LIMIT": "",
        }
    )
    assert start_writer(app) is not None
    yield app
    thread, stop = app.extensions["searchsvc.writer"]
    stop.set()
    thread.join(timeout=60)


def wait_for_task(client, token: str, task_id: int) -> dict:
    deadline = time.monotonic() + TASK_SECONDS
    while True:
        response = client.get(f"/api/v1/tasks/{task_id}?wait=5", headers=bearer(token))
        assert response.status_code == 200, response.get_data()
        task = response.get_json()
        if task["status"] in ("succeeded", "failed") or time.monotonic() > deadline:
            return task


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def search_ids(client, q: str) -> list[str]:
    response = client.get("/api/v1/search", query_string={"q": q})
    assert response.status_code == 200, response.get_data()
    return [hit["id"] for hit in response.get_json()["hits"]]


def test_a_record_posted_to_the_api_is_applied_and_found_on_solr(write_app, writable):
    client = write_app.test_client()
    posted = client.post(
        "/api/v1/records",
        json={
            "id": "api-quokka-1",
            "title": "Quokka migration patterns",
            "authors": ["Q. Uokka"],
            "year": 2025,
            "categories": ["q-bio.PE"],
        },
        headers=bearer(writable.token),
    )
    assert posted.status_code == 202, posted.get_data()
    task = wait_for_task(client, writable.token, posted.get_json()["id"])
    assert task["status"] == "succeeded", task
    assert task["result"]["batch"]["added"] == 1
    assert search_ids(client, "quokka") == ["api-quokka-1"]
    assert client.get("/api/v1/records/api-quokka-1").get_json()["year"] == 2025
    facets = client.get("/api/v1/search?category=q-bio.PE").get_json()
    assert facets["total"] == 1

    replaced = client.put(
        "/api/v1/records/api-quokka-1",
        json={"title": "Quokka migration, revised"},
        headers=bearer(writable.token),
    )
    assert wait_for_task(client, writable.token, replaced.get_json()["id"])["status"] == (
        "succeeded"
    )
    assert client.get("/api/v1/records/api-quokka-1").get_json()["title"] == (
        "Quokka migration, revised"
    )
    deleted = client.delete("/api/v1/records/api-quokka-1", headers=bearer(writable.token))
    assert wait_for_task(client, writable.token, deleted.get_json()["id"])["status"] == (
        "succeeded"
    )
    assert search_ids(client, "quokka") == []
    assert client.get("/api/v1/records/api-quokka-1").status_code == 404


def test_a_bad_record_is_refused_before_it_reaches_solr(write_app, writable):
    client = write_app.test_client()
    refused = client.post(
        "/api/v1/records", json={"id": "x", "colour": "red"}, headers=bearer(writable.token)
    )
    assert refused.status_code == 400
    assert refused.get_json()["error"]["code"] == "invalid_parameter"
    assert client.post("/api/v1/records", json={"id": "x", "title": "T"}).status_code == 401


def test_index_update_goes_through_the_queue_on_solr(writable, tmp_path):
    source = tmp_path / "more.jsonl"
    source.write_text(
        json.dumps({"id": "cli-wombat-1", "title": "Wombat burrow ventilation"}) + "\n"
    )
    result = run(
        "index", source, "--update", "--index", writable.location, "--tasks-db", writable.tasks_db
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 1, indexed 1, merged 0")
    tasks = TaskQueue(writable.tasks_db).tasks()
    assert (tasks[0].origin, tasks[0].status, tasks[0].size) == ("cli", "succeeded", 1)
    with SearchService.open(writable.location) as service:
        assert [hit.record.id for hit in service.search("wombat").hits] == ["cli-wombat-1"]


def test_index_update_waits_for_the_running_writer_on_solr(write_app, writable, tmp_path):
    source = tmp_path / "more.jsonl"
    source.write_text(json.dumps({"id": "cli-numbat-1", "title": "Numbat foraging"}) + "\n")
    result = run(
        "index", source, "--update", "--index", writable.location, "--tasks-db", writable.tasks_db
    )
    assert result.exit_code == 0, result.output
    assert wait_until(lambda: search_ids(write_app.test_client(), "numbat"), seconds=30) == [
        "cli-numbat-1"
    ]


def test_a_rebuild_keeps_the_records_written_through_the_api_on_solr(
    write_app, writable, seeds_dir
):
    client = write_app.test_client()
    posted = client.post(
        "/api/v1/records",
        json={"id": "api-bilby-1", "title": "Bilby habitat survey"},
        headers=bearer(writable.token),
    )
    assert wait_for_task(client, writable.token, posted.get_json()["id"])["status"] == "succeeded"
    rebuilt = run("index", seeds_dir, "--index", writable.location, "--tasks-db", writable.tasks_db)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "written through the API" in rebuilt.stdout
    # The reads follow the alias to the new collection.
    assert search_ids(client, "bilby") == ["api-bilby-1"]
    assert client.get("/api/v1/search?per_page=1").get_json()["total"] > 33


def test_without_a_queue_an_update_writes_to_solr_at_once(solr_hosts, seeds_dir, tmp_path):
    """No --tasks-db: a build needs no queue, and an update is one engine commit of its own."""
    location = location_on(solr_hosts, "no_queue")
    try:
        built = run("index", seeds_dir, "--index", location)
        assert built.exit_code == 0, built.output
        source = tmp_path / "more.jsonl"
        source.write_text(json.dumps({"id": "direct-1", "title": "Echidna spines"}) + "\n")
        updated = run("index", source, "--update", "--index", location)
        assert updated.exit_code == 0, updated.output
        assert updated.stdout.startswith("read 1, indexed 1, merged 0")
        with SearchService.open(location) as service:
            assert service.stats().documents == 34
            assert [hit.record.id for hit in service.search("echidna").hits] == ["direct-1"]
        keys = run("keys", "create", "app", "--index", location)
        assert keys.exit_code == 1 and "--tasks-db" in keys.stderr
    finally:
        drop_collections(location)


# -- a real gunicorn ---------------------------------------------------------------------------
def test_gunicorn_serves_a_solr_location_over_http(writable, tmp_path):
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "SEARCHSVC_TASKS_DB": str(writable.tasks_db),
        "SEARCHSVC_ACCESS_LOG": "",
    }
    log = tmp_path / "gunicorn.log"
    with serving(writable.location, log, env) as (base_url, _):
        ready = requests.get(f"{base_url}/readyz", timeout=30).json()
        assert ready["status"] == "ready" and ready["documents"] >= 33
        found = requests.get(
            f"{base_url}/api/v1/search",
            params={"q": '"learned caches"', "facets": "author,year"},
            headers={"Accept-Encoding": "gzip"},
            timeout=30,
        )
        assert found.status_code == 200, found.text
        assert found.json()["total"] == 1 and set(found.json()["facets"]) == {"author", "year"}
        page = requests.get(f"{base_url}/?q=caches", timeout=30)
        assert page.status_code == 200 and "<mark>" in page.text
        assert "searchsvc_index_documents" in requests.get(f"{base_url}/metrics", timeout=30).text

        # A write through HTTP, applied by the writer a worker elected.
        from searchsvc.client import SearchClient

        with SearchClient(base_url, api_key=writable.token) as client:
            assert client.search('"learned caches"').total == 1
            (task,) = client.add([Record(id="http-platypus-1", title="Platypus electroreception")])
            assert client.wait(task, timeout=TASK_SECONDS).status == "succeeded"
            assert wait_until(
                lambda: [h.record.id for h in client.search("platypus").hits], seconds=30
            ) == ["http-platypus-1"]
    assert "Traceback" not in log.read_text()
