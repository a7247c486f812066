"""The ids of the records written through the API, kept in the queue's file: a rebuild from
source files keeps those records (indexer.py), and an API delete forgets its ids."""

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
