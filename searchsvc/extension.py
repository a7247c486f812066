"""The Flask glue of the SearchService: one per process, opened on first use (flaskr's pattern).

`init_app(app)` gives the app its service on `app.config["INDEX"]` (a location); views call
`get_service()`. A gunicorn worker is a fork of the master: the service is opened again in each
process, so workers never share an engine's open files.
"""

from __future__ import annotations

import os
import threading

from flask import Flask, current_app

from searchsvc.domain.errors import InvalidLocation, TaskQueueUnavailable
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, TaskWriter, queue_path
from searchsvc.tasks.keys import KeyStore

_EXTENSION = "searchsvc.service"
_QUEUE = "searchsvc.tasks"
_WRITER = "searchsvc.writer"


class _ProcessService:
    """Opens the app's SearchService on first use, once per process, and keeps it."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._lock = threading.Lock()
        self._service: SearchService | None = None
        self._pid = 0

    def get(self) -> SearchService:
        service = self._service
        # A forked worker must not share the parent's open files: reopen in each process.
        if service is not None and self._pid == os.getpid():
            return service
        with self._lock:
            if self._service is None or self._pid != os.getpid():
                # A failure (IndexUnavailable) is not remembered: the next request tries again.
                self._service = SearchService.open(self.location)
                self._pid = os.getpid()
            return self._service


def init_app(app: Flask) -> None:
    """Give the app its (lazily opened) SearchService on `app.config["INDEX"]`, and its task
    queue (`TASKS_DB`, opened on first use)."""
    app.extensions[_EXTENSION] = _ProcessService(app.config["INDEX"])
    try:
        path = queue_path(app.config["INDEX"], app.config["TASKS_DB"])
    except InvalidLocation as exc:
        # An engine without a directory and no TASKS_DB: reads work, writes say what to set.
        app.extensions[_QUEUE] = exc
    else:
        app.extensions[_QUEUE] = TaskQueue(path)


def get_service() -> SearchService:
    """The SearchService of the current Flask app (opened on first use in this process)."""
    return current_app.extensions[_EXTENSION].get()


def get_queue() -> TaskQueue:
    """The task queue of the current Flask app; TaskQueueUnavailable when it has none."""
    return _queue_of(current_app)


def _queue_of(app: Flask) -> TaskQueue:
    queue = app.extensions[_QUEUE]
    if isinstance(queue, InvalidLocation):
        # Clients are told what to set, not where the index is (its hosts are the server's).
        error = TaskQueueUnavailable(
            "writes are off: the index has no directory for the task queue, and "
            "SEARCHSVC_TASKS_DB names no file"
        )
        error.local_message = f"writes are off: {queue.message}"
        raise error
    return queue


def get_keys() -> KeyStore:
    """The API keys of the current Flask app (kept in the task queue's database)."""
    return KeyStore(get_queue())


def start_writer(app: Flask) -> TaskWriter | None:
    """Run a candidate writer thread in this process (gunicorn workers call it), unless the
    app's WRITER setting leaves writing to a `searchsvc writer` process."""
    if app.config["WRITER"] != "embedded" or _WRITER in app.extensions:
        return None
    if isinstance(app.extensions[_QUEUE], InvalidLocation):
        return None
    # The process's own backend: a batch it writes is visible to this worker's searches at once
    # (other workers follow within their refresh), and no second copy of its snapshot is held.
    service = app.extensions[_EXTENSION].get()
    writer = service.task_writer(
        _queue_of(app),
        batch_bytes=app.config["WRITER_BATCH_BYTES"],
        retention_days=app.config["TASK_RETENTION_DAYS"],
    )
    app.extensions[_WRITER] = writer.start_thread()
    return writer
