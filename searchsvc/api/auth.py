"""API keys on requests: `Authorization: Bearer <key>` checked by flask-httpauth.

Writes and task reads need a key with the write scope; reads need one with the read scope only
when REQUIRE_KEY_FOR_READS is set. A missing, unknown or revoked key answers 401 with
`WWW-Authenticate: Bearer`; a key without the scope 403; both in the one error shape. Keys are
never logged (the access log has no headers). Writes are rate-limited per key (flask-limiter).
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, current_app, g, request
from flask_httpauth import HTTPTokenAuth
from flask_limiter import Limiter

from searchsvc.api.errors import error_response
from searchsvc.extension import get_keys
from searchsvc.tasks.keys import SCOPES, ApiKey

auth = HTTPTokenAuth(scheme="Bearer", realm="searchsvc")
SECURITY_SCHEME = "bearerAuth"
# The operations that take a key, for the OpenAPI document.
SECURED: list[dict[str, list[str]]] = [{SECURITY_SCHEME: []}]


@auth.verify_token
def _verify(token: str) -> ApiKey | None:
    return get_keys().authenticate(token) if token else None


@auth.get_user_roles
def _roles(key: ApiKey) -> list[str]:
    return [scope for scope in SCOPES if key.allows(scope)]


@auth.error_handler
def _refused(status: int) -> Response:
    if status == 401:
        message = "an API key is required: send `Authorization: Bearer <key>`"
        if request.headers.get("Authorization"):
            message = "the API key is unknown or revoked"
        return error_response(401, "unauthorized", message)
    return error_response(403, "forbidden", "the API key lacks the scope this request needs")


def _key_of_request() -> str:
    key = auth.current_user()
    return f"key:{key.id}" if key is not None else f"ip:{request.remote_addr}"


limiter = Limiter(_key_of_request, storage_uri="memory://", headers_enabled=True)


def write_limit() -> str:
    # flask-limiter parses the limit even for an exempt request: an empty setting (no limit,
    # no_write_limit) still needs a well-formed one.
    return current_app.config["WRITE_RATE_LIMIT"] or "1/second"


def no_write_limit() -> bool:
    """An empty WRITE_RATE_LIMIT setting exempts every write from the limit."""
    return not current_app.config["WRITE_RATE_LIMIT"]


def require_key_for_reads() -> Response | None:
    """Before a read view: the read scope when REQUIRE_KEY_FOR_READS is set."""
    if not current_app.config["REQUIRE_KEY_FOR_READS"] or request.method == "OPTIONS":
        return None
    key = _verify(_token_of_request())
    if key is None:
        response = _refused(401)
        response.headers["WWW-Authenticate"] = auth.authenticate_header()
        return response
    if not key.allows("read"):
        return _refused(403)
    g.flask_httpauth_user = key
    return None


def _token_of_request() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def init_app(app: Flask, api: Any) -> None:
    limiter.init_app(app)
    api.spec.components.security_scheme(
        SECURITY_SCHEME,
        {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key made with `searchsvc keys create`.",
        },
    )
