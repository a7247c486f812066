"""API keys on requests: who may read and write.

Writes and task reads need a key with the write scope, sent as `Authorization: Bearer <key>` and
checked by flask-httpauth in their views (writes.py). With REQUIRE_KEY_FOR_READS set, every
other route needs a key with the read scope, checked once for the whole app before any view
(`require_key_for_reads`): the API, the feed, the web pages and their downloads, /readyz's count
and /metrics alike, but for the routes of OPEN_ENDPOINTS, which show no record and no count
(tests/api/test_access.py walks the URL map against that list). A read key is taken as
`Authorization: Bearer <key>` or as the password of HTTP Basic auth, any user name: that is how a
browser gives it, so a page asked for without one answers 401 with a Basic challenge and the
browser prompts; the API's 401 challenges Bearer. A missing, unknown or revoked key answers 401
with `WWW-Authenticate`; a key without the scope 403; the API's in the one error shape. Answers
to a key are `Cache-Control: private` with `Vary: Authorization`: a shared cache must not hand
them to anyone else. Keys are never logged (the access log has no headers). Writes are
rate-limited per key in the queue's database (tasks/queue.py), so that every worker counts alike.
"""

from __future__ import annotations

from typing import Any

from apispec import BasePlugin
from flask import Flask, Response, current_app, g, request
from flask_httpauth import HTTPTokenAuth
from werkzeug.exceptions import Forbidden, Unauthorized

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


# The routes answered without the read key when REQUIRE_KEY_FOR_READS is set, by endpoint, and
# why each may be: none shows a record or a count. tests/api/test_access.py holds the same list.
OPEN_ENDPOINTS: dict[str, str] = {
    "ops.healthz": "liveness: that the process answers, and nothing else",
    "ops.readyz": (
        "readiness, for probes that send no key (the Docker image's HEALTHCHECK): its "
        "document count only to a reader (may_read)"
    ),
    "api-docs.openapi_json": "the OpenAPI document: what the API takes and answers, no data",
    "api_docs": "the OpenAPI document as a page",
    "api_docs_style": "that page's stylesheet",
    "api_docs_script": "that page's script",
    "static": "files shipped with the package",
    "web.static": "the web page's stylesheet and script",
}
# Blueprints whose views ask for a key themselves: writes and tasks, with the write scope.
OWN_KEY_BLUEPRINTS = frozenset({"writes"})
# What browsers and feed readers open: their 401 offers Basic auth too, so that they prompt.
PROMPTING_BLUEPRINTS = frozenset({"web"})
PROMPTING_ENDPOINTS = frozenset({"api.search_feed"})
REALM = "searchsvc"
BEARER_CHALLENGE = f'Bearer realm="{REALM}"'
BASIC_CHALLENGE = f'Basic realm="{REALM}", charset="UTF-8"'
BASIC_SECURITY_SCHEME = "basicAuth"
# What a read operation documents when it takes the key: either scheme.
READ_SECURITY: list[dict[str, list[str]]] = [{SECURITY_SCHEME: []}, {BASIC_SECURITY_SCHEME: []}]


class KeyRequired(Unauthorized):
    """401 with the challenges that suit the client: each surface's error handler answers it in
    its own form (JSON for the API, a page for the web), with these headers."""

    def __init__(self, description: str, challenges: tuple[str, ...]) -> None:
        super().__init__(description)
        self.challenges = challenges

    def get_headers(self, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        headers = super().get_headers(*args, **kwargs)
        return [*headers, *(("WWW-Authenticate", challenge) for challenge in self.challenges)]


def require_key_for_reads() -> None:
    """Before every view: the read scope when REQUIRE_KEY_FOR_READS is set, but on the open
    routes and those that ask for a key themselves."""
    if not current_app.config["REQUIRE_KEY_FOR_READS"] or request.method == "OPTIONS":
        return
    endpoint = request.endpoint
    # No endpoint: no route matched, and the 404 or 405 tells nothing of the index.
    if endpoint is None or endpoint in OPEN_ENDPOINTS or request.blueprint in OWN_KEY_BLUEPRINTS:
        return
    token = _token_of_request()
    key = _verify(token)
    if key is None:
        message = "an API key with the read scope is required: send `Authorization: Bearer <key>`"
        if request.blueprint in PROMPTING_BLUEPRINTS:
            # Read by people: the page's error template says how to give it.
            raise KeyRequired(message, (BASIC_CHALLENGE,))
        challenges: tuple[str, ...] = (BEARER_CHALLENGE,)
        if endpoint in PROMPTING_ENDPOINTS:
            challenges += (BASIC_CHALLENGE,)
        if token:
            message = "the API key is unknown or revoked"
        raise KeyRequired(message, challenges)
    if not key.allows("read"):
        raise Forbidden("the API key lacks the read scope")
    g.flask_httpauth_user = key


def may_read() -> bool:
    """Whether this request may be shown what reads show (an open route's counts): reads are
    open, or it carries a key with the read scope."""
    if not current_app.config["REQUIRE_KEY_FOR_READS"]:
        return True
    key = _verify(_token_of_request())
    if key is None or not key.allows("read"):
        return False
    g.flask_httpauth_user = key
    return True


def _token_of_request() -> str:
    """The key of `Authorization: Bearer <key>`, or the password of Basic auth; else ""."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return token.strip()
    if scheme.lower() == "basic":
        credentials = request.authorization  # werkzeug decodes user:password
        return (credentials.password or "") if credentials is not None else ""
    return ""


def keep_private(response: Response) -> Response:
    """After every view: an answer to a key is for that key's holder only. `private` keeps it
    out of shared caches (which otherwise may store an answer to a request with Authorization
    marked public), `Vary: Authorization` tells the browser's own cache it depends on the key."""
    if g.get("flask_httpauth_user") is None:
        return response
    response.vary.add("Authorization")
    control = response.cache_control
    if not control.no_store:
        control.public = False
        control.private = True
    return response


class ReadKeyDocumented(BasePlugin):
    """The OpenAPI document says which operations take the read key, when they do: all but
    the open ones and those that document a key of their own (writes); /readyz takes one
    optionally (its count)."""

    def __init__(self, required: bool) -> None:
        super().__init__()
        self.required = required

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        rule = kwargs.get("rule")
        if not self.required or rule is None:
            return
        endpoint = rule.endpoint
        blueprint = endpoint.rpartition(".")[0]
        for method, operation in (operations or {}).items():
            if method not in ("get", "put", "post", "patch", "delete"):
                continue
            if endpoint == "ops.readyz":
                operation["security"] = [{}, *READ_SECURITY]
            elif endpoint not in OPEN_ENDPOINTS and blueprint not in OWN_KEY_BLUEPRINTS:
                operation["security"] = READ_SECURITY
                responses = operation.setdefault("responses", {})
                responses.setdefault(401, "UNAUTHORIZED")
                responses.setdefault(403, "FORBIDDEN")


def init_app(app: Flask, api: Any) -> None:
    # For the whole app, web pages included: after the size limits (http.py), before any
    # blueprint's own hooks, so that no 304 answers a client without a key.
    app.before_request(require_key_for_reads)
    app.after_request(keep_private)
    api.spec.components.security_scheme(
        SECURITY_SCHEME,
        {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key made with `searchsvc keys create`.",
        },
    )
    if app.config["REQUIRE_KEY_FOR_READS"]:
        api.spec.components.security_scheme(
            BASIC_SECURITY_SCHEME,
            {
                "type": "http",
                "scheme": "basic",
                "description": "For reads, the same key as the password, any user name (how "
                "a browser gives it).",
            },
        )
