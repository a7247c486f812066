"""Ids reserved by the id rule (domain/records.py RESERVED_IDS) are a 400 on the write API,
whichever way the id arrives (issue 33: Solr's meta document id was accepted, then silently
overwritten by the next commit)."""

from __future__ import annotations

import pytest

from searchsvc.app import create_app
from searchsvc.domain.records import RESERVED_IDS
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.support import build_index


@pytest.fixture
def index(tmp_path) -> str:
    return build_index(tmp_path / "index")


@pytest.fixture
def api(index):
    return create_app({"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": ""}).test_client()


@pytest.fixture
def writer_key(index) -> dict[str, str]:
    token = KeyStore(TaskQueue(queue_path(index))).create("tests", ("write",))[1]
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("record_id", sorted(RESERVED_IDS))
def test_a_reserved_id_is_a_400_saying_it_is_reserved_and_nothing_is_queued(
    api, index, writer_key, record_id
):
    queue = TaskQueue(queue_path(index))
    before = queue.counts()
    posted = api.post(
        "/api/v1/records",
        json=[{"id": "fine", "title": "T"}, {"id": record_id, "title": "T"}],
        headers=writer_key,
    )
    assert posted.status_code == 400
    [error] = posted.get_json()["error"]["details"]["errors"]
    assert (error["position"], error["field"]) == (1, "id")
    assert f"record id {record_id!r} is reserved" in error["reason"]
    put = api.put(f"/api/v1/records/{record_id}", json={"title": "T"}, headers=writer_key)
    assert put.status_code == 400
    assert "is reserved" in put.get_json()["error"]["details"]["errors"][0]["reason"]
    assert queue.counts() == before
