"""The web search page: server-rendered HTML over the same SearchService as the JSON API."""

from __future__ import annotations

from flask import Flask, current_app, render_template
from werkzeug.exceptions import HTTPException

from searchsvc.domain.errors import QueryError, SearchsvcError
from searchsvc.http.status import status_of
from searchsvc.web.views import bp

# Titles of the error pages, by status (the status of each domain error is the API's, one map
# for both: http/status.py); the messages under them are written for people.
_TITLES = {
    400: "That search address is not valid",
    401: "This search needs a key",
    403: "This key cannot read here",
    404: "Not found",
    413: "That search is too long",
    414: "That search is too long",
    500: "Something went wrong",
    503: "Search is not available right now",
}


def init_app(app: Flask) -> None:
    """Register the HTML pages at `/` (the JSON API lives under `/api`)."""
    app.register_blueprint(bp)


@bp.errorhandler(SearchsvcError)
def _domain_error(error: SearchsvcError) -> tuple[str, int]:
    status = status_of(error)
    title = "That query cannot be searched" if isinstance(error, QueryError) else _TITLES[status]
    shown: SearchsvcError | None = error
    if status >= 500:
        # The message names paths and commands for the operator, not for the reader.
        current_app.logger.warning("web page unavailable: %s", error.message)
        shown = None
    return render_template("web/error.html", status=status, title=title, error=shown), status


@bp.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> tuple[str, int, list[tuple[str, str]]]:
    status = error.code or 500
    title = _TITLES.get(status, error.name) if status != 400 else error.name
    # The exception's own headers (a 401's challenge, which makes the browser ask for the key;
    # a 405's Allow), the page's type aside.
    headers = [(k, v) for k, v in error.get_headers() if k.lower() != "content-type"]
    page = render_template("web/error.html", status=status, title=title, error=None)
    return page, status, headers


@bp.errorhandler(Exception)
def _unexpected_error(error: Exception) -> tuple[str, int]:
    # Logged with its traceback for the operator; the person sees a plain apology, no trace.
    current_app.logger.exception("unexpected error on a web page")
    title = "Something went wrong"
    return render_template("web/error.html", status=500, title=title, error=None), 500
