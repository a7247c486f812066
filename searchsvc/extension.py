"""The Flask glue of the SearchService: one per process, opened on first use (flaskr's pattern).

`init_app(app)` gives the app its service on `app.config["INDEX"]` (a location); views call
`get_service()`. A gunicorn worker is a fork of the master: the service is opened again in each
process, so workers never share an engine's open files.
"""

from __future__ import annotations

import os
import threading

from flask import Flask, current_app

from searchsvc.service import SearchService

_EXTENSION = "searchsvc.service"


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
    """Give the app its (lazily opened) SearchService on `app.config["INDEX"]`."""
    app.extensions[_EXTENSION] = _ProcessService(app.config["INDEX"])


def get_service() -> SearchService:
    """The SearchService of the current Flask app (opened on first use in this process)."""
    return current_app.extensions[_EXTENSION].get()
