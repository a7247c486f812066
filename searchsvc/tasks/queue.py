"""The durable task queue: write requests kept in SQLite (WAL) until the writer applies them.

A task is acknowledged only once its row is committed to the database file (journal in WAL
mode, `synchronous=FULL`: the commit is on disk before `enqueue` returns), so a `kill -9` of
any process, or a restart, never loses it. Any number of processes enqueue; one writer
(writer.py) claims consecutive tasks in id order, applies them to the engine in one commit and
records each task's outcome. A task claimed by a writer that died is claimed again by the next
one: applying a task twice leaves the index as applying it once (upserts and deletes by id).

The same database keeps the ids of the records written through the API (so that a rebuild from
files keeps them, indexer.py) and the API keys (keys.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from searchsvc.errors import SearchsvcError, TaskNotFound, TaskQueueUnavailable
from searchsvc.records import Record

STATUSES = ("enqueued", "processing", "succeeded", "failed")
KINDS = ("upsert", "delete")
# Task ids are SQLite rowids: positive 64-bit integers.
MAX_TASK_ID = 2**63 - 1
# Longest a caller may wait for a task to finish in one request (seconds). A waiting request
# holds a sync worker, so it is kept well below gunicorn's 30 s timeout; clients wait again.
MAX_WAIT_SECONDS = 10.0
_WAIT_POLL_SECONDS = 0.05
# How long a connection waits for another process's write transaction before giving up.
_BUSY_TIMEOUT_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
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
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, id);
CREATE TABLE IF NOT EXISTS written_records (id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    digest BLOB NOT NULL,
    scopes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
"""


@dataclass(frozen=True, slots=True)
class Task:
    """One write request and what became of it."""

    id: int
    kind: str  # "upsert" or "delete"
    status: str  # one of STATUSES
    size: int  # records (upsert) or ids (delete) it carries
    origin: str  # "api" or "cli"
    enqueued_at: str
    started_at: str | None = None
    finished_at: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "size": self.size,
            "origin": self.origin,
            "enqueued_at": self.enqueued_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "result": self.result,
            "error": self.error,
        }


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


class TaskQueue:
    """The queue in one SQLite file; safe to use from many threads and processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(os.path.abspath(path))
        # One connection per process, shared by its threads under this lock. Per-thread
        # connections could not all be reset: SQLite shares a file's state (a read-only opening
        # while the directory was read-only) between the connections of a process, so one
        # stale connection kept every new one read-only after the files became writable again.
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = 0

    # -- connections -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connected(self) -> Iterator[sqlite3.Connection]:
        """The process's connection, held for the block; reopened after any SQLite error, so
        that a failure (read-only or full disk, a damaged file) does not outlive its cause."""
        with self._lock:
            if self._connection is None or self._pid != os.getpid():
                self._connection = self._open()
                self._pid = os.getpid()
            try:
                yield self._connection
            except (sqlite3.Error, TaskQueueUnavailable):
                self._reset()
                raise

    def _open(self) -> sqlite3.Connection:
        connection = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            # FULL: a commit is on disk (WAL fsynced) before it returns, so an acknowledged task
            # survives a power cut as well as a killed process.
            connection.execute("PRAGMA synchronous=FULL")
            _set_up(connection)
            return connection
        except (sqlite3.Error, OSError) as exc:
            if connection is not None:
                connection.close()
            raise _unavailable(self.path, exc) from exc

    def _reset(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
        self._connection = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: the write lock taken at once, not mid-way)."""
        with self._connected() as connection:
            try:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    yield connection
                except BaseException:
                    # Some errors (a full disk) have SQLite roll back on its own already.
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
            except sqlite3.Error as exc:
                if connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                raise _unavailable(self.path, exc) from exc

    def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of a read; none while the queue's file does not exist (reads never create it)."""
        with self._lock:
            if self._connection is None and not self.path.exists():
                return []
            try:
                with self._connected() as connection:
                    cursor = connection.execute(sql, parameters)
                    cursor.row_factory = sqlite3.Row
                    return cursor.fetchall()
            except sqlite3.Error as exc:
                raise _unavailable(self.path, exc) from exc

    def close(self) -> None:
        with self._lock:
            self._reset()

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
                    _remember_written(connection, item)
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

    # -- records written through the API -------------------------------------------------------
    def written_ids(self) -> set[str]:
        """Ids of the records that API writes put in the index (and no API delete removed)."""
        return {row["id"] for row in self.query("SELECT id FROM written_records")}

    def forget_written(self) -> None:
        """Forget them (a rebuild that replaced the index without them)."""
        with self.transaction() as connection:
            connection.execute("DELETE FROM written_records")

    # -- locks shared by the writer and rebuilds -----------------------------------------------
    @contextlib.contextmanager
    def apply_lock(self, wait: bool = True) -> Iterator[bool]:
        """Hold the right to change the index: the writer for each batch, a rebuild for all of
        it. Yields False at once when `wait` is False and someone else holds it."""
        with _flock(self.path.with_name(self.path.name + ".apply.lock"), wait) as held:
            yield held

    @contextlib.contextmanager
    def writer_role(self) -> Iterator[bool]:
        """Try to be the one writer of this queue (yields False when another process is)."""
        with _flock(self.path.with_name(self.path.name + ".writer.lock"), wait=False) as held:
            yield held


_TASK_COLUMNS = (
    "id, kind, status, size, origin, enqueued_at, started_at, finished_at, result, error"
)


def _set_up(connection: sqlite3.Connection) -> None:
    """WAL mode (kept by the file once set) and the tables, whoever opens the file first.

    Processes starting together all open a new file at once: switching to WAL fails at once
    with "database is locked" while another connection switches (SQLite does not wait for
    it), so that is retried; the tables are made in a transaction, which does wait.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            connection.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                connection.execute(statement)
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


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


def _remember_written(connection: sqlite3.Connection, item: ClaimedTask) -> None:
    if item.task.kind == "upsert":
        connection.executemany(
            "INSERT OR IGNORE INTO written_records (id) VALUES (?)",
            [(record.id,) for record in item.records],
        )
    else:
        connection.executemany(
            "DELETE FROM written_records WHERE id = ?", [(record_id,) for record_id in item.ids]
        )


@contextlib.contextmanager
def _flock(path: Path, wait: bool) -> Iterator[bool]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")  # noqa: SIM115 (held for the whole block)
    except OSError as exc:
        raise _unavailable(path, exc) from exc
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unavailable(path: Path, exc: BaseException) -> TaskQueueUnavailable:
    # An OSError's text names the file: fine on the command line, not in an HTTP answer.
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    error = TaskQueueUnavailable(f"the task queue is unavailable: {reason}")
    error.local_message = f"the task queue at {path} is unavailable: {str(exc) or reason}"
    return error
