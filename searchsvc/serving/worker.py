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

It also answers requests gunicorn cannot parse (a request line or header over the limits,
bytes no HTTP allows, a malformed Content-Length) in the service's JSON error shape, where
gunicorn writes an HTML page of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.http.wsgi import Response, default_environ
from gunicorn.workers.sync import SyncWorker

from searchsvc.serving.errors import error_response, status_line
from searchsvc.serving.limits import LONG_QUERY_HINT
from searchsvc.system.memory import release_free_memory

# The status of each parse error that is not a plain 400 (gunicorn's own choices), most specific
# first; a header the app tried to send is the app's fault, a 500.
PARSE_ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (http_errors.InvalidResponseHeader, 500),
    (http_errors.InvalidResponseHeaderName, 500),
    (http_errors.ConfigurationProblem, 500),
    (http_errors.LimitRequestLine, 414),
    (http_errors.LimitRequestHeaders, 431),
    (http_errors.ExpectationFailed, 417),
    (http_errors.UnsupportedTransferCoding, 501),
    (http_errors.ForbiddenProxyRequest, 403),
    (http_errors.ParseException, 400),
)

# Errors that carry the request read so far (another error's `req` may be a string).
HEADER_ERRORS = (http_errors.InvalidHeader, http_errors.InvalidHeaderName)

# A busy worker gives memory back every this many requests (at once when it is idle).
TRIM_EVERY_REQUESTS = 256
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
        if self.log.deferred or self._untrimmed:
            timeout = min(timeout, DEFERRED_LINE_SECONDS)
        ready = super().wait(timeout)
        if not ready:
            self.log.write_deferred()  # a quiet moment
            self._release_memory()
        return ready

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        # Accepted: the previous request's line goes out now, before this request is read.
        self.log.write_deferred()
        super().handle(listener, client, addr)
        self._untrimmed += 1
        if self._untrimmed >= TRIM_EVERY_REQUESTS:
            self._release_memory()  # a worker that is never idle

    _untrimmed = 0  # requests since the memory searches freed was last given back

    def _release_memory(self) -> None:
        # Searches free large temporary arrays that malloc would keep: given back when the
        # worker is idle (or every so many requests), its USS is what it holds (issue 20).
        if self._untrimmed:
            release_free_memory()
            self._untrimmed = 0

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """gunicorn's answer to a request it could not parse or serve, in the JSON shape."""
        started = datetime.now()
        addr = addr or ("", -1)  # a unix socket
        status = status_of_error(exc)
        if status == 500:
            self.log.exception("Error handling request %s", getattr(req, "uri", "(no URI read)"))
            message = "internal server error"
        else:
            self.log.warning("Invalid request from ip=%s: %s", addr[0], exc)
            message = str(exc)
            if status == 414:
                message = f"{message}: {LONG_QUERY_HINT}"
            if not req and isinstance(exc, HEADER_ERRORS):
                req = getattr(exc, "req", None)  # the request read so far, for the access line
        answer = error_response(status, message)
        if req is not None:
            # The access line gunicorn writes for a refused request.
            environ = default_environ(req, client, self.cfg)
            environ["REMOTE_ADDR"] = addr[0]
            environ["REMOTE_PORT"] = str(addr[1])
            response = Response(req, client, self.cfg)
            response.status = status_line(status)
            response.response_length = len(answer)
            self.log.access(response, req, environ, datetime.now() - started)
        try:
            util.write_nonblock(client, answer)
        except Exception:
            self.log.debug("Failed to send error message.")


def status_of_error(exc: BaseException) -> int:
    """The HTTP status of an exception gunicorn met reading or answering a request."""
    return next((s for kind, s in PARSE_ERROR_STATUS if isinstance(exc, kind)), 500)


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
