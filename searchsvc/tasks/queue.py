"""The durable task queue: write requests kept in SQLite (WAL) until the writer applies them.

A task is acknowledged only once its row is committed to the database file (journal in WAL
mode, `synchronous=FULL`: the commit is on disk before `enqueue` returns), so a `kill -9` of
any process, or a restart, never loses it. Any number of processes enqueue; one writer
(writer.py) claims consecutive tasks in id order, applies them to the engine in one commit and
records each task's outcome. A task claimed by a writer that died is claimed again by the next
one: applying a task twice leaves the index as applying it once (upserts and deletes by id).

A task belongs to the API key that made it (`key_id`): reads of tasks name the key whose tasks
they may see (None: all, for admin keys and the command line).

The queue is bounded (WriteLimits, given by the API; the command line's tasks are not refused):
bytes of payloads waiting, in all and per key; a free-disk floor; writes per key and window,
counted in the file, so that every worker process shares one budget. A batch is bounded by
records and by bytes, and its payloads are parsed after the claim's transaction, not while
holding the file's write lock. Payloads are dropped once their task is done; finished tasks are
deleted after the retention (`prune`).

The same file (database.py) keeps the ids of the records written and deleted through the API
(written.py: a rebuild from files keeps the first and leaves out the second) and the API keys
(keys.py).
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from searchsvc.domain.errors import (
    InsufficientStorage,
    KeyQueueFull,
    QueueFull,
    SearchsvcError,
    TaskNotFound,
    WriteRateExceeded,
)
from searchsvc.domain.records import Record
from searchsvc.domain.tasks import KINDS, MAX_TASK_ID, MAX_WAIT_SECONDS, STATUSES, Task
from searchsvc.tasks.database import QueueDatabase
from searchsvc.tasks.written import (
    deleted_ids,
    forget_deleted,
    forget_written,
    remember_deleted,
    remember_written,
    written_ids,
)

__all__ = [
    "KINDS",
    "MAX_TASK_ID",
    "MAX_WAIT_SECONDS",
    "STATUSES",
    "ClaimedTask",
    "Task",
    "TaskQueue",
    "WriteLimits",
]

_WAIT_POLL_SECONDS = 0.05
# Retry-After of a full backlog: about what the writer takes to apply a few batches.
BACKLOG_RETRY_SECONDS = 5
# Retry-After below the free-disk floor: space comes back only when someone frees it.
DISK_RETRY_SECONDS = 60
# Finished tasks deleted per transaction by `prune`: other writers wait for no long one.
_PRUNE_CHUNK = 10_000
# Rate windows kept after they end (a key that stopped writing leaves one row per limit).
_RATE_WINDOWS_KEPT_SECONDS = 24 * 3600
_UNFINISHED = "('enqueued', 'processing')"
_FINISHED = "('succeeded', 'failed')"


@dataclass(frozen=True, slots=True)
class WriteLimits:
    """What the queue admits from API keys (each bound 0: none). Checked in the transaction
    that enqueues, so that every worker process sees the same backlog and the same counts."""

    # Bytes of payloads waiting (enqueued or processing), of every key: QueueFull beyond.
    max_bytes: int = 0
    # The same, of one key: KeyQueueFull beyond.
    max_bytes_per_key: int = 0
    # Free bytes the queue's disk keeps after the write: InsufficientStorage below.
    min_free_disk_bytes: int = 0
    # (writes, seconds): at most `writes` per key in each window of `seconds` (fixed windows,
    # as the `limits` library's default): WriteRateExceeded beyond.
    rates: tuple[tuple[int, int], ...] = ()


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
    def enqueue_upserts(
        self,
        records: Sequence[Record],
        origin: str = "api",
        owner: str | None = None,
        limits: WriteLimits | None = None,
    ) -> Task:
        """Queue records to add or replace by id; returns once the task is on disk.

        `owner` is the API key making the write (its id); `limits` what the queue admits from
        it (None: no bound, for the command line). A refused write raises one of QueueFull,
        KeyQueueFull, InsufficientStorage, WriteRateExceeded, and nothing is queued."""
        payload = orjson.dumps([record.to_dict() for record in records])
        return self._enqueue("upsert", len(records), payload, origin, owner, limits)

    def enqueue_deletes(
        self,
        ids: Sequence[str],
        origin: str = "api",
        owner: str | None = None,
        limits: WriteLimits | None = None,
    ) -> Task:
        """Queue ids to delete; returns once the task is on disk (as `enqueue_upserts`)."""
        payload = orjson.dumps(list(ids))
        return self._enqueue("delete", len(ids), payload, origin, owner, limits)

    def admit(self, owner: str | None, limits: WriteLimits, size: int = 0) -> None:
        """Raise now what enqueueing `size` bytes for `owner` would raise, reading only: a
        write refused anyway is refused before its body is parsed (the enqueue checks again)."""
        self._check_disk(limits, size)
        _check_admission(self.query, owner, size, limits, time.time())

    def _enqueue(
        self,
        kind: str,
        size: int,
        payload: bytes,
        origin: str,
        owner: str | None,
        limits: WriteLimits | None,
    ) -> Task:
        if limits is not None:
            self._check_disk(limits, len(payload))
        enqueued_at = _now()
        with self.transaction() as connection:
            if limits is not None:
                now = time.time()

                def read(sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
                    return connection.execute(sql, parameters).fetchall()

                _check_admission(read, owner, len(payload), limits, now)
                if owner is not None:
                    _count_write(connection, owner, limits, now)
            cursor = connection.execute(
                "INSERT INTO tasks (kind, status, size, payload, origin, enqueued_at, key_id, "
                "bytes) VALUES (?, 'enqueued', ?, ?, ?, ?, ?, ?)",
                (kind, size, payload, origin, enqueued_at, owner, len(payload)),
            )
        task_id = cursor.lastrowid
        assert task_id is not None
        return Task(task_id, kind, "enqueued", size, origin, enqueued_at, key_id=owner)

    def _check_disk(self, limits: WriteLimits, size: int) -> None:
        if not limits.min_free_disk_bytes:
            return
        try:
            free = shutil.disk_usage(self.path.parent).free
        except OSError:
            return  # no directory yet: opening the queue makes it, or says why it cannot
        # A payload is written twice: to the write-ahead log, then to the file.
        if free - 2 * size < limits.min_free_disk_bytes:
            raise InsufficientStorage(
                "writes are refused while the service's disk has less free space than it "
                "keeps in reserve: retry later",
                retry_after=DISK_RETRY_SECONDS,
            )

    # -- reading -----------------------------------------------------------------------------
    def get(self, task_id: int, key_id: str | None = None) -> Task:
        """The task `task_id`; TaskNotFound when there is none, or when `key_id` is given and
        another key made it (the answer does not tell which)."""
        rows = []
        if 0 < task_id <= MAX_TASK_ID:
            sql = f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?"
            parameters: tuple[Any, ...] = (task_id,)
            if key_id is not None:
                sql += " AND key_id = ?"
                parameters += (key_id,)
            rows = self.query(sql, parameters)
        if not rows:
            raise TaskNotFound(f"no task with id {task_id}", id=task_id)
        return _task_of(rows[0])

    def tasks(
        self,
        status: str | None = None,
        limit: int = 20,
        before: int | None = None,
        key_id: str | None = None,
    ) -> list[Task]:
        """Tasks newest first, of one status or all, of the key `key_id` or all (None);
        `before` pages on (ids below it)."""
        conditions: list[str] = []
        parameters: list[Any] = []
        if status is not None:
            conditions.append("status = ?")
            parameters.append(status)
        if before is not None:
            conditions.append("id < ?")
            parameters.append(before)
        if key_id is not None:
            conditions.append("key_id = ?")
            parameters.append(key_id)
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

    def backlog(self, key_id: str | None = None) -> dict[str, int]:
        """The tasks waiting to be applied (enqueued or processing) and their payloads' bytes,
        of one key or all."""
        where, parameters = ("WHERE key_id = ?", (key_id,)) if key_id is not None else ("", ())
        rows = self.query(
            "SELECT COALESCE(SUM(tasks), 0) AS tasks, COALESCE(SUM(bytes), 0) AS bytes "
            f"FROM backlog {where}",
            parameters,
        )
        if not rows:
            return {"tasks": 0, "bytes": 0}
        return {"tasks": rows[0]["tasks"], "bytes": rows[0]["bytes"]}

    def oldest_waiting_seconds(self) -> float:
        """How long the oldest task waiting to be applied has waited (0 when none waits): it
        grows while a writer is stuck or behind."""
        rows = self.query(
            f"SELECT enqueued_at FROM tasks WHERE status IN {_UNFINISHED} ORDER BY id LIMIT 1"
        )
        if not rows:
            return 0.0
        enqueued = datetime.fromisoformat(rows[0]["enqueued_at"])
        return max(0.0, (datetime.now(UTC) - enqueued).total_seconds())

    def wait(self, task_id: int, timeout: float, key_id: str | None = None) -> Task:
        """The task once it is done, or as it is after `timeout` seconds (`key_id` as `get`)."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            task = self.get(task_id, key_id)
            if task.done or time.monotonic() >= deadline:
                return task
            time.sleep(_WAIT_POLL_SECONDS)

    # -- the writer's side -------------------------------------------------------------------
    def claim(self, max_records: int, max_bytes: int = 0) -> list[ClaimedTask]:
        """Mark the oldest unfinished tasks processing, up to `max_records` records and ids and
        `max_bytes` bytes of payloads in all (0: no byte bound; at least one task whatever its
        size), and return them with their payloads.

        Tasks already `processing` are claimed again first: only the one writer claims, so they
        are its own from a batch that failed and could not be put back (the queue's file was
        not writable then), and applying a later task before them would reorder writes.

        Only the choice is made in the write transaction: the payloads are read and parsed
        after it, so that other processes enqueue meanwhile rather than wait for the file's
        write lock (and fail when parsing a large batch outlasts their busy timeout).
        """
        chosen: list[Task] = []
        with self.transaction() as connection:
            cursor = connection.execute(
                "SELECT id, kind, size, bytes, origin, enqueued_at, key_id FROM tasks "
                f"WHERE status IN {_UNFINISHED} ORDER BY id"
            )
            records = total_bytes = 0
            started_at = _now()
            for task_id, kind, size, nbytes, origin, enqueued_at, key_id in cursor:
                over_records = records + size > max_records
                over_bytes = bool(max_bytes) and total_bytes + nbytes > max_bytes
                if chosen and (over_records or over_bytes):
                    break
                records += size
                total_bytes += nbytes
                chosen.append(
                    Task(
                        task_id,
                        kind,
                        "processing",
                        size,
                        origin,
                        enqueued_at,
                        started_at,
                        key_id=key_id,
                    )
                )
            cursor.close()
            connection.executemany(
                "UPDATE tasks SET status = 'processing', started_at = ? WHERE id = ?",
                [(started_at, task.id) for task in chosen],
            )
        return [self._loaded(task) for task in chosen]

    def _loaded(self, task: Task) -> ClaimedTask:
        rows = self.query("SELECT payload FROM tasks WHERE id = ?", (task.id,))
        return _with_payload(task, rows[0]["payload"] if rows else None)

    def release(self, claimed: Sequence[ClaimedTask]) -> None:
        """Put claimed tasks back in the queue (the engine could not take them now). Only
        those still `processing`: one of the batch already failed (or succeeded, applied on its
        own) is done, and must not be applied again without its payload, dropped when done."""
        with self.transaction() as connection:
            connection.executemany(
                "UPDATE tasks SET status = 'enqueued', started_at = NULL "
                "WHERE id = ? AND status = 'processing'",
                [(item.task.id,) for item in claimed],
            )

    def succeed(self, claimed: Sequence[ClaimedTask], batch: dict[str, Any]) -> None:
        """Record that the engine committed these tasks (durably: `write` returns once its
        commit is sealed); their payloads are no longer kept."""
        finished_at = _now()
        with self.transaction() as connection:
            for item in claimed:
                result = {"batch": batch}
                remember_deleted(connection, item.task.kind, item.records, item.ids)
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

    def count_attempt(self, item: ClaimedTask) -> int:
        """Count one more unforeseen failure of a task; the number of them so far (kept in the
        file: a writer that takes over knows them)."""
        with self.transaction() as connection:
            connection.execute(
                "UPDATE tasks SET attempts = attempts + 1 WHERE id = ?", (item.task.id,)
            )
            row = connection.execute(
                "SELECT attempts FROM tasks WHERE id = ?", (item.task.id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def prune(self, retention_days: int, now: datetime | None = None) -> int:
        """Delete the tasks finished more than `retention_days` ago (0: keep them for ever) and
        the rate windows long past; the number of tasks deleted. Their ids are never given again
        (AUTOINCREMENT)."""
        deleted = 0
        if retention_days > 0:
            cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
            text = cutoff.isoformat(timespec="milliseconds")
            while True:
                with self.transaction() as connection:
                    cursor = connection.execute(
                        "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE status IN "
                        f"{_FINISHED} AND finished_at < ? ORDER BY id LIMIT ?)",
                        (text, _PRUNE_CHUNK),
                    )
                deleted += cursor.rowcount
                if cursor.rowcount < _PRUNE_CHUNK:
                    break
        with self.transaction() as connection:
            connection.execute(
                "DELETE FROM write_counts WHERE window_start + seconds < ?",
                (time.time() - _RATE_WINDOWS_KEPT_SECONDS,),
            )
            connection.execute("DELETE FROM backlog WHERE tasks = 0")
        return deleted

    # -- records written through the API (written.py) -------------------------------------------
    def written_ids(self) -> set[str]:
        """Ids of the records that API writes put in the index (and no API delete removed)."""
        return written_ids(self)

    def forget_written(self) -> None:
        """Forget them (a rebuild that replaced the index without them)."""
        forget_written(self)

    def deleted_ids(self) -> set[str]:
        """Ids deleted through the API and not written since: a rebuild leaves them out."""
        return deleted_ids(self)

    def forget_deleted(self) -> None:
        """Forget them (a rebuild from the files alone)."""
        forget_deleted(self)


def _check_admission(
    read: Callable[..., list[Any]],
    owner: str | None,
    size: int,
    limits: WriteLimits,
    now: float,
) -> None:
    """Raise the refusal of a write of `size` bytes by `owner`, if the limits refuse it.

    A backlog bound refuses a write that would take the backlog over it, unless the backlog
    is empty: a write larger than the bound alone is still taken rather than never."""
    if owner is not None:
        for writes, seconds in limits.rates:
            start = int(now // seconds) * seconds
            rows = read(
                "SELECT writes FROM write_counts "
                "WHERE key_id = ? AND seconds = ? AND window_start = ?",
                (owner, seconds, start),
            )
            if rows and rows[0][0] >= writes:
                raise WriteRateExceeded(
                    f"this API key made {writes} writes in {seconds} s, as many as the "
                    "service takes: retry later",
                    retry_after=max(1, math.ceil(start + seconds - now)),
                )
        if limits.max_bytes_per_key:
            rows = read("SELECT bytes FROM backlog WHERE key_id = ?", (owner,))
            waiting = rows[0][0] if rows else 0
            if waiting and waiting + size > limits.max_bytes_per_key:
                raise KeyQueueFull(
                    f"this API key has {waiting} bytes of writes waiting to be applied; the "
                    f"queue takes {limits.max_bytes_per_key} per key: retry once some are "
                    "applied (see GET /api/v1/tasks)",
                    retry_after=BACKLOG_RETRY_SECONDS,
                )
    if limits.max_bytes:
        rows = read("SELECT COALESCE(SUM(bytes), 0) FROM backlog")
        waiting = rows[0][0] if rows else 0
        if waiting and waiting + size > limits.max_bytes:
            raise QueueFull(
                "the service has as many writes waiting to be applied as it takes: retry later",
                retry_after=BACKLOG_RETRY_SECONDS,
            )


def _count_write(
    connection: sqlite3.Connection, owner: str, limits: WriteLimits, now: float
) -> None:
    """Count a write of `owner` in the current window of each rate, dropping its past ones."""
    for _writes, seconds in limits.rates:
        start = int(now // seconds) * seconds
        connection.execute(
            "INSERT INTO write_counts (key_id, seconds, window_start, writes) "
            "VALUES (?, ?, ?, 1) ON CONFLICT (key_id, seconds, window_start) "
            "DO UPDATE SET writes = writes + 1",
            (owner, seconds, start),
        )
        connection.execute(
            "DELETE FROM write_counts WHERE key_id = ? AND seconds = ? AND window_start < ?",
            (owner, seconds, start),
        )


_TASK_COLUMNS = (
    "id, kind, status, size, origin, enqueued_at, started_at, finished_at, result, error, key_id"
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
        key_id=row["key_id"],
    )


def _with_payload(task: Task, payload: bytes | None) -> ClaimedTask:
    claimed = ClaimedTask(task)
    try:
        values = orjson.loads(payload) if payload else []
        if not isinstance(values, list):
            raise ValueError(f"a JSON list was stored, not {type(values).__name__}")
    except ValueError as exc:
        # Only damage can do this (it was written by enqueue): the task fails, with its reason,
        # rather than raising from claim() on every poll and holding up every write behind it.
        claimed.problems.append(
            {"position": None, "reason": f"its stored payload is unreadable: {exc}"}
        )
        return claimed
    if task.kind == "delete":
        claimed.ids = [str(value) for value in values]
        return claimed
    # Validated before it was queued; a record that no longer converts fails the task (writer).
    for position, value in enumerate(values):
        try:
            if not isinstance(value, dict):
                raise ValueError(f"a record is a JSON object, not {type(value).__name__}")
            claimed.records.append(Record.from_dict(value))
        except ValueError as exc:
            claimed.problems.append({"position": position, "reason": str(exc)})
    return claimed
