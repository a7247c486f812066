"""Writes through a durable queue: requests enqueue tasks, one writer applies them.

`queue_path` says where a location's queue lives: the `TASKS_DB` setting when given, else
`searchsvc.sqlite3` inside a Whoosh index directory (engines without a directory need the
setting).
"""

from __future__ import annotations

import os
from pathlib import Path

from searchsvc.backends import checked_location, local_directory
from searchsvc.domain.errors import InvalidLocation
from searchsvc.tasks.queue import (
    KINDS,
    MAX_TASK_ID,
    MAX_WAIT_SECONDS,
    STATUSES,
    ClaimedTask,
    Task,
    TaskQueue,
    WriteLimits,
)
from searchsvc.tasks.writer import TaskWriter

QUEUE_FILE = "searchsvc.sqlite3"

__all__ = [
    "KINDS",
    "MAX_TASK_ID",
    "MAX_WAIT_SECONDS",
    "QUEUE_FILE",
    "STATUSES",
    "ClaimedTask",
    "Task",
    "TaskQueue",
    "TaskWriter",
    "WriteLimits",
    "queue_path",
    "queue_path_if_any",
]


def queue_path(location: str | os.PathLike[str], configured: str | os.PathLike[str] = "") -> Path:
    """The task queue's database file for an index location."""
    path = queue_path_if_any(location, configured)
    if path is None:
        raise InvalidLocation(
            f"{checked_location(location)} has no directory for the task queue: set "
            "SEARCHSVC_TASKS_DB (--tasks-db on the command line) to a file path"
        )
    return path


def queue_path_if_any(
    location: str | os.PathLike[str], configured: str | os.PathLike[str] = ""
) -> Path | None:
    """`queue_path`, or None for an engine without a directory when no TASKS_DB is given (a
    malformed location is still InvalidLocation)."""
    # Checked even when TASKS_DB is given: `searchsvc keys create --tasks-db F --index solr://h:1`
    # made keys for a location that no service would start with.
    url = checked_location(location)
    if os.fspath(configured):
        return Path(os.path.abspath(configured))
    directory = local_directory(url)
    return None if directory is None else Path(directory) / QUEUE_FILE
