"""The task queue's SQLite file: one connection per process, write transactions, reads, and the
tables every part of the queue keeps in it (the tasks and their backlog, the ids of records
written and deleted through the API, the API keys, the writes counted against the rate limit),
made by whoever opens the file first, and added to a file of an earlier version.

Commits are durable: WAL journal, `synchronous=FULL` (a commit is on disk before it returns).
"""

from __future__ import annotations

import contextlib
import os
import re
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

# The tables of a new file. A file of an earlier version gets what it lacks on opening
# (`_migrate`): the columns of _ADDED_COLUMNS, then the tables, indexes and triggers below, all
# made only if missing.
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

# Columns added to `tasks` since the first version: the key that made the task (NULL: the
# command line), its payload's length in bytes (the batch and backlog bounds), and how many
# times the writer met an unforeseen error applying it (dead-lettered at writer.MAX_ATTEMPTS).
_ADDED_COLUMNS = {
    "key_id": "TEXT",
    "bytes": "INTEGER NOT NULL DEFAULT 0",
    "attempts": "INTEGER NOT NULL DEFAULT 0",
}

_SCHEMA_AFTER_COLUMNS = """
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, id);
CREATE INDEX IF NOT EXISTS tasks_by_key ON tasks (key_id, id);
-- Ids deleted through the API and not written since: a rebuild from files leaves them out.
CREATE TABLE IF NOT EXISTS deleted_records (id TEXT PRIMARY KEY) WITHOUT ROWID;
-- Writes acknowledged per key in each window of each of WRITE_RATE_LIMIT's limits: one
-- budget for every worker process.
CREATE TABLE IF NOT EXISTS write_counts (
    key_id TEXT NOT NULL,
    seconds INTEGER NOT NULL,
    window_start INTEGER NOT NULL,
    writes INTEGER NOT NULL,
    PRIMARY KEY (key_id, seconds, window_start)
) WITHOUT ROWID;
"""

# The unfinished tasks (enqueued or processing) and their payloads' bytes, per key ('' for the
# command line's): what the backlog bounds compare with, kept by triggers in the transaction of
# every change of a task, so that checking a bound costs one row, however long the backlog.
_BACKLOG_TABLE = """
CREATE TABLE backlog (
    key_id TEXT PRIMARY KEY,
    tasks INTEGER NOT NULL,
    bytes INTEGER NOT NULL
) WITHOUT ROWID
"""
_UNFINISHED = "('enqueued', 'processing')"
_BACKLOG_TRIGGERS = f"""
CREATE TRIGGER IF NOT EXISTS backlog_on_insert AFTER INSERT ON tasks
WHEN NEW.status IN {_UNFINISHED}
BEGIN
    INSERT INTO backlog (key_id, tasks, bytes) VALUES (COALESCE(NEW.key_id, ''), 1, NEW.bytes)
    ON CONFLICT (key_id) DO UPDATE SET tasks = tasks + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER IF NOT EXISTS backlog_on_finish AFTER UPDATE OF status ON tasks
WHEN OLD.status IN {_UNFINISHED} AND NEW.status NOT IN {_UNFINISHED}
BEGIN
    UPDATE backlog SET tasks = tasks - 1, bytes = bytes - OLD.bytes
    WHERE key_id = COALESCE(OLD.key_id, '');
END;
CREATE TRIGGER IF NOT EXISTS backlog_on_reopen AFTER UPDATE OF status ON tasks
WHEN OLD.status NOT IN {_UNFINISHED} AND NEW.status IN {_UNFINISHED}
BEGIN
    INSERT INTO backlog (key_id, tasks, bytes) VALUES (COALESCE(NEW.key_id, ''), 1, NEW.bytes)
    ON CONFLICT (key_id) DO UPDATE SET tasks = tasks + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER IF NOT EXISTS backlog_on_delete AFTER DELETE ON tasks
WHEN OLD.status IN {_UNFINISHED}
BEGIN
    UPDATE backlog SET tasks = tasks - 1, bytes = bytes - OLD.bytes
    WHERE key_id = COALESCE(OLD.key_id, '');
END;
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
    def wait_slot(self, key_id: str, slots: int) -> Iterator[bool]:
        """Hold one of `slots` places for a request of `key_id` waiting on a task, shared by
        every process of the deployment; yields False at once when all are held (`slots` 0: no
        bound). File locks, not rows: the kernel drops those of a killed process, and taking
        one writes nothing to the queue's file."""
        if slots <= 0:
            yield True
            return
        directory = self.path.with_name(self.path.name + ".waits")
        name = re.sub(r"[^A-Za-z0-9_-]", "_", key_id)
        for slot in range(slots):
            with file_lock(directory / f"{name}.{slot}.lock", wait=False) as held:
                if held:
                    yield True
                    return
        yield False

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
        _run(connection, _SCHEMA)
        _migrate(connection)
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _run(connection: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";\n"):
        if statement.strip():
            connection.execute(statement)


def _migrate(connection: sqlite3.Connection) -> None:
    """What a file of an earlier version lacks, within the set-up transaction; a file that
    has it all is left as it is."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(tasks)")}
    for name, declaration in _ADDED_COLUMNS.items():
        if name not in columns:
            connection.execute(f"ALTER TABLE tasks ADD COLUMN {name} {declaration}")
    if "bytes" not in columns:
        connection.execute(
            "UPDATE tasks SET bytes = length(payload) WHERE payload IS NOT NULL "
            f"AND status IN {_UNFINISHED}"
        )
    _run(connection, _SCHEMA_AFTER_COLUMNS)
    has_backlog = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'backlog'"
    ).fetchone()
    if not has_backlog:
        connection.execute(_BACKLOG_TABLE)
        connection.execute(
            "INSERT INTO backlog (key_id, tasks, bytes) "
            "SELECT COALESCE(key_id, ''), COUNT(*), SUM(bytes) FROM tasks "
            f"WHERE status IN {_UNFINISHED} GROUP BY COALESCE(key_id, '')"
        )
    # Trigger bodies hold `;`: each is one statement, ended by END.
    for trigger in _BACKLOG_TRIGGERS.split("END;"):
        if trigger.strip():
            connection.execute(trigger + "END")
