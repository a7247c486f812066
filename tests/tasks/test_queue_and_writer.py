"""The task queue (a real SQLite file) and the writer (a real Whoosh index): order, batching,
outcomes, and no acknowledged write lost when a writer process is killed at any moment."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from searchsvc.backends import open_backend
from searchsvc.domain.errors import TaskNotFound, TaskQueueUnavailable
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, TaskWriter, queue_path
from searchsvc.tasks.writer import fold
from tests.support import FAST, build_index


def record(n: int, title: str | None = None) -> Record:
    return Record(id=f"rec-{n}", title=title or f"Record number {n} about glaciers", year=2024)


@pytest.fixture
def index(tmp_path) -> str:
    return build_index(tmp_path / "index")


@pytest.fixture
def queue(index) -> TaskQueue:
    return TaskQueue(queue_path(index))


def indexed(location: str) -> dict[str, Record]:
    with SearchService.open(location) as service:
        records = list(service.records())
    by_id = {r.id: r for r in records}
    assert len(by_id) == len(records), "an id is indexed twice"
    return by_id


def test_the_queue_lives_beside_the_whoosh_index_unless_configured(index, tmp_path):
    assert queue_path(index) == Path(index) / "searchsvc.sqlite3"
    assert queue_path(index, tmp_path / "q.db") == tmp_path / "q.db"


def test_an_enqueued_task_is_on_disk_and_reads_back_from_another_connection(queue):
    task = queue.enqueue_upserts([record(1), record(2)])
    assert (task.status, task.size, task.kind) == ("enqueued", 2, "upsert")
    other = TaskQueue(queue.path)
    assert other.get(task.id) == task
    assert other.counts()["enqueued"] == 1
    with pytest.raises(TaskNotFound):
        other.get(task.id + 1)


def test_the_writer_applies_tasks_in_order_and_records_their_outcome(index, queue):
    first = queue.enqueue_upserts([record(1, "First title"), record(2)])
    second = queue.enqueue_upserts([record(1, "Second title")])
    third = queue.enqueue_deletes(["rec-2", "not-there"])
    with open_backend(index) as backend:
        assert TaskWriter(queue, backend).run_pending() == 3
    tasks = [queue.get(t.id) for t in (first, second, third)]
    assert [t.status for t in tasks] == ["succeeded"] * 3
    # Batched: one engine commit for all three, reported on each.
    assert tasks[0].result == tasks[2].result
    assert tasks[0].result["batch"]["tasks"] == 3
    records = indexed(index)
    assert records["rec-1"].title == "Second title"
    assert "rec-2" not in records


def test_batches_are_bounded_by_records_and_stay_in_order(index, queue):
    for n in range(5):
        queue.enqueue_upserts([record(n * 10 + i) for i in range(4)])
    with open_backend(index) as backend:
        writer = TaskWriter(queue, backend, batch_records=8)
        assert writer.apply_next_batch() == 2
        assert [t.status for t in reversed(queue.tasks())] == ["succeeded"] * 2 + ["enqueued"] * 3
        assert writer.run_pending() == 3
    assert len(indexed(index)) == 5 + 20


def test_folding_keeps_the_last_write_of_each_id():
    from searchsvc.tasks.queue import ClaimedTask, Task

    def task(n: int) -> Task:
        return Task(n, "upsert", "processing", 1, "api", "")

    upserts, deletes = fold(
        [
            ClaimedTask(task(1), records=[record(1), record(2)]),
            ClaimedTask(task(2), ids=["rec-1", "rec-3"]),
            ClaimedTask(task(3), records=[record(3, "Back again")]),
        ]
    )
    assert [r.id for r in upserts] == ["rec-2", "rec-3"]
    assert upserts[1].title == "Back again"
    assert deletes == ["rec-1"]


def test_a_task_whose_payload_no_longer_converts_fails_with_per_record_errors(index, queue):
    good = queue.enqueue_upserts([record(1)])
    bad = queue.enqueue_upserts([record(2)])
    with queue.transaction() as connection:
        connection.execute(
            "UPDATE tasks SET payload = ? WHERE id = ?",
            (b'[{"id": "x", "title": "ok"}, {"id": "y", "title": ""}]', bad.id),
        )
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    assert queue.get(good.id).status == "succeeded"
    failed = queue.get(bad.id)
    assert failed.status == "failed"
    assert failed.error["details"]["errors"][0]["position"] == 1
    assert "rec-1" in indexed(index) and "x" not in indexed(index)


def test_tasks_stay_queued_while_a_rebuild_holds_the_index(index, queue):
    queue.enqueue_upserts([record(1)])
    with open_backend(index) as backend, backend.directory.lock():  # type: ignore[attr-defined]
        from searchsvc.domain.errors import BuildInProgress

        with pytest.raises(BuildInProgress):
            TaskWriter(queue, backend).apply_next_batch()
    assert queue.counts()["enqueued"] == 1
    with open_backend(index) as backend:
        TaskWriter(queue, backend).run_pending()
    assert "rec-1" in indexed(index)


def test_the_queue_refuses_clearly_when_its_file_cannot_be_made(tmp_path):
    (tmp_path / "not-a-directory").write_text("")
    with pytest.raises(TaskQueueUnavailable, match="task queue is unavailable"):
        TaskQueue(tmp_path / "not-a-directory" / "q.db").enqueue_upserts([record(1)])


def test_a_full_disk_refuses_the_task_and_keeps_those_acknowledged(queue):
    kept = queue.enqueue_upserts([record(1)])
    pages = queue.query("PRAGMA page_count")[0][0]
    # SQLite's own cap on the file's size answers as a full disk does (SQLITE_FULL).
    queue.query(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(TaskQueueUnavailable, match="disk is full"):
        queue.enqueue_upserts([record(n, "x" * 2000) for n in range(200)])
    assert [t.id for t in TaskQueue(queue.path).tasks()] == [kept.id]


def test_only_one_process_holds_the_writer_role(queue):
    with queue.writer_role() as first:
        script = (
            "import sys; from searchsvc.tasks import TaskQueue\n"
            f"with TaskQueue({str(queue.path)!r}).writer_role() as held: sys.exit(0 if held else 3)"
        )
        assert first
        assert subprocess.run([sys.executable, "-c", script]).returncode == 3
    assert subprocess.run([sys.executable, "-c", script]).returncode == 0


# -- fault injection: a writer process killed with SIGKILL --------------------------------------
WRITER_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    from searchsvc.backends import open_backend
    from searchsvc.tasks import TaskQueue, TaskWriter
    from searchsvc.tasks.queue import TaskQueue as Q

    index, queue_file, die_at = sys.argv[1], sys.argv[2], sys.argv[3]
    if die_at == "before-marking":
        # The engine committed the batch; the process dies before the tasks are marked done.
        Q.succeed = lambda self, claimed, batch: os.kill(os.getpid(), signal.SIGKILL)
    print("ready", flush=True)
    TaskWriter(TaskQueue(queue_file), open_backend(index), batch_records=200).serve(
        threading.Event()
    )
    """
)


def start_writer(index: str, queue: TaskQueue, die_at: str = "never") -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, index, str(queue.path), die_at],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def assert_every_acknowledged_write_applied(index: str, queue: TaskQueue, expected) -> None:
    """Restart a writer, let it finish every task, and compare the index with `expected`."""
    process = start_writer(index, queue)
    try:
        wait_for(lambda: queue.counts()["enqueued"] + queue.counts()["processing"] == 0, 120)
    finally:
        process.kill()
        process.wait()
    assert queue.counts()["failed"] == 0
    records = indexed(index)  # opens the index: not corrupt
    expected_ids = {r.id for r in expected.values() if r is not None}
    assert expected_ids <= set(records)
    for record_id, want in expected.items():
        if want is None:
            assert record_id not in records
        else:
            assert records[record_id].title == want.title


def test_a_writer_killed_between_commit_and_marking_loses_and_doubles_nothing(index, queue):
    expected = {}
    for n in range(3):
        queue.enqueue_upserts([record(n)])
        expected[f"rec-{n}"] = record(n)
    process = start_writer(index, queue, die_at="before-marking")
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert queue.counts()["processing"] == 3  # committed to the engine, not marked
    assert_every_acknowledged_write_applied(index, queue, expected)
    assert [t.status for t in queue.tasks()] == ["succeeded"] * 3


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3 if FAST else 8))
def test_a_writer_killed_at_a_random_moment_loses_no_acknowledged_write(index, queue, trial):
    rng = random.Random(trial)
    process = start_writer(index, queue)
    expected: dict[str, Record | None] = {}
    try:
        deadline = time.monotonic() + rng.uniform(0.2, 2.0)
        n = 0
        while time.monotonic() < deadline:
            if expected and rng.random() < 0.2:
                victim = rng.choice(sorted(expected))
                queue.enqueue_deletes([victim])
                expected[victim] = None
            else:
                batch = [record(n + i, f"Title {n + i} trial {trial}") for i in range(20)]
                queue.enqueue_upserts(batch)
                expected.update({r.id: r for r in batch})
                n += 20
            time.sleep(0.01)  # a steady stream, not a flood the writer needs minutes for
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert_every_acknowledged_write_applied(index, queue, expected)


def test_a_batch_that_could_not_be_put_back_is_applied_before_later_tasks(index, queue):
    # The engine fails (a full disk) and so does putting the batch back in the queue: the task
    # stays `processing`. A later delete of the same id must not be applied before it.
    upsert = queue.enqueue_upserts([record(1, "Must not come back")])
    with open_backend(index) as backend:
        writer = TaskWriter(queue, backend)

        def full_disk(*args, **kwargs):
            raise OSError(28, "No space left on device")

        def unwritable(claimed):
            raise TaskQueueUnavailable("the task queue is unavailable: disk full")

        backend.write = full_disk  # type: ignore[method-assign]
        queue.release = unwritable  # type: ignore[method-assign]
        with pytest.raises(OSError):
            writer.apply_next_batch()
        del backend.write, queue.release
        assert queue.get(upsert.id).status == "processing"
        later = queue.enqueue_deletes(["rec-1"])
        assert writer.run_pending() == 2
    assert "rec-1" not in indexed(index)
    assert [queue.get(t.id).status for t in (upsert, later)] == ["succeeded", "succeeded"]


def test_the_writer_thread_survives_an_unforeseen_failure(index, queue, monkeypatch):
    from searchsvc.tasks import writer as writer_module

    monkeypatch.setattr(writer_module, "UNEXPECTED_RETRY_SECONDS", 0.05)
    monkeypatch.setattr(writer_module, "ELECTION_SECONDS", 0.05)
    task = queue.enqueue_upserts([record(1)])
    with open_backend(index) as backend:
        failures = iter([RuntimeError("a bug in an engine")])
        write = backend.write

        def fails_once(*args, **kwargs):
            for failure in failures:
                raise failure
            return write(*args, **kwargs)

        backend.write = fails_once  # type: ignore[method-assign]
        thread, stop = TaskWriter(queue, backend).start_thread()
        try:
            assert queue.wait(task.id, 10).status == "succeeded"
        finally:
            stop.set()
            thread.join()
    assert "rec-1" in indexed(index)


def _enqueue_one(path: str, n: int) -> None:
    TaskQueue(path).enqueue_upserts([record(n)])


@pytest.mark.slow
def test_processes_opening_a_new_queue_at_once_all_get_their_task_in(tmp_path):
    # Workers starting together: the first to switch the new file to WAL made the others fail
    # with "database is locked" (SQLite does not wait for that switch).
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for trial in range(3 if FAST else 15):
        path = str(tmp_path / f"queue-{trial}.db")
        processes = [context.Process(target=_enqueue_one, args=(path, n)) for n in range(6)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        assert [p.exitcode for p in processes] == [0] * 6
        assert TaskQueue(path).counts()["enqueued"] == 6


def test_an_unusable_queue_names_its_file_on_the_command_line_only(tmp_path):
    # A 503 of the write API carries the message: no server path in it (issue 19).
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(TaskQueueUnavailable) as refused:
        TaskQueue(blocker / "queue.sqlite3").enqueue_upserts([])
    assert str(tmp_path) not in refused.value.message
    assert refused.value.message.startswith("the task queue is unavailable: ")
    assert str(blocker) in refused.value.local_message
