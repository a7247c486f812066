"""Security headers on every response, and HTTP manners that keep answers in the error shape.

Pages may run only the service's own scripts and styles (no inline script or style, so an
injected `<script>` or `onerror=` does nothing even if escaping ever failed), may not be framed
(clickjacking), and say not to guess content types; JSON and feeds get the same with nothing
allowed at all. Referrers leave the site as its origin only: search URLs carry what people
searched for.
"""

from __future__ import annotations

from flask import Flask, Response, request

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Nothing in a JSON answer, a feed or a download may load or run anything.
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def add_security_headers(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    policy = PAGE_POLICY if response.mimetype == "text/html" else DATA_POLICY
    response.headers.setdefault("Content-Security-Policy", policy)
    return response


def answer_options(response: Response) -> Response:
    """OPTIONS: 204 with the Allow header Flask computed, not an empty text/html 200."""
    if request.method == "OPTIONS" and response.status_code == 200 and not response.get_data():
        response.status_code = 204
        response.headers.pop("Content-Type", None)
    return response


def init_app(app: Flask) -> None:
    # `//x` is a path, not a typo to redirect: record ids may start with a slash, and the
    # redirect answered with an HTML body.
    app.url_map.merge_slashes = False
    app.after_request(answer_options)
    app.after_request(add_security_headers)
