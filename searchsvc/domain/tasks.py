"""Writes as tasks: what a queued write request is, and what became of it (the queue is
searchsvc/tasks/; the API, the CLI and the HTTP client show the same Task)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STATUSES = ("enqueued", "processing", "succeeded", "failed")
KINDS = ("upsert", "delete")
# Task ids are SQLite rowids: positive 64-bit integers.
MAX_TASK_ID = 2**63 - 1
# Longest a caller may wait for a task to finish in one request (seconds). A waiting request
# holds a sync worker, so it is kept well below gunicorn's 30 s timeout; clients wait again.
MAX_WAIT_SECONDS = 10.0


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
    # The API key that made it (its id): only that key and admin keys see the task. None for
    # the command line's tasks, and for those queued before tasks had owners.
    key_id: str | None = None

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
            "key_id": self.key_id,
        }
