"""gunicorn's sync worker, writing each access line once the next connection is accepted.

gunicorn's sync worker writes a request's access line after the answer and before it accepts
the next connection, and formatting and writing it delays the accept. Every waiting worker is
woken for a new connection and the first to accept it wins, so a client that connects again as
soon as it has its answer is then often taken by another worker. That worker has sat idle for a
whole request and starts with cold CPU caches, which slows one client's searches
(benchmarks/README.md, bench_http).

This worker holds the line back until it has accepted its next connection, or until it has had
none for a second, and writes it then. Lines keep their order and their content, except that a
line's `%(t)s` is the time it is written; `%(L)s`, the request's duration, is its own.
"""

from __future__ import annotations

from typing import Any

from gunicorn.workers.sync import SyncWorker

# Access lines held back: at most this many, for at most about this many seconds.
MAX_DEFERRED_LINES = 64
DEFERRED_LINE_SECONDS = 1.0


class DeferredLogSyncWorker(SyncWorker):
    """gunicorn's sync worker with access lines written after the next accept."""

    log: Any

    def run(self) -> None:
        self.log = _DeferredAccessLog(self.log)
        try:
            super().run()
        finally:
            self.log.write_deferred()

    def wait(self, timeout: float) -> Any:
        if self.log.deferred:
            timeout = min(timeout, DEFERRED_LINE_SECONDS)
        ready = super().wait(timeout)
        if not ready:
            self.log.write_deferred()  # a quiet moment
        return ready

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        # Accepted: the previous request's line goes out now, before this request is read.
        self.log.write_deferred()
        super().handle(listener, client, addr)


class _DeferredAccessLog:
    """The worker's gunicorn logger, with access lines held until `write_deferred()`."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self.deferred: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)

    def access(self, *args: Any) -> None:
        self.deferred.append(args)
        if len(self.deferred) >= MAX_DEFERRED_LINES:
            self.write_deferred()

    def write_deferred(self) -> None:
        lines, self.deferred = self.deferred, []
        for args in lines:
            self._log.access(*args)
