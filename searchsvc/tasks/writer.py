"""The one writer: applies queued tasks to the engine in order, many tasks per engine commit.

Whoosh lets one process write at a time, so requests never write: they enqueue (queue.py), and
a single writer applies the tasks. Any number of processes may run `TaskWriter.serve`; a file
lock elects one of them (writer_role), and when it dies (even by SIGKILL) the kernel drops its
lock and another takes over within a poll. The gunicorn workers each run a candidate thread, so
the writer starts and restarts with the service; `searchsvc writer` runs one on its own.

A batch is the oldest enqueued tasks, up to `batch_records` records and ids and `batch_bytes`
bytes of payloads: their operations folded in task order (a later upsert or delete of an id
wins), written in one atomic engine commit, then marked succeeded together. A crash between the
commit and the marking leaves the tasks `processing`; the next claim takes them again first and
applies them again, which changes nothing (upserts and deletes by id are idempotent), so no
acknowledged write is lost.

A task the engine refuses fails with the engine's reason. A failure of the surroundings
(TRANSIENT_ERRORS) keeps the tasks queued for as long as it lasts. Any other failure is retried
too, but it may be the task's own (a record that trips an engine bug): after MAX_ATTEMPTS of
them the task is dead-lettered (failed, its error kept), so that one task does not hold up
every write behind it. The writer also deletes finished tasks after `retention_days`.
"""

from __future__ import annotations

import gc
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from searchsvc.backends import SearchBackend
from searchsvc.domain.errors import (
    BuildInProgress,
    IndexUnavailable,
    InvalidRequest,
    ModelUnavailable,
    SearchsvcError,
    TaskQueueUnavailable,
)
from searchsvc.domain.records import Record
from searchsvc.domain.tasks import MAX_WAIT_SECONDS, Task
from searchsvc.tasks.queue import ClaimedTask, TaskQueue

log = logging.getLogger(__name__)

# Records and ids applied in one engine commit at most: bounds the writer's memory and the time
# a batch takes, while bulk loads still pay the commit's fixed cost once per thousands.
BATCH_RECORDS = 10_000
# Bytes of payloads in one batch at most (a task larger than that goes alone): 10,000 records
# of a few megabytes each made a batch of gigabytes, whose writer was killed, and the batch
# claimed again by the next: a crash loop. Records take a few times their JSON in memory.
BATCH_BYTES = 64 * 1024 * 1024
# Unforeseen failures of a task (not TRANSIENT_ERRORS, not a refusal) before it is failed.
MAX_ATTEMPTS = 3
# Finished tasks are deleted this many days after they finished (0: never).
RETENTION_DAYS = 7
# How often the writer deletes the finished tasks past their retention.
PRUNE_SECONDS = 600.0
# How often an idle writer looks for new tasks, and a candidate for a vacant writer role.
POLL_SECONDS = 0.05
ELECTION_SECONDS = 1.0
# Waits after a failure of the engine or the disk, doubling up to the last.
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)
# The wait after a failure nobody foresaw (logged with its traceback).
UNEXPECTED_RETRY_SECONDS = 10.0

# Failures of the surroundings (disk full, read-only index, a rebuild holding the index, the
# engine down, the embedding model of an index with vectors missing or changed): the tasks stay
# queued and are tried again later.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    sqlite3.Error,
    IndexUnavailable,
    BuildInProgress,
    TaskQueueUnavailable,
    ModelUnavailable,
)


class TaskWriter:
    """Applies the tasks of `queue` to `backend`."""

    def __init__(
        self,
        queue: TaskQueue,
        backend: SearchBackend,
        batch_records: int = BATCH_RECORDS,
        on_batch: Callable[[dict[str, Any]], None] | None = None,
        batch_bytes: int = BATCH_BYTES,
        retention_days: int = RETENTION_DAYS,
    ) -> None:
        self.queue = queue
        self.backend = backend
        self.batch_records = batch_records
        self.batch_bytes = batch_bytes
        self.retention_days = retention_days
        self.on_batch = on_batch

    def apply_next_batch(self) -> int:
        """Apply the next batch of tasks; the number of tasks it finished (0: queue empty).

        Raises one of TRANSIENT_ERRORS, with the tasks put back, when the engine or the disk
        cannot take them now. The caller must hold the writer role.
        """
        with self.queue.apply_lock():
            claimed = self.queue.claim(self.batch_records, self.batch_bytes)
            if not claimed:
                return 0
            try:
                self._apply(claimed)
            except BaseException:
                self._put_back(claimed)
                raise
        return len(claimed)

    def run_pending(self) -> int:
        """Apply every task enqueued so far (tests, the CLI); the number of tasks finished."""
        done = 0
        while finished := self.apply_next_batch():
            done += finished
        return done

    def _put_back(self, claimed: Sequence[ClaimedTask]) -> None:
        try:
            self.queue.release(claimed)
        except TaskQueueUnavailable:
            # Left `processing`: the writer's next claim takes them first all the same.
            log.warning("could not put %d tasks back in the queue", len(claimed))

    def _apply(self, claimed: list[ClaimedTask]) -> None:
        applicable = []
        for item in claimed:
            if item.problems:
                self.queue.fail(item, _invalid_records(item))
            else:
                applicable.append(item)
        if not applicable:
            return
        try:
            batch = self._write(applicable)
        except TRANSIENT_ERRORS:
            raise
        except (SearchsvcError, ValueError) as exc:
            if len(applicable) == 1:
                self.queue.fail(applicable[0], _engine_refusal(exc))
                return
            # One task's records were refused: apply them one by one to find it.
            for item in applicable:
                self._apply([item])
            return
        except Exception as exc:
            if len(applicable) > 1:
                # Perhaps one task's doing: one by one, those before it are applied, and the
                # failure is counted against it alone.
                for item in applicable:
                    self._apply([item])
                return
            attempts = self.queue.count_attempt(applicable[0])
            if attempts < MAX_ATTEMPTS:
                raise
            log.error(
                "writer: task %d failed %d times, given up: %s",
                applicable[0].task.id,
                attempts,
                exc,
                exc_info=exc,
            )
            self.queue.fail(applicable[0], _gave_up(exc, attempts))
            return
        self.queue.succeed(applicable, batch)
        if self.on_batch:
            self.on_batch(batch)

    def _write(self, tasks: Sequence[ClaimedTask]) -> dict[str, Any]:
        upserts, deletes = fold(tasks)
        started = time.perf_counter()
        result = self.backend.write(
            upserts=upserts, deletes=deletes, metadata={"tasks": [t.task.id for t in tasks]}
        )
        return {
            "tasks": len(tasks),
            "added": result.added,
            "replaced": result.replaced,
            "deleted": result.deleted,
            "seconds": round(time.perf_counter() - started, 3),
        }

    # -- serving -----------------------------------------------------------------------------
    def serve(self, stop: threading.Event) -> None:
        """Be a candidate for the writer role until `stop` is set; apply tasks while holding it.

        Nothing ends this loop but `stop`: a writer thread that died on an unforeseen error
        would leave the service acknowledging writes that nobody applies.
        """
        while not stop.is_set():
            try:
                with self.queue.writer_role() as elected:
                    if elected:
                        self._serve_as_writer(stop)
            except TaskQueueUnavailable as exc:
                log.warning("writer: %s", exc.message)
            except Exception:
                log.exception("writer: unexpected failure; the tasks stay queued")
                stop.wait(UNEXPECTED_RETRY_SECONDS)
            stop.wait(ELECTION_SECONDS)

    def _serve_as_writer(self, stop: threading.Event) -> None:
        failures = 0
        next_prune = time.monotonic()
        while not stop.is_set():
            if time.monotonic() >= next_prune:
                self._prune()
                next_prune = time.monotonic() + PRUNE_SECONDS
            try:
                finished = self.apply_next_batch()
                failures = 0
            except TRANSIENT_ERRORS as exc:
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                log.warning("writer: tasks kept in the queue, retrying in %s s: %s", delay, exc)
                del exc
                # What the failed attempt still holds in reference cycles (an engine writer
                # half made, with its lock) is released before the next attempt.
                gc.collect()
                stop.wait(delay)
                continue
            if not finished:
                stop.wait(POLL_SECONDS)

    def _prune(self) -> None:
        try:
            pruned = self.queue.prune(self.retention_days)
        except TaskQueueUnavailable as exc:
            # Tried again at the next prune; writes go on meanwhile.
            log.warning("writer: finished tasks not pruned: %s", exc.message)
            return
        if pruned:
            log.info(
                "writer: pruned %d tasks finished over %d days ago", pruned, self.retention_days
            )

    def apply_until_done(self, task_id: int) -> Task:
        """The task `task_id` once it is done: applied by this writer while no other process
        holds the writer role (a `searchsvc index --update` without a running service),
        waited for while one does. Engine errors propagate, the task staying queued."""
        task = self.queue.get(task_id)
        while not task.done:
            with self.queue.writer_role() as elected:
                if elected:
                    while not self.queue.get(task_id).done and self.apply_next_batch():
                        pass
            task = self.queue.wait(task_id, MAX_WAIT_SECONDS)
        return task

    def start_thread(self) -> tuple[threading.Thread, threading.Event]:
        """Serve in a daemon thread; set the returned event to stop it."""
        stop = threading.Event()
        thread = threading.Thread(target=self.serve, args=(stop,), name="searchsvc-writer")
        thread.daemon = True
        thread.start()
        return thread, stop


def fold(tasks: Sequence[ClaimedTask]) -> tuple[list[Record], list[str]]:
    """The upserts and deletes that applying `tasks` in order amounts to."""
    final: dict[str, Record | None] = {}
    for item in tasks:
        for record in item.records:
            final.pop(record.id, None)  # re-inserted: order follows the latest write
            final[record.id] = record
        for record_id in item.ids:
            final.pop(record_id, None)
            final[record_id] = None
    upserts = [record for record in final.values() if record is not None]
    deletes = [record_id for record_id, record in final.items() if record is None]
    return upserts, deletes


def _invalid_records(item: ClaimedTask) -> SearchsvcError:
    return InvalidRequest(
        f"{len(item.problems)} records of task {item.task.id} are invalid",
        errors=item.problems,
    )


class DeadLetter(SearchsvcError):
    """The error of a task the writer gave up on after MAX_ATTEMPTS unforeseen failures."""

    code = "dead_letter"


def _gave_up(exc: BaseException, attempts: int) -> SearchsvcError:
    return DeadLetter(
        f"the writer gave up on this task after {attempts} failed attempts: "
        f"{type(exc).__name__}: {exc}",
        attempts=attempts,
    )


def _engine_refusal(exc: BaseException) -> SearchsvcError:
    if isinstance(exc, SearchsvcError):
        return exc
    return SearchsvcError(f"the engine refused the task: {exc}")
