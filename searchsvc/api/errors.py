"""Every failure becomes one JSON shape: {"error": {"status", "code", "message", "details"}}.

Domain errors (`searchsvc.domain.errors`, each with the status http/status.py gives it, as on the
web page) and HTTP errors (unknown path, wrong method, oversized request, invalid parameters from
the request schemas) become this JSON here, and nowhere else.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from flask import Flask, Response, jsonify, request
from flask_smorest import Api
from werkzeug.datastructures import Headers
from werkzeug.exceptions import HTTPException, InternalServerError

from searchsvc.api.schemas import ErrorSchema
from searchsvc.domain.errors import InvalidRequest, SearchsvcError
from searchsvc.http.status import status_of
from searchsvc.params import first_message

log = logging.getLogger(__name__)

# Paths that always answer errors in JSON; elsewhere (the web page) a browser gets HTML.
JSON_PATHS = ("/api/", "/healthz", "/readyz", "/metrics")
RETRY_AFTER_SECONDS = 5


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> Response:
    """The JSON error response; errors are never cached."""
    response = jsonify(
        {
            "error": {
                "status": status,
                "code": code,
                "message": message,
                "details": details or {},
            }
        }
    )
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    if status == 503:
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def handle_domain_error(error: SearchsvcError) -> Response:
    status = status_of(error)
    if status == 500:
        log.error("unexpected %s: %s", type(error).__name__, error.message)
    response = error_response(status, error.code, error.message, _plain(error.details))
    if error.retry_after is not None:
        # A refusal that passes (a bound of the write queue) says when it may have passed.
        response.headers["Retry-After"] = str(max(1, error.retry_after))
    return response


def handle_unexpected_error(error: Exception) -> Response | HTTPException:
    """The last resort: log the traceback, answer a JSON 500 (there should never be one)."""
    log.exception("unhandled error on %s %s", request.method, request.path)
    if _wants_html():
        return InternalServerError()
    return error_response(500, "internal_error", "internal server error")


def _plain(details: dict[str, Any]) -> dict[str, Any]:
    """Details as JSON-safe values (domain errors may carry any object)."""
    return {key: _plain_value(value) for key, value in details.items()}


def _plain_value(value: Any) -> Any:
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    if isinstance(value, list | tuple):
        return [_plain_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain_value(item) for key, item in value.items()}
    return str(value)


def _code_of(error: HTTPException) -> str:
    """`Method Not Allowed` -> `method_not_allowed`."""
    return re.sub(r"[^a-z0-9]+", "_", (error.name or "error").lower()).strip("_")


def _wants_html() -> bool:
    if request.path.startswith(JSON_PATHS):
        return False
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return best == "text/html"


class SearchApi(Api):
    """flask-smorest's Api with this service's error shape, documented and returned."""

    ERROR_SCHEMA = ErrorSchema

    def handle_http_exception(self, error: HTTPException) -> Any:
        if _wants_html():
            return error
        data = getattr(error, "data", None) or {}
        status = error.code or 500
        if "messages" in data:
            # Raised by the request schemas (webargs): {location: {parameter: [messages]}}.
            errors = _flatten_locations(data["messages"])
            name, messages = next(iter(errors.items()))
            message = f"invalid parameter {name}: {first_message(messages)}"
            response = error_response(400, InvalidRequest.code, message, {"errors": errors})
        else:
            message = data.get("message") or error.description or error.name
            response = error_response(status, _code_of(error), message)
        # Each header of the exception replaces the answer's, with all its values: a 401 may
        # offer several WWW-Authenticate challenges (auth.py).
        own = Headers(error.get_headers())
        for name in {key.lower() for key, _value in own}:
            response.headers.setlist(name, own.getlist(name))
        response.headers["Content-Type"] = "application/json"
        response.headers.update(data.get("headers") or {})
        return response


def _flatten_locations(messages: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for location, per_location in messages.items():
        if isinstance(per_location, dict):
            flat.update(per_location)
        else:
            # A message about the whole location (webargs: a JSON body that does not parse).
            flat[f"_{location}"] = per_location
    return flat or {"_schema": ["invalid request"]}


def init_app(app: Flask) -> None:
    """Register the domain and catch-all handlers (HTTP errors go through SearchApi)."""
    app.register_error_handler(SearchsvcError, handle_domain_error)
    app.register_error_handler(Exception, handle_unexpected_error)
