"""The service's one JSON error shape for answers written outside Flask: gunicorn's refusals
of requests it cannot parse (worker.py) and nginx's static error pages (front.py).

The shape and the codes are those of searchsvc/api/errors.py: `code` is the status's name in
snake case, as the app names an HTTP error (`414` -> `request_uri_too_long`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from werkzeug.http import HTTP_STATUS_CODES

from searchsvc.http.headers import DATA_HEADERS

# Longest message taken from a parser's text, which may quote the offending request.
MAX_MESSAGE = 300


def code_of(status: int) -> str:
    """`Request URI Too Long` -> `request_uri_too_long`, as the app names HTTP errors."""
    name = HTTP_STATUS_CODES.get(status, "error")
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def error_body(status: int, message: str, details: dict[str, Any] | None = None) -> bytes:
    """`{"error": {"status", "code", "message", "details"}}` as JSON bytes (ASCII only)."""
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    error = {"status": status, "code": code_of(status), "message": message}
    body = {"error": {**error, "details": details or {}}}
    return json.dumps(body, separators=(",", ":")).encode("ascii")


def status_line(status: int) -> str:
    """`414 Request URI Too Long`."""
    return f"{status} {HTTP_STATUS_CODES.get(status, 'Error')}"


def error_response(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 answer carrying `error_body`, closing the connection."""
    body = error_body(status, message)
    head = (
        f"HTTP/1.1 {status_line(status)}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        "Cache-Control: no-store\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in DATA_HEADERS.items())
        + f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body
