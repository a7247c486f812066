"""The web search page: server-rendered HTML over the same SearchService as the JSON API."""

from __future__ import annotations

from flask import Flask, current_app, render_template
from werkzeug.exceptions import HTTPException

from searchsvc.errors import IndexUnavailable, InvalidRequest, QueryError, RecordNotFound
from searchsvc.web.views import bp

# Domain errors become friendly pages here, once; the messages are written for people.
_ERROR_PAGES = {
    InvalidRequest: (400, "That search address is not valid"),
    QueryError: (400, "That query cannot be searched"),
    RecordNotFound: (404, "Not found"),
    IndexUnavailable: (503, "Search is not available right now"),
}

_HTTP_TITLES = {
    404: "Not found",
    413: "That search is too long",
    414: "That search is too long",
}


def init_app(app: Flask) -> None:
    """Register the HTML pages at `/` (the JSON API lives under `/api`)."""
    app.register_blueprint(bp)


@bp.errorhandler(InvalidRequest)
@bp.errorhandler(QueryError)
@bp.errorhandler(RecordNotFound)
@bp.errorhandler(IndexUnavailable)
def _domain_error(error: Exception) -> tuple[str, int]:
    status, title = next(v for k, v in _ERROR_PAGES.items() if isinstance(error, k))
    shown: Exception | None = error
    if isinstance(error, IndexUnavailable):
        # The message names paths and commands for the operator, not for the reader.
        current_app.logger.warning("web page without an index: %s", error)
        shown = None
    return render_template("web/error.html", status=status, title=title, error=shown), status


@bp.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> tuple[str, int]:
    status = error.code or 500
    title = _HTTP_TITLES.get(status, error.name)
    return render_template("web/error.html", status=status, title=title, error=None), status


@bp.errorhandler(Exception)
def _unexpected_error(error: Exception) -> tuple[str, int]:
    # Logged with its traceback for the operator; the person sees a plain apology, no trace.
    current_app.logger.exception("unexpected error on a web page")
    title = "Something went wrong"
    return render_template("web/error.html", status=500, title=title, error=None), 500
