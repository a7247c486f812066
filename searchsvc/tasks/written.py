"""The ids of the records written and deleted through the API, kept in the queue's file: a
rebuild from source files keeps the records written (indexer.py), and leaves out the ids deleted
(tombstones) until they are written again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from searchsvc.domain.records import Record
from searchsvc.tasks.database import QueueDatabase


def written_ids(database: QueueDatabase) -> set[str]:
    """Ids of the records that API writes put in the index (and no API delete removed)."""
    return {row["id"] for row in database.query("SELECT id FROM written_records")}


def forget_written(database: QueueDatabase) -> None:
    """Forget them all (a rebuild that replaced the index without them)."""
    with database.transaction() as connection:
        connection.execute("DELETE FROM written_records")


def remember_written(
    connection: sqlite3.Connection, kind: str, records: Iterable[Record], ids: Iterable[str]
) -> None:
    """Within the transaction that marks an API task succeeded: its upserted ids are written
    ones now, its deleted ids no longer."""
    if kind == "upsert":
        connection.executemany(
            "INSERT OR IGNORE INTO written_records (id) VALUES (?)",
            [(record.id,) for record in records],
        )
    else:
        connection.executemany(
            "DELETE FROM written_records WHERE id = ?", [(record_id,) for record_id in ids]
        )


def deleted_ids(database: QueueDatabase) -> set[str]:
    """Ids deleted through the API and not written since (tombstones)."""
    return {row["id"] for row in database.query("SELECT id FROM deleted_records")}


def forget_deleted(database: QueueDatabase) -> None:
    """Forget them all (a rebuild from the files alone, `--replace`)."""
    with database.transaction() as connection:
        connection.execute("DELETE FROM deleted_records")


def remember_deleted(
    connection: sqlite3.Connection, kind: str, records: Iterable[Record], ids: Iterable[str]
) -> None:
    """Within the transaction that marks a task succeeded (of any origin): its deleted ids are
    tombstoned, its upserted ids are not (written again)."""
    if kind == "upsert":
        connection.executemany(
            "DELETE FROM deleted_records WHERE id = ?", [(record.id,) for record in records]
        )
    else:
        connection.executemany(
            "INSERT OR IGNORE INTO deleted_records (id) VALUES (?)",
            [(record_id,) for record_id in ids],
        )
