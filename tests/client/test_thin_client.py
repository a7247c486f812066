"""The client package on its own (clients/python, `searchsvc_client`): the same requests as the
server's translator, the same answers as in-process in its own types, the same errors under the
same names; and, installed into a fresh virtualenv, none of the server coming with it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

import searchsvc_client
from searchsvc import client as server_client
from searchsvc.domain import errors as domain_errors
from searchsvc.domain import query as domain_query
from searchsvc.service import SearchService
from searchsvc_client import (
    InvalidRequest,
    QueryError,
    Record,
    RecordNotFound,
    SearchClient,
    SearchRequest,
    SearchResult,
    SearchsvcError,
    ServiceUnreachable,
    Task,
    TaskTimeout,
    UnknownFacet,
)
from searchsvc_client.decoding import Decoder
from tests.client.test_client import _wsgi_session, new_record, writable_app
from tests.serving.test_gunicorn import free_port, live_server  # noqa: F401
from tests.support import FIXTURE_RECORDS

CLIENT_PROJECT = Path(__file__).resolve().parents[2] / "clients" / "python"
IGNORED = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
# Distributions of the server that the client must not bring (top-level names, normalised).
SERVER_DISTRIBUTIONS = (
    "searchsvc",
    "flask",
    "whoosh",
    "onnxruntime",
    "gunicorn",
    "numpy",
    "marshmallow",
    "werkzeug",
    "orjson",
    "usearch",
    "tokenizers",
)

SEARCHES = [
    {},
    {"q": "learning"},
    {"q": "deep learning", "author": ["Ada Lovelace", "Aditya Akella"], "year": 2021},
    {"q": "x", "category": "cs.LG", "subject": ["cs"], "year_from": 2000, "year_to": 2024},
    {"sort": "oldest", "page": 3, "per_page": 7, "facets": ["author"], "facet_size": 20},
    {"q": "nets", "highlight": False, "fields": ["title"], "crosslists": "exclude"},
    {"q": "nets", "mode": "lexical", "facets": []},
]


@pytest.mark.parametrize("params", SEARCHES, ids=str)
def test_a_search_sends_the_query_string_the_server_writes(params):
    params = dict(params)
    q = params.pop("q", "")
    mine = SearchRequest.from_params(q, **params).to_params()
    servers = domain_query.query_params(domain_query.SearchRequest.from_params(q, **params))
    assert mine == servers


def test_unknown_search_arguments_fail_before_any_request():
    client = SearchClient(f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(InvalidRequest) as refused:
        client.search("learning", colour="red")
    assert refused.value.details == {"parameter": "colour"}


def test_the_echoed_query_decodes_to_what_the_server_echoes(fixture_index):
    with SearchService.open(fixture_index) as service:
        local = service.search("learning", category=["cs.LG"], facets=["author", "year"])
    body = json.loads(json.dumps(local.to_dict()))
    remote = Decoder().search_result(body)
    assert remote.request.to_dict() == local.request.to_dict()
    assert [hit.to_dict() for hit in remote.hits] == body["hits"]
    assert {name: [v.to_dict() for v in values] for name, values in remote.facets.items()} == (
        body["facets"]
    )
    assert (remote.total, remote.pages, remote.matched_by_words) == (
        local.total,
        local.pages,
        local.matched_by_words,
    )


def test_the_errors_have_the_servers_names_and_codes():
    for code, error in searchsvc_client.ERROR_OF_CODE.items():
        assert issubclass(error, SearchsvcError)
        server_error = server_client.ERROR_OF_CODE[code]
        assert server_error.__name__ == error.__name__
        if hasattr(domain_errors, error.__name__):
            assert getattr(domain_errors, error.__name__) is server_error
        else:  # a client-only error: the server package's is the client package's too
            assert issubclass(server_error, error)
            assert issubclass(server_error, domain_errors.SearchsvcError)


def test_the_server_packages_client_is_the_client_packages():
    assert issubclass(server_client.SearchClient, SearchClient)
    public = {name for name in dir(SearchClient) if not name.startswith("_")}
    assert public <= set(dir(server_client.SearchClient))
    assert {"search", "add", "wait", "task", "delete", "stats", "author"} <= public


# -- against a live service --------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(live_server):  # noqa: F811
    with SearchClient(live_server.base_url) as client:
        yield client


@pytest.mark.slow
def test_search_returns_its_own_objects_equal_to_the_servers(client, live_server):  # noqa: F811
    params = {"category": ["cs.LG"], "facets": ["author", "year"], "per_page": 5}
    remote = client.search("learning", **params)
    assert isinstance(remote, SearchResult) and isinstance(remote.hits[0].record, Record)
    with SearchService.open(live_server.index_dir) as service:
        local = service.search("learning", **params)
    assert remote.total == local.total == 2
    assert [hit.to_dict() for hit in remote.hits] == [hit.to_dict() for hit in local.hits]
    assert remote.request.to_dict() == local.request.to_dict()
    assert remote.facets.keys() == local.facets.keys() == {"author", "year"}
    for name, values in local.facets.items():
        assert [v.to_dict() for v in remote.facets[name]] == [v.to_dict() for v in values]


@pytest.mark.slow
def test_records_similar_suggest_facets_author_stats(client):
    assert client.get("0704.0001").to_dict() == FIXTURE_RECORDS[3].to_dict()
    assert client.similar("2301.00001", limit=1)[0].record.id == "2201.00002"
    assert "Ada Lovelace" in client.suggest("ad").authors
    assert client.facet_values("author", "adi")[0].value == "Aditya Akella"
    view = client.author("Aditya Akella", per_page=1)
    assert view.total == 2 and len(view.records) == 1 and view.pages == 2
    stats = client.stats()
    assert stats.documents >= len(FIXTURE_RECORDS) and client.version() == stats.version


@pytest.mark.slow
def test_server_errors_come_back_under_their_names(client):
    with pytest.raises(RecordNotFound) as missing:
        client.get("0000.00000")
    assert missing.value.details["status"] == 404 and isinstance(missing.value, LookupError)
    with pytest.raises(QueryError):
        client.search("(" * 40)
    with pytest.raises(InvalidRequest) as invalid:
        client.search(per_page=0)  # checked by the service
    assert invalid.value.details["status"] == 400
    with pytest.raises(UnknownFacet):
        client.facet_values("colour")


def test_unreachable_service_raises_service_unreachable():
    with pytest.raises(ServiceUnreachable):
        SearchClient(f"http://127.0.0.1:{free_port()}", timeout=2).stats()


@pytest.mark.slow
def test_writes_queue_tasks_and_wait_times_out_without_a_writer(tmp_path):
    app, key = writable_app(tmp_path)
    client = SearchClient("http://testserver", api_key=key, session=_wsgi_session(app))
    mine = Record.from_dict(new_record(200).to_dict())
    [task] = client.add([mine, new_record(201).to_dict()])
    assert isinstance(task, Task) and task.kind == "upsert" and task.size == 2
    assert client.task(task.id) == task
    with pytest.raises(TaskTimeout) as timed_out:
        client.wait(task, timeout=0.2)
    assert isinstance(timed_out.value, TimeoutError) and timed_out.value.task.status == "enqueued"
    assert client.delete(["2409.00200"]).kind == "delete"


# -- installed alone ---------------------------------------------------------------------------

# Run by the fresh virtualenv's interpreter: a search of the live service, and what it loaded.
IN_THE_FRESH_VENV = """
import json, sys
import searchsvc_client
with searchsvc_client.SearchClient(sys.argv[1]) as client:
    result = client.search("learning", category=["cs.LG"], per_page=5)
    try:
        client.get("0000.00000")
    except searchsvc_client.RecordNotFound as exc:
        missing = exc.details["status"]
print(json.dumps({
    "total": result.total,
    "ids": [hit.record.id for hit in result.hits],
    "missing": missing,
    "module": searchsvc_client.__file__,
    "loaded": sorted({name.split(".")[0] for name in sys.modules}),
}))
"""


@pytest.mark.slow
def test_installed_into_a_fresh_venv_it_brings_none_of_the_server_and_searches(
    tmp_path,
    live_server,  # noqa: F811
):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    # From PyPI (requests and its dependencies; setuptools to build), or from wheels that pip's
    # configuration points at (PIP_FIND_LINKS, PIP_NO_INDEX) on a machine without the network.
    # A copy: building it writes build/ beside its sources.
    project = shutil.copytree(CLIENT_PROJECT, tmp_path / "client", ignore=IGNORED)
    install = run([python, "-m", "pip", "install", "--quiet", str(project)], tmp_path)
    assert install.returncode == 0, install.stderr
    listed = run([python, "-m", "pip", "list", "--format=json"], tmp_path)
    versions = {
        item["name"].lower().replace("_", "-"): item["version"]
        for item in json.loads(listed.stdout)
    }
    print("pip list of the fresh venv:", versions)  # shown with -s
    installed = set(versions)
    assert {"searchsvc-client", "requests"} <= installed
    assert installed & set(SERVER_DISTRIBUTIONS) == set()

    searched = run([python, "-c", IN_THE_FRESH_VENV, live_server.base_url], tmp_path)
    assert searched.returncode == 0, searched.stderr
    answer = json.loads(searched.stdout)
    assert answer["total"] == 2 and len(answer["ids"]) == 2 and answer["missing"] == 404
    assert Path(answer["module"]).is_relative_to(env_dir)  # the copy installed, not this tree
    assert set(answer["loaded"]) & {"searchsvc", *SERVER_DISTRIBUTIONS} == set()


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # Outside the project (cwd), without this interpreter's paths: the fresh venv's own.
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300, check=False
    )
