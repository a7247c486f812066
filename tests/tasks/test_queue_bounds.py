"""The queue's bounds (issue 33): a failed task stays failed, a task the engine keeps failing is
dead-lettered, batches are bounded by bytes and parsed outside the write transaction, the
backlog is bounded in total and per key, writes stop above a free-disk floor, the write rate
is counted in the queue's file, finished tasks are pruned, and a queue file of the previous
version keeps working. A real SQLite queue and a real Whoosh index in tmp dirs."""

from __future__ import annotations

import shutil
import sqlite3
import time
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from searchsvc.backends import open_backend
from searchsvc.domain.errors import (
    InsufficientStorage,
    KeyQueueFull,
    QueueFull,
    WriteRateExceeded,
)
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, TaskWriter, WriteLimits, queue_path
from searchsvc.tasks import queue as queue_module
from searchsvc.tasks import writer as writer_module
from tests.support import build_index


def record(n: int, title: str | None = None, abstract: str | None = None) -> Record:
    return Record(
        id=f"rec-{n}", title=title or f"Record number {n} about glaciers", abstract=abstract
    )


@pytest.fixture
def index(tmp_path) -> str:
    return build_index(tmp_path / "index")


@pytest.fixture
def queue(index) -> TaskQueue:
    return TaskQueue(queue_path(index))


def indexed_ids(location: str) -> set[str]:
    with SearchService.open(location) as service:
        return {r.id for r in service.records()}


def corrupt(queue: TaskQueue, task_id: int) -> None:
    """Give a task a payload that no longer makes a Record (the writer fails it)."""
    with queue.transaction() as connection:
        connection.execute(
            "UPDATE tasks SET payload = ? WHERE id = ?", (b'[{"id": "y", "title": ""}]', task_id)
        )


# -- 6: a failed task stays failed ----------------------------------------------------------------
def test_a_failed_task_stays_failed_when_its_batch_is_put_back(index, queue):
    bad = queue.enqueue_upserts([record(1)])
    good = queue.enqueue_upserts([record(2)])
    corrupt(queue, bad.id)
    with open_backend(index) as backend:
        writer = TaskWriter(queue, backend)
        write = backend.write

        def full_disk(*args, **kwargs):
            raise OSError(28, "No space left on device")

        # The bad task is failed first, then the engine cannot take the good one now.
        backend.write = full_disk  # type: ignore[method-assign]
        with pytest.raises(OSError):
            writer.apply_next_batch()
        backend.write = write  # type: ignore[method-assign]
        assert queue.get(bad.id).status == "failed"
        assert queue.get(good.id).status == "enqueued"
        writer.run_pending()
    failed = queue.get(bad.id)
    assert (failed.status, failed.result) == ("failed", None)
    assert failed.error["details"]["errors"][0]["position"] == 0
    assert queue.get(good.id).status == "succeeded"
    assert "rec-2" in indexed_ids(index)


# -- 7: dead-lettering ----------------------------------------------------------------------------
def poisoned(backend, poison: str):
    """The engine fails, as no one foresaw, on any write carrying the record `poison`."""
    write = backend.write

    def write_unless_poisoned(*args, upserts=(), **kwargs):
        if any(r.id == poison for r in upserts):
            raise RuntimeError(f"engine bug on {poison}")
        return write(*args, upserts=upserts, **kwargs)

    backend.write = write_unless_poisoned


def test_a_task_that_keeps_failing_is_dead_lettered_after_three_attempts(index, queue):
    before = queue.enqueue_upserts([record(1)])
    bad = queue.enqueue_upserts([record(2), record(3)])
    after = queue.enqueue_upserts([record(4)])
    with open_backend(index) as backend:
        poisoned(backend, "rec-3")
        writer = TaskWriter(queue, backend)
        for attempt in range(1, writer_module.MAX_ATTEMPTS):
            with pytest.raises(RuntimeError):
                writer.apply_next_batch()
            assert queue.get(bad.id).status == "enqueued", attempt
        # The last attempt dead-letters it, and the queue moves on behind it.
        writer.run_pending()
    dead = queue.get(bad.id)
    assert dead.status == "failed"
    assert dead.error["code"] == "dead_letter"
    assert dead.error["details"]["attempts"] == writer_module.MAX_ATTEMPTS
    assert "engine bug on rec-3" in dead.error["message"]
    assert [queue.get(t.id).status for t in (before, after)] == ["succeeded"] * 2
    assert {"rec-1", "rec-4"} <= indexed_ids(index)
    assert not {"rec-2", "rec-3"} & indexed_ids(index)
    assert queue.counts()["failed"] == 1


@pytest.mark.parametrize("damage", [b"{not json", b'{"an": "object"}', b"[1, 2]"])
def test_a_task_whose_stored_payload_is_damaged_fails_and_the_queue_moves_on(index, queue, damage):
    # Only a damaged file can hold such a payload; claim() must not raise on it for ever.
    before = queue.enqueue_upserts([record(1)])
    damaged = queue.enqueue_upserts([record(2)])
    after = queue.enqueue_upserts([record(3)])
    with queue.transaction() as connection:
        connection.execute("UPDATE tasks SET payload = ? WHERE id = ?", (damage, damaged.id))
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    failed = queue.get(damaged.id)
    assert failed.status == "failed"
    assert failed.error["code"] == "invalid_parameter"
    assert "payload is unreadable" in str(failed.error) or damage == b"[1, 2]"
    assert [queue.get(t.id).status for t in (before, after)] == ["succeeded"] * 2
    assert {"rec-1", "rec-3"} <= indexed_ids(index)
    assert "rec-2" not in indexed_ids(index)


def test_the_writer_thread_dead_letters_a_poisoned_task_and_applies_later_writes(
    index, queue, monkeypatch
):
    monkeypatch.setattr(writer_module, "UNEXPECTED_RETRY_SECONDS", 0.05)
    monkeypatch.setattr(writer_module, "ELECTION_SECONDS", 0.05)
    bad = queue.enqueue_upserts([record(1)])
    later = queue.enqueue_upserts([record(2)])
    with open_backend(index) as backend:
        poisoned(backend, "rec-1")
        thread, stop = TaskWriter(queue, backend).start_thread()
        try:
            assert queue.wait(later.id, 10).status == "succeeded"
        finally:
            stop.set()
            thread.join()
    assert queue.get(bad.id).status == "failed"


def test_transient_failures_never_dead_letter_a_task(index, queue):
    task = queue.enqueue_upserts([record(1)])
    with open_backend(index) as backend:
        writer = TaskWriter(queue, backend)
        write = backend.write

        def down(*args, **kwargs):
            raise OSError(5, "Input/output error")

        backend.write = down  # type: ignore[method-assign]
        for _ in range(writer_module.MAX_ATTEMPTS * 2):
            with pytest.raises(OSError):
                writer.apply_next_batch()
        backend.write = write  # type: ignore[method-assign]
        writer.run_pending()
    assert queue.get(task.id).status == "succeeded"


# -- 8: batches bounded by bytes, parsed outside the write transaction ----------------------------
def test_batches_are_bounded_by_bytes_and_a_larger_task_goes_alone(index, queue):
    tasks = [queue.enqueue_upserts([record(n, abstract="x" * 10_000)]) for n in range(5)]
    huge = queue.enqueue_upserts([record(9, abstract="y" * 60_000)])
    sizes = dict(queue.query("SELECT id, bytes FROM tasks"))
    assert all(10_000 < sizes[t.id] < 11_000 for t in tasks)
    with open_backend(index) as backend:
        writer = TaskWriter(queue, backend, batch_bytes=25_000)
        assert writer.apply_next_batch() == 2
        assert writer.apply_next_batch() == 2
        assert writer.apply_next_batch() == 1
        assert writer.apply_next_batch() == 1  # over the bound on its own: still applied
        assert queue.get(huge.id).status == "succeeded"
        assert writer.apply_next_batch() == 0


def test_payloads_are_parsed_outside_the_queue_write_transaction(index, queue, monkeypatch):
    for n in range(3):
        queue.enqueue_upserts([record(n)])
    parsed = []
    with_payload = queue_module._with_payload

    def parse_while_another_worker_enqueues(task, payload):
        # Another worker's connection takes the write lock at once (no busy wait allowed).
        other = sqlite3.connect(queue.path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        finally:
            other.close()
        parsed.append(task.id)
        return with_payload(task, payload)

    monkeypatch.setattr(queue_module, "_with_payload", parse_while_another_worker_enqueues)
    with open_backend(index) as backend:
        assert TaskWriter(queue, backend).run_pending() == 3
    assert len(parsed) == 3


# -- 9: bounds ------------------------------------------------------------------------------------
def test_the_backlog_is_bounded_per_key_and_in_total_by_bytes(index, queue):
    one = record(1, abstract="z" * 1000)
    size = len(orjson.dumps([one.to_dict()]))
    limits = WriteLimits(max_bytes=size * 5, max_bytes_per_key=size * 3)
    for _ in range(3):
        queue.enqueue_upserts([one], owner="key-a", limits=limits)
    with pytest.raises(KeyQueueFull) as per_key:
        queue.enqueue_upserts([one], owner="key-a", limits=limits)
    assert per_key.value.retry_after > 0
    queue.enqueue_upserts([one], owner="key-b", limits=limits)
    queue.enqueue_upserts([one], owner="key-b", limits=limits)
    with pytest.raises(QueueFull) as total:
        queue.enqueue_upserts([one], owner="key-c", limits=limits)
    assert total.value.retry_after > 0
    assert queue.counts()["enqueued"] == 5
    assert queue.backlog() == {"tasks": 5, "bytes": size * 5}
    # The command line's own updates are not refused (an operator's write), but count.
    queue.enqueue_upserts([one], origin="cli")
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    assert queue.backlog() == {"tasks": 0, "bytes": 0}
    queue.enqueue_upserts([one], owner="key-a", limits=limits)


def test_writes_are_refused_below_the_free_disk_floor_before_they_are_acknowledged(queue):
    free = shutil.disk_usage(queue.path.parent).free
    limits = WriteLimits(min_free_disk_bytes=free + 10 * 1024**3)
    with pytest.raises(InsufficientStorage) as refused:
        queue.enqueue_deletes(["x"], owner="key-a", limits=limits)
    assert refused.value.retry_after > 0
    assert "free" in refused.value.message
    assert queue.counts()["enqueued"] == 0
    queue.enqueue_deletes(["x"], owner="key-a", limits=WriteLimits(min_free_disk_bytes=1024))


def test_the_write_rate_is_counted_in_the_queue_file_for_every_worker(queue):
    # Two connections to the file, as two gunicorn workers have: one budget per key.
    # A window of 360 days: the windows are fixed, and one ending mid-test would start afresh.
    limits = WriteLimits(rates=((3, 360 * 86400),))
    workers = [TaskQueue(queue.path), TaskQueue(queue.path)]
    for n in range(3):
        workers[n % 2].enqueue_deletes([f"x{n}"], owner="key-a", limits=limits)
    for worker in workers:
        with pytest.raises(WriteRateExceeded) as limited:
            worker.enqueue_deletes(["y"], owner="key-a", limits=limits)
        assert 0 < limited.value.retry_after <= 360 * 86400
        with pytest.raises(WriteRateExceeded):
            worker.admit("key-a", limits)
    workers[0].enqueue_deletes(["z"], owner="key-b", limits=limits)
    assert queue.counts()["enqueued"] == 4


def test_finished_tasks_are_pruned_after_the_retention_and_their_payloads_dropped_at_once(
    index, queue
):
    old, recent = queue.enqueue_upserts([record(1)]), queue.enqueue_deletes(["rec-1"])
    failing = queue.enqueue_upserts([record(2)])
    corrupt(queue, failing.id)
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    payloads = queue.query("SELECT payload FROM tasks")
    assert [row["payload"] for row in payloads] == [None, None, None]
    waiting = queue.enqueue_upserts([record(3)])
    eight_days_ago = (datetime.now(UTC) - timedelta(days=8)).isoformat(timespec="milliseconds")
    with queue.transaction() as connection:
        connection.execute(
            "UPDATE tasks SET finished_at = ? WHERE id IN (?, ?)",
            (eight_days_ago, old.id, failing.id),
        )
        connection.execute(
            "UPDATE tasks SET enqueued_at = ? WHERE id = ?", (eight_days_ago, waiting.id)
        )
    assert queue.prune(retention_days=0) == 0  # 0: kept for ever
    assert queue.prune(retention_days=7) == 2
    assert sorted(t.id for t in queue.tasks()) == [recent.id, waiting.id]


def test_the_writer_prunes_as_it_serves(index, queue, monkeypatch):
    monkeypatch.setattr(writer_module, "ELECTION_SECONDS", 0.05)
    done = queue.enqueue_upserts([record(1)])
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    long_ago = (datetime.now(UTC) - timedelta(days=30)).isoformat(timespec="milliseconds")
    with queue.transaction() as connection:
        connection.execute("UPDATE tasks SET finished_at = ? WHERE id = ?", (long_ago, done.id))
    with open_backend(index) as backend:
        thread, stop = TaskWriter(queue, backend, retention_days=7).start_thread()
        try:
            deadline = time.monotonic() + 10
            while queue.tasks() and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join()
    assert queue.tasks() == []


# -- migration ------------------------------------------------------------------------------------
PREVIOUS_SCHEMA = """
CREATE TABLE tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    size INTEGER NOT NULL,
    payload BLOB,
    origin TEXT NOT NULL,
    enqueued_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    result TEXT,
    error TEXT
);
CREATE INDEX tasks_by_status ON tasks (status, id);
CREATE TABLE written_records (id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    digest BLOB NOT NULL,
    scopes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
"""


def test_a_queue_file_of_the_previous_version_keeps_working(index):
    path = queue_path(index)
    payload = orjson.dumps([record(1, "Queued before the upgrade").to_dict()])
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(PREVIOUS_SCHEMA)
    connection.execute(
        "INSERT INTO tasks (kind, status, size, payload, origin, enqueued_at) "
        "VALUES ('upsert', 'enqueued', 1, ?, 'api', '2025-01-01T00:00:00.000+00:00')",
        (payload,),
    )
    connection.close()
    queue = TaskQueue(path)
    [old] = queue.tasks()
    assert (old.status, old.key_id) == ("enqueued", None)
    assert queue.backlog() == {"tasks": 1, "bytes": len(payload)}
    assert [t.id for t in queue.tasks(key_id="someone")] == []
    with open_backend(index) as backend:
        assert TaskWriter(queue, backend).run_pending() == 1
    assert queue.get(old.id).status == "succeeded"
    assert "rec-1" in indexed_ids(index)
    queue.enqueue_deletes(["rec-1"], owner="key-a", limits=WriteLimits(rates=((5, 1),)))
    assert TaskQueue(path).backlog() == {"tasks": 1, "bytes": len(b'["rec-1"]')}
