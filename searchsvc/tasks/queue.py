"""The durable task queue: write requests kept in SQLite (WAL) until the writer applies them.

A task is acknowledged only once its row is committed to the database file (journal in WAL
mode, `synchronous=FULL`: the commit is on disk before `enqueue` returns), so a `kill -9` of
any process, or a restart, never loses it. Any number of processes enqueue; one writer
(writer.py) claims consecutive tasks in id order, applies them to the engine in one commit and
records each task's outcome. A task claimed by a writer that died is claimed again by the next
one: applying a task twice leaves the index as applying it once (upserts and deletes by id).

The same file (database.py) keeps the ids of the records written through the API (written.py: a
rebuild from files keeps them) and the API keys (keys.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from searchsvc.domain.errors import SearchsvcError, TaskNotFound
from searchsvc.domain.records import Record
from searchsvc.domain.tasks import KINDS, MAX_TASK_ID, MAX_WAIT_SECONDS, STATUSES, Task
from searchsvc.tasks.database import QueueDatabase
from searchsvc.tasks.written import forget_written, remember_written, written_ids

__all__ = [
    "KINDS",
    "MAX_TASK_ID",
    "MAX_WAIT_SECONDS",
    "STATUSES",
    "ClaimedTask",
    "Task",
    "TaskQueue",
]

_WAIT_POLL_SECONDS = 0.05


@dataclass(slots=True)
class ClaimedTask:
    """A task the writer took, with its payload."""

    task: Task
    records: list[Record] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    # Records of the payload that no longer make a Record: (position, reason).
    problems: list[dict[str, Any]] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class TaskQueue(QueueDatabase):
    """The queue: tasks enqueued by any process, claimed in order by the one writer."""

    # -- enqueueing --------------------------------------------------------------------------
    def enqueue_upserts(self, records: Sequence[Record], origin: str = "api") -> Task:
        """Queue records to add or replace by id; returns once the task is on disk."""
        payload = orjson.dumps([record.to_dict() for record in records])
        return self._enqueue("upsert", len(records), payload, origin)

    def enqueue_deletes(self, ids: Sequence[str], origin: str = "api") -> Task:
        """Queue ids to delete; returns once the task is on disk."""
        return self._enqueue("delete", len(ids), orjson.dumps(list(ids)), origin)

    def _enqueue(self, kind: str, size: int, payload: bytes, origin: str) -> Task:
        enqueued_at = _now()
        with self.transaction() as connection:
            cursor = connection.execute(
                "INSERT INTO tasks (kind, status, size, payload, origin, enqueued_at) "
                "VALUES (?, 'enqueued', ?, ?, ?, ?)",
                (kind, size, payload, origin, enqueued_at),
            )
        task_id = cursor.lastrowid
        assert task_id is not None
        return Task(task_id, kind, "enqueued", size, origin, enqueued_at)

    # -- reading -----------------------------------------------------------------------------
    def get(self, task_id: int) -> Task:
        rows = []
        if 0 < task_id <= MAX_TASK_ID:
            rows = self.query(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,))
        if not rows:
            raise TaskNotFound(f"no task with id {task_id}", id=task_id)
        return _task_of(rows[0])

    def tasks(
        self, status: str | None = None, limit: int = 20, before: int | None = None
    ) -> list[Task]:
        """Tasks newest first, of one status or all; `before` pages on (ids below it)."""
        conditions: list[str] = []
        parameters: list[Any] = []
        if status is not None:
            conditions.append("status = ?")
            parameters.append(status)
        if before is not None:
            conditions.append("id < ?")
            parameters.append(before)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self.query(
            f"SELECT {_TASK_COLUMNS} FROM tasks {where} ORDER BY id DESC LIMIT ?",
            (*parameters, limit),
        )
        return [_task_of(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """How many tasks are in each status."""
        rows = self.query("SELECT status, COUNT(*) AS n FROM tasks GROUP BY status")
        found = {row["status"]: row["n"] for row in rows}
        return {status: found.get(status, 0) for status in STATUSES}

    def wait(self, task_id: int, timeout: float) -> Task:
        """The task once it is done, or as it is after `timeout` seconds."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            task = self.get(task_id)
            if task.done or time.monotonic() >= deadline:
                return task
            time.sleep(_WAIT_POLL_SECONDS)

    # -- the writer's side -------------------------------------------------------------------
    def claim(self, max_records: int) -> list[ClaimedTask]:
        """Mark the oldest unfinished tasks processing, up to `max_records` records and ids in
        all (at least one task), and return them with their payloads.

        Tasks already `processing` are claimed again first: only the one writer claims, so they
        are its own from a batch that failed and could not be put back (the queue's file was
        not writable then), and applying a later task before them would reorder writes.
        """
        claimed: list[ClaimedTask] = []
        with self.transaction() as connection:
            cursor = connection.execute(
                "SELECT id, kind, size, payload, origin, enqueued_at FROM tasks "
                "WHERE status IN ('enqueued', 'processing') ORDER BY id"
            )
            total = 0
            started_at = _now()
            for task_id, kind, size, payload, origin, enqueued_at in cursor:
                if claimed and total + size > max_records:
                    break
                total += size
                task = Task(task_id, kind, "processing", size, origin, enqueued_at, started_at)
                claimed.append(_with_payload(task, payload))
            cursor.close()
            connection.executemany(
                "UPDATE tasks SET status = 'processing', started_at = ? WHERE id = ?",
                [(started_at, item.task.id) for item in claimed],
            )
        return claimed

    def release(self, claimed: Sequence[ClaimedTask]) -> None:
        """Put claimed tasks back in the queue (the engine could not take them now)."""
        with self.transaction() as connection:
            connection.executemany(
                "UPDATE tasks SET status = 'enqueued', started_at = NULL WHERE id = ?",
                [(item.task.id,) for item in claimed],
            )

    def succeed(self, claimed: Sequence[ClaimedTask], batch: dict[str, Any]) -> None:
        """Record that the engine committed these tasks; their payloads are no longer kept."""
        finished_at = _now()
        with self.transaction() as connection:
            for item in claimed:
                result = {"batch": batch}
                if item.task.origin == "api":
                    remember_written(connection, item.task.kind, item.records, item.ids)
                connection.execute(
                    "UPDATE tasks SET status = 'succeeded', finished_at = ?, result = ?, "
                    "payload = NULL WHERE id = ?",
                    (finished_at, orjson.dumps(result).decode(), item.task.id),
                )

    def fail(self, item: ClaimedTask, error: SearchsvcError | str) -> None:
        """Record that a task cannot be applied, and why."""
        if isinstance(error, SearchsvcError):
            shape = {"code": error.code, "message": error.message, "details": error.details}
        else:
            shape = {"code": "task_failed", "message": error, "details": {}}
        with self.transaction() as connection:
            connection.execute(
                "UPDATE tasks SET status = 'failed', finished_at = ?, error = ?, payload = NULL "
                "WHERE id = ?",
                (_now(), orjson.dumps(shape, default=str).decode(), item.task.id),
            )

    # -- records written through the API (written.py) -------------------------------------------
    def written_ids(self) -> set[str]:
        """Ids of the records that API writes put in the index (and no API delete removed)."""
        return written_ids(self)

    def forget_written(self) -> None:
        """Forget them (a rebuild that replaced the index without them)."""
        forget_written(self)


_TASK_COLUMNS = (
    "id, kind, status, size, origin, enqueued_at, started_at, finished_at, result, error"
)


def _task_of(row: sqlite3.Row) -> Task:
    return Task(
        id=row["id"],
        kind=row["kind"],
        status=row["status"],
        size=row["size"],
        origin=row["origin"],
        enqueued_at=row["enqueued_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        result=orjson.loads(row["result"]) if row["result"] else None,
        error=orjson.loads(row["error"]) if row["error"] else None,
    )


def _with_payload(task: Task, payload: bytes | None) -> ClaimedTask:
    values = orjson.loads(payload) if payload else []
    if task.kind == "delete":
        return ClaimedTask(task, ids=[str(value) for value in values])
    # Validated before it was queued; a record that no longer converts fails the task (writer).
    claimed = ClaimedTask(task)
    for position, value in enumerate(values):
        try:
            claimed.records.append(Record.from_dict(value))
        except ValueError as exc:
            claimed.problems.append({"position": position, "reason": str(exc)})
    return claimed
