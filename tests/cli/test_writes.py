"""The CLI and the task queue: `keys`, `index --update` through the queue, and rebuilds that keep
(or, with --replace, drop) the records written through the API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchsvc.backends import open_backend
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, TaskWriter, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.support import FIXTURE_RECORDS, build_index


@pytest.fixture
def index(tmp_path) -> str:
    return build_index(tmp_path / "index")


def ids_in(location: str) -> set[str]:
    with SearchService.open(location) as service:
        records = list(service.records())
    assert len(records) == len({r.id for r in records}), "an id is held twice"
    return {r.id for r in records}


def write_through_api(index: str, records: list[Record], deletes: list[str] = ()) -> TaskQueue:
    """What POST /api/v1/records and the writer do: an API task, applied."""
    queue = TaskQueue(queue_path(index))
    if records:
        queue.enqueue_upserts(records)
    if deletes:
        queue.enqueue_deletes(list(deletes))
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    return queue


def jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    return str(path)


def test_keys_are_created_listed_and_revoked(runner, index):
    created = runner(
        "keys", "create", "my app", "--scope", "write", "--scope", "read", "--index", index
    )
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    store = KeyStore(TaskQueue(queue_path(index)))
    key = store.authenticate(token)
    assert key is not None and key.scopes == ("read", "write")
    listed = runner("keys", "list", "--json", "--index", index)
    assert json.loads(listed.stdout)[0]["name"] == "my app"
    assert token not in listed.stdout
    assert runner("keys", "revoke", key.id, "--index", index).exit_code == 0
    assert store.authenticate(token) is None
    unknown = runner("keys", "revoke", "nope", "--index", index)
    assert (unknown.exit_code, "no API key" in unknown.output) == (1, True)
    bad_scope = runner("keys", "create", "x", "--scope", "root", "--index", index)
    assert bad_scope.exit_code == 2


def test_update_goes_through_the_queue_and_applies_itself_when_no_writer_runs(
    runner, index, tmp_path
):
    source = jsonl(tmp_path / "new.jsonl", [Record(id="cli-1", title="From the command line")])
    result = runner("index", source, "--update", "--index", index)
    assert result.exit_code == 0, result.output
    assert "cli-1" in ids_in(index)
    tasks = TaskQueue(queue_path(index)).tasks()
    assert [(t.origin, t.status) for t in tasks] == [("cli", "succeeded")]


def test_update_waits_for_the_running_writer(runner, index, tmp_path):
    queue = TaskQueue(queue_path(index))
    with open_backend(index) as backend:
        thread, stop = TaskWriter(queue, backend).start_thread()
        try:
            source = jsonl(tmp_path / "new.jsonl", [Record(id="cli-2", title="Waited for")])
            result = runner("index", source, "--update", "--index", index)
        finally:
            stop.set()
            thread.join()
    assert result.exit_code == 0, result.output
    assert "cli-2" in ids_in(index)


def test_a_rebuild_from_files_keeps_records_written_through_the_api(runner, index, tmp_path):
    written = [Record(id="api-1", title="Written through the API"), FIXTURE_RECORDS[0]]
    replaced = Record(id=FIXTURE_RECORDS[0].id, title="The API's newer title")
    write_through_api(index, [written[0], replaced])
    source = jsonl(tmp_path / "files.jsonl", FIXTURE_RECORDS[:3])
    result = runner("index", source, "--index", index)
    assert result.exit_code == 0, result.output
    assert "and 2 written through the API" in result.stdout
    assert ids_in(index) == {"api-1", *(r.id for r in FIXTURE_RECORDS[:3])}
    with SearchService.open(index) as service:
        assert service.get(replaced.id).title == "The API's newer title"


def test_an_api_delete_is_not_brought_back_and_replace_drops_api_records(runner, index, tmp_path):
    queue = write_through_api(
        index, [Record(id="api-1", title="One"), Record(id="api-2", title="Two")]
    )
    write_through_api(index, [], deletes=["api-2"])
    assert queue.written_ids() == {"api-1"}
    source = jsonl(tmp_path / "files.jsonl", FIXTURE_RECORDS)
    assert runner("index", source, "--index", index).exit_code == 0
    assert ids_in(index) == {"api-1", *(r.id for r in FIXTURE_RECORDS)}
    assert runner("index", source, "--replace", "--index", index).exit_code == 0
    assert ids_in(index) == {r.id for r in FIXTURE_RECORDS}
    assert queue.written_ids() == set()
    misuse = runner("index", source, "--replace", "--update", "--index", index)
    assert misuse.exit_code == 2


def test_a_rebuild_while_writes_are_queued_loses_and_doubles_none(runner, index, tmp_path):
    queue = TaskQueue(queue_path(index))
    queue.enqueue_upserts([Record(id="queued-1", title="Queued before the rebuild")])
    queue.enqueue_deletes([FIXTURE_RECORDS[1].id])
    source = jsonl(tmp_path / "files.jsonl", FIXTURE_RECORDS)
    assert runner("index", source, "--index", index).exit_code == 0
    # The queued tasks were not applied by the rebuild; the writer applies them after it.
    assert queue.counts()["enqueued"] == 2
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    assert ids_in(index) == {
        "queued-1",
        *(r.id for r in FIXTURE_RECORDS[2:]),
        FIXTURE_RECORDS[0].id,
    }


@pytest.mark.slow
def test_the_writer_command_applies_tasks_until_sigterm(index):
    searchsvc = Path(sys.executable).with_name("searchsvc")
    process = subprocess.Popen(
        [str(searchsvc), "writer", "--index", index], stderr=subprocess.PIPE, text=True
    )
    try:
        queue = TaskQueue(queue_path(index))
        task = queue.enqueue_upserts([Record(id="by-writer", title="Applied by the writer")])
        assert queue.wait(task.id, 10).status == "succeeded"
        assert "by-writer" in ids_in(index)
    finally:
        time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=15)
    assert process.returncode == 0
    assert "applied 1 tasks: 1 added" in errors


def test_an_api_delete_of_a_source_record_stays_deleted_through_rebuilds(runner, index, tmp_path):
    # Issue 33: the record came from the files; the API deleted it; a rebuild from the same
    # files left it deleted only while its id is tombstoned (written again: back it comes).
    source = jsonl(tmp_path / "files.jsonl", FIXTURE_RECORDS)
    assert runner("index", source, "--index", index).exit_code == 0
    gone, kept = FIXTURE_RECORDS[0].id, FIXTURE_RECORDS[1].id
    queue = write_through_api(index, [], deletes=[gone])
    assert queue.deleted_ids() == {gone}
    rebuilt = runner("index", source, "--index", index)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "1 deleted through the API left out" in rebuilt.stdout
    assert ids_in(index) == {r.id for r in FIXTURE_RECORDS} - {gone}
    # Written again (through the API, or `index --update`): no longer tombstoned.
    update = jsonl(tmp_path / "update.jsonl", [FIXTURE_RECORDS[0]])
    assert runner("index", update, "--update", "--index", index).exit_code == 0
    assert queue.deleted_ids() == set()
    assert runner("index", source, "--index", index).exit_code == 0
    assert gone in ids_in(index) and kept in ids_in(index)
    # --replace rebuilds from the files alone: it forgets the API's deletes as its writes.
    write_through_api(index, [], deletes=[gone])
    assert runner("index", source, "--replace", "--index", index).exit_code == 0
    assert gone in ids_in(index)
    assert queue.deleted_ids() == set()
