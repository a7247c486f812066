"""HTTP manners of the service: size limits, ETag/Cache-Control, CORS and gzip.

ETags are keyed to the index version (plus the package version), so a client or cache
revalidating an unchanged index gets a 304 without the search being run again, and a rebuilt
index changes every ETag at once.

CORS (flask-cors, `init_cors`): the origins of the CORS_ORIGINS setting may read and write the
API from a browser, with an API key in `Authorization` (never with cookies: no
Access-Control-Allow-Credentials); with the setting empty no CORS header is sent at all.
"""

from __future__ import annotations

import re

from flask import Flask, Response, current_app, g, request
from flask_cors import CORS
from isal import isal_zlib
from werkzeug.exceptions import RequestEntityTooLarge

from searchsvc import __version__
from searchsvc.domain.errors import InvalidRequest, SearchsvcError
from searchsvc.extension import get_service

COMPRESSIBLE = frozenset(
    (
        "application/json",
        "application/atom+xml",
        "text/html",
        "text/plain",
        "text/css",
        "text/javascript",
    )
)
# Endpoints of the write API (api/writes.py), which take records in their bodies.
WRITE_ENDPOINTS = "writes."
# What the configured origins may do (init_cors): every method of the API (POST: the search
# with a JSON body and the writes; PUT and DELETE: the writes), with the key in Authorization.
CORS_PATHS = re.compile(r"^/api/")
CORS_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS")
CORS_HEADERS = (
    "Accept",
    "Accept-Language",
    "Authorization",
    "Content-Language",
    "Content-Type",
    "If-None-Match",
)
# The response headers the API sends that a page's script may read (beside those CORS always
# shows: Cache-Control, Content-Language, Content-Length, Content-Type, Expires, Last-Modified,
# Pragma): revalidation, the task of an accepted write, when to retry a refused one (429, 503,
# 507, a refused wait), the wait's refusal itself, the challenge of a 401, and the timings.
CORS_EXPOSED_HEADERS = (
    "ETag",
    "Location",
    "Retry-After",
    "Searchsvc-Wait",
    "Server-Timing",
    "WWW-Authenticate",
)
CORS_MAX_AGE = 3600  # seconds a browser keeps a preflight's answer (Chromium: at most 7200)


def refuse_oversized_requests() -> None:
    """413 for a body over MAX_CONTENT_LENGTH or a query string over MAX_QUERY_STRING_LENGTH."""
    config = current_app.config
    # Writes take records in their bodies; nothing else takes more than a small form.
    writing = (request.endpoint or "").startswith(WRITE_ENDPOINTS)
    limit = config["MAX_WRITE_CONTENT_LENGTH" if writing else "MAX_CONTENT_LENGTH"]
    # Flask cuts a body without Content-Length (chunked) at the same size when it is read.
    request.max_content_length = limit
    # GET views never read the body, so Flask alone would not notice an oversized one.
    if request.content_length and request.content_length > limit:
        raise RequestEntityTooLarge(f"request body over {limit} bytes")
    if request.content_length is None and not writing and "Transfer-Encoding" in request.headers:
        # A chunked body tells its size only by ending. Werkzeug stops reading it at the limit
        # without a word: read that much now (kept for the view), then look for one byte more
        # in the server's stream. Writes read and limit theirs as they go.
        try:
            body = request.get_data(cache=True)
            more = len(body) >= limit and request.environ["wsgi.input"].read(1)
        except Exception as exc:
            # The stream's own errors, or the server's parse errors raised as the body is read
            # (gunicorn's InvalidChunkSize and kin: the app does not import the server to name
            # them). Anything else is a fault of ours.
            server_error = type(exc).__module__.startswith("gunicorn.http")
            if not (server_error or isinstance(exc, OSError | ValueError)):
                raise
            raise InvalidRequest("the request body is not well-formed chunked data") from exc
        if more:
            raise RequestEntityTooLarge(f"request body over {limit} bytes")
    if len(request.query_string) > config["MAX_QUERY_STRING_LENGTH"]:
        raise RequestEntityTooLarge(f"query string over {config['MAX_QUERY_STRING_LENGTH']} bytes")


def answer_if_not_modified() -> Response | None:
    """Before an API view: 304 when the client's ETag matches the live index version."""
    if request.method not in ("GET", "HEAD"):
        return None
    try:
        index_version = get_service().version()
    except SearchsvcError:
        return None  # the view reports the failure in its own words
    g.etag = f"{__version__}-{index_version}"
    if request.if_none_match.contains_weak(g.etag):
        response = Response(status=304)
        _set_caching(response)
        return response
    return None


def _set_caching(response: Response) -> None:
    response.set_etag(g.etag, weak=True)
    max_age = current_app.config["CACHE_MAX_AGE"]
    # Public, as every client gets the same answer; an answer to a read key is made private
    # after the view (auth.keep_private).
    response.headers["Cache-Control"] = (
        f"public, max-age={max_age}" if max_age > 0 else "public, no-cache"
    )


def add_caching_headers(response: Response) -> Response:
    """After an API view: ETag and Cache-Control on successful responses."""
    if response.status_code == 200 and "etag" in g:
        _set_caching(response)
    return response


def init_cors(app: Flask) -> None:
    """CORS on the API's paths for the CORS_ORIGINS setting: none (no header at all), some
    origins (each exact, never a pattern), or `*` (any)."""
    allowed = tuple(origin.rstrip("/") for origin in app.config["CORS_ORIGINS"])
    if not allowed:
        return
    wildcard = "*" in allowed
    # A configured origin is matched whole, whatever characters it holds: flask-cors would take
    # one with `*` or `?` for a regular expression.
    origins = (
        "*" if wildcard else [re.compile(re.escape(o) + r"\Z", re.IGNORECASE) for o in allowed]
    )
    CORS(
        app,
        resources=CORS_PATHS,
        origins=origins,
        methods=CORS_METHODS,
        allow_headers=CORS_HEADERS,
        expose_headers=CORS_EXPOSED_HEADERS,
        max_age=CORS_MAX_AGE,
        # Keys go in Authorization: a page's cookies and Basic credentials are never taken.
        supports_credentials=False,
        # `*` answered as `*`, to every request; listed origins only to a request from one.
        send_wildcard=True,
        always_send=wildcard,
        vary_header=False,  # add_vary_origin says it on every answer, allowed or not
        allow_private_network=False,
        intercept_exceptions=True,  # errors (401, 429 ...) carry the headers too
    )
    if not wildcard:
        app.after_request(add_vary_origin)


def add_vary_origin(response: Response) -> Response:
    """With listed origins, an API answer depends on the request's Origin (the allowed one is
    named, others get no CORS header), so caches must keep one copy per origin."""
    if CORS_PATHS.match(request.path):
        response.vary.add("Origin")
    return response


def compress(response: Response) -> Response:
    """gzip large text responses for clients that accept it."""
    if (
        response.direct_passthrough
        or response.is_streamed
        or response.mimetype not in COMPRESSIBLE
        or "Content-Encoding" in response.headers
        or response.status_code < 200
        or response.status_code in (204, 304)
    ):
        return response
    data = response.get_data()
    if len(data) < current_app.config["GZIP_MIN_SIZE"]:
        return response
    response.vary.add("Accept-Encoding")
    if request.accept_encodings["gzip"] <= 0:
        return response
    # ISA-L's deflate in a gzip container (wbits 31): the same ratio as zlib in much less time,
    # and every search answer large enough is compressed.
    response.set_data(isal_zlib.compress(data, current_app.config["GZIP_LEVEL"], wbits=31))
    response.headers["Content-Encoding"] = "gzip"
    return response


def init_app(app: Flask) -> None:
    """Limits, CORS and gzip for the whole app (conditional GET is per API blueprint)."""
    app.before_request(refuse_oversized_requests)
    # after_request functions run in reverse order: CORS headers first, gzip last.
    app.after_request(compress)
    init_cors(app)
