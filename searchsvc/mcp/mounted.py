"""/mcp of the service: MCP's streamable HTTP transport inside the Flask app, behind a read key.

The app is WSGI (gunicorn sync workers); the SDK's transport is ASGI. The transport runs
stateless with JSON answers (no session to keep between requests, no event stream to hold a
worker), so one POST is one JSON-RPC exchange: the view hands the request to the SDK's session
manager in an event loop of its own (`asyncio.run`) and returns what it answered. A GET (the
optional server-to-client stream) and a DELETE (ending a session) have nothing to do here: 405,
which the MCP clients take as "no stream".

Every request needs an API key with the read scope as `Authorization: Bearer <key>`, whether or
not REQUIRE_KEY_FOR_READS closes the other reads: an assistant's tools are opened to a holder of
a key made with `searchsvc keys create NAME --scope read`. With REQUIRE_KEY_FOR_READS set, the
app-wide check (api/auth.py) has already refused a request without one.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import anyio
from flask import Blueprint, Flask, Response, current_app, g, jsonify, request
from mcp.server.fastmcp import FastMCP
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from searchsvc.domain.errors import TaskQueueUnavailable
from searchsvc.extension import get_keys, get_service
from searchsvc.mcp.server import build_server

PATH = "/mcp"
REALM = "searchsvc"
_EXTENSION = "searchsvc.mcp"
# Headers of the SDK's answer that the WSGI server sets itself.
_HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})

bp = Blueprint("mcp", __name__)


def init_app(app: Flask) -> None:
    """Answer MCP at /mcp: the tools of server.py on the app's SearchService."""
    app.extensions[_EXTENSION] = build_server(get_service, stateless_http=True, json_response=True)
    app.register_blueprint(bp)


@bp.route(PATH, methods=["POST"])
def endpoint() -> Response:
    refusal = _refusal()
    if refusal is not None:
        return refusal
    server: FastMCP = current_app.extensions[_EXTENSION]
    status, headers, body = asyncio.run(_exchange(server, _scope(), request.get_data()))
    kept = [(name, value) for name, value in headers if name.lower() not in _HOP_HEADERS]
    response = Response(body, status=status, headers=kept)
    response.headers["Cache-Control"] = "no-store"
    return response


def _refusal() -> Response | None:
    """Why this request may not call the tools, as the answer (401, 403, 503), or None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    if not token:
        return _error(
            401,
            "unauthorized",
            "an API key with the read scope is required: send `Authorization: Bearer <key>`",
        )
    try:
        key = get_keys().authenticate(token)
    except TaskQueueUnavailable:
        return _error(
            503,
            "keys_unavailable",
            "MCP over HTTP takes an API key, and this service has no key store "
            "(set SEARCHSVC_TASKS_DB)",
        )
    if key is None:
        return _error(401, "unauthorized", "the API key is unknown or revoked")
    if not key.allows("read"):
        return _error(403, "forbidden", "the API key lacks the read scope")
    g.flask_httpauth_user = key  # the answer is the key holder's: Cache-Control private
    return None


def _error(status: int, code: str, message: str) -> Response:
    response = jsonify({"error": {"status": status, "code": code, "message": message}})
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    if status == 401:
        response.headers["WWW-Authenticate"] = f'Bearer realm="{REALM}"'
    return response


def _scope() -> dict[str, Any]:
    """The ASGI scope of the current request."""
    environ = request.environ
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").partition("/")[2] or "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("utf-8"),
        "query_string": request.query_string,
        "root_path": request.root_path,
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "client": (request.remote_addr or "", 0),
        "server": (environ.get("SERVER_NAME", ""), _port(environ.get("SERVER_PORT"))),
    }


def _port(text: str | None) -> int:
    # Behind nginx on a unix socket, gunicorn takes SERVER_PORT from the client's Host header:
    # any text at all. The SDK only reports it; a port that is no number is no port.
    try:
        return int(text or 0)
    except ValueError:
        return 0


async def _exchange(
    server: FastMCP, scope: dict[str, Any], body: bytes
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request through the SDK's stateless transport: (status, headers, body)."""
    manager = StreamableHTTPSessionManager(
        app=server._mcp_server, json_response=True, stateless=True
    )
    sent_body = False
    status = 500
    headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # the client stays connected until the answer is sent
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.extend(
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", ())
            )
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)
