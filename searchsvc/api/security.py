"""Security headers on every response of the app (security_headers.py says which and why), and
HTTP manners that keep answers in the error shape."""

from __future__ import annotations

from flask import Flask, Response, request

from searchsvc.http.headers import DATA_POLICY, HEADERS, PAGE_POLICY


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
    # `//x` is not redirected to `/x` (Werkzeug's default, answered with an HTML body): the
    # path is answered as it came, a JSON 404 where nothing is there.
    app.url_map.merge_slashes = False
    app.after_request(answer_options)
    app.after_request(add_security_headers)
