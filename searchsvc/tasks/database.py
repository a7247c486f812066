"""The task queue's SQLite file: one connection per process, write transactions, reads, and the
tables every part of the queue keeps in it (the tasks, the ids of records written through the
API, the API keys), made by whoever opens the file first.

Commits are durable: WAL journal, `synchronous=FULL` (a commit is on disk before it returns).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from searchsvc.domain.errors import TaskQueueUnavailable
from searchsvc.tasks.locks import file_lock, queue_unavailable

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


class QueueDatabase:
    """The queue's file; safe to use from many threads and processes."""

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
            raise queue_unavailable(self.path, exc) from exc

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
                raise queue_unavailable(self.path, exc) from exc

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
                raise queue_unavailable(self.path, exc) from exc

    def close(self) -> None:
        with self._lock:
            self._reset()

    # -- locks shared by the writer and rebuilds -----------------------------------------------
    @contextlib.contextmanager
    def apply_lock(self, wait: bool = True) -> Iterator[bool]:
        """Hold the right to change the index: the writer for each batch, a rebuild for all of
        it. Yields False at once when `wait` is False and someone else holds it."""
        with file_lock(self.path.with_name(self.path.name + ".apply.lock"), wait) as held:
            yield held

    @contextlib.contextmanager
    def writer_role(self) -> Iterator[bool]:
        """Try to be the one writer of this queue (yields False when another process is)."""
        with file_lock(self.path.with_name(self.path.name + ".writer.lock"), wait=False) as held:
            yield held


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
