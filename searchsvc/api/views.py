"""The read API under /api/v1: each view turns validated arguments into one service call.

Views answer `jsonify(x.to_dict())`: the domain's `to_dict()` already has exactly the shape the
view's response schema documents (the OpenAPI tests check every generated response against it),
and flask-smorest passes a Response through, where dumping the dict again with marshmallow would
serialise every answer a second time, field by field in Python.
"""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Any, NoReturn

from flask import Request, Response, g, jsonify
from flask_smorest import Blueprint
from marshmallow import Schema
from webargs.flaskparser import FlaskParser
from werkzeug.exceptions import UnsupportedMediaType

from searchsvc.api import arguments, atom, http, schemas
from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import SearchRequest
from searchsvc.extension import get_service


class QueryParser(FlaskParser):
    # A bad parameter is a bad request (400), not webargs' default 422.
    DEFAULT_VALIDATION_STATUS = 400

    def load_querystring(self, req: Request, schema: Schema) -> dict[str, Any]:
        """The parameters present, each as webargs' proxy gives it (a list when repeatable).

        marshmallow asks the proxy for every field of the schema, and each one absent from the
        query string made Werkzeug raise and catch a KeyError: most fields are absent from most
        searches, and an exception costs far more than a lookup. A plain dict of the parameters
        present answers the same without them.
        """
        proxy = self._makeproxy(req.args, schema)
        return {key: proxy[key] for key in req.args}

    def load_json(self, req: Request, schema: Schema) -> Any:
        # webargs reads a body of another type as no parameters at all: a search of every
        # record, where the client meant something else.
        if not req.is_json:
            raise UnsupportedMediaType("send the search as a JSON object (application/json)")
        if not req.get_data(cache=True).strip():
            raise InvalidRequest(
                "the body is empty: send the search as a JSON object ({} for every record)",
                parameter="body",
            )
        try:
            return super().load_json(req, schema)
        except RecursionError:
            # json.loads recurses per level: a small body of nested brackets exhausts the stack.
            raise InvalidRequest("the body is nested too deeply", parameter="body") from None

    def _handle_invalid_json_error(self, error: Exception, req: Request, *_: Any) -> NoReturn:
        # webargs' own error carries its messages in a shape the API's handler does not read.
        raise InvalidRequest(f"the body is not valid JSON: {error}", parameter="body")


class ApiBlueprint(Blueprint):
    ARGUMENTS_PARSER = QueryParser()


blp = ApiBlueprint(
    "api",
    __name__,
    url_prefix="/api/v1",
    description="Search, records, suggestions, facets, authors and index statistics.",
)
blp.before_request(http.answer_if_not_modified)
blp.after_request(http.add_caching_headers)

# Record ids may hold slashes (old arXiv ids such as hep-th/9901001), hence `path`.
RECORD = "/records/<path:record_id>"
FACET = "/facets/<facet>"
# Any name reaches the view, so that an unknown one gets the JSON error naming the facets.
FACET_PARAMETER = {
    "in": "path",
    "name": "facet",
    "required": True,
    "schema": {"type": "string", "enum": list(FACET_NAMES)},
}
ERRORS = {status: HTTPStatus(status).name for status in (404, 409, 413, 415, 503)}


def _responses(*statuses: int):
    """Document the error responses a view can give (all in the one error shape)."""

    def decorate(view):
        for status in statuses:
            view = blp.alt_response(status, response=ERRORS[status])(view)
        return view

    return decorate


# Argument schemas are passed as instances: from a class, webargs would build one per request.
@blp.route("/search")
@blp.arguments(arguments.SearchArgsSchema(), location="query")
@blp.response(200, schemas.SearchResultSchema)
# 409: hybrid or semantic asked of an index without vectors.
@_responses(409, 503)
def search(request: SearchRequest) -> Response:
    """Search records: ranked hits, exact total, facet counts, highlights.

    A query string longer than about 8 KB is refused before it reaches the service (414):
    send a long query as POST /api/v1/search.
    """
    return _search(request)


@blp.route("/search", methods=["POST"], endpoint="search_body")
@blp.arguments(
    arguments.SearchBodySchema(),
    location="json",
    description="The parameters of GET /api/v1/search as a JSON object.",
)
@blp.response(200, schemas.SearchResultSchema)
@_responses(409, 413, 415, 503)
def search_body(request: SearchRequest) -> Response:
    """Search with the parameters in a JSON body, for a query too long for a URL.

    The body is an object of the parameters of GET /api/v1/search, with the facet filters,
    `facets` and `fields` as lists: `{"q": "...", "author": ["A", "B"], "facets": []}`. `q`
    takes up to 10,000 characters, the body up to 64 KiB; an unknown name is a 400. The
    answer is that of GET, never cached (no ETag).
    """
    return _search(request)


def _search(request: SearchRequest) -> Response:
    started = time.perf_counter()
    result = get_service().search_request(request)
    # Reported in the Server-Timing header: engine time apart from the HTTP layer's own.
    g.search_ms = (time.perf_counter() - started) * 1000
    return jsonify(result.to_dict())


@blp.route("/search.atom")
@blp.arguments(arguments.FeedArgsSchema(exclude=arguments.FEED_IGNORED), location="query")
@blp.response(
    200,
    {"type": "string"},
    content_type=atom.MEDIA_TYPE,
    description="An Atom 1.0 feed: one entry per hit, newest first.",
)
@_responses(409, 503)
def search_feed(request: SearchRequest) -> Response:
    """A search as an Atom feed, newest records first: subscribe to follow a topic.

    The parameters and their errors are those of /search (the same JSON 400), except that
    `sort` can only be `newest`, any other order being a 400, and that `facets`, `facet_size`
    and `highlight` are ignored. Each entry is a hit: `urn:searchsvc:record:<id>` as id (the
    record's id percent-encoded), its record page as link, authors, the abstract as plain-text
    summary, categories, and January 1st of its year as date. The total is in
    `opensearch:totalResults`. Links start with the service's configured public URL, or are
    relative to the feed's own.
    """
    started = time.perf_counter()
    result = get_service().search_request(request.evolve(facets=(), highlight=False))
    g.search_ms = (time.perf_counter() - started) * 1000
    return atom.feed_response(result, request)


@blp.route(RECORD)
@blp.response(200, schemas.RecordSchema)
@_responses(404, 503)
def record(record_id: str) -> Response:
    """One record by id."""
    return jsonify(get_service().get(record_id).to_dict())


@blp.route(f"{RECORD}/similar")
@blp.arguments(arguments.LimitArgsSchema(), location="query")
@blp.response(200, schemas.SimilarSchema)
@_responses(404, 503)
def similar(args: dict[str, Any], record_id: str) -> Response:
    """Records similar to one record (more like this)."""
    hits = get_service().similar(record_id, args["limit"])
    return jsonify({"id": record_id, "hits": [hit.to_dict() for hit in hits]})


@blp.route("/suggest")
@blp.arguments(arguments.SuggestArgsSchema(), location="query")
@blp.response(200, schemas.SuggestionsSchema)
@_responses(503)
def suggest(args: dict[str, Any]) -> Response:
    """Autocomplete: titles and author names for a prefix."""
    return jsonify(get_service().suggest(args["q"], args["limit"]).to_dict())


@blp.route(FACET, parameters=[FACET_PARAMETER])
@blp.arguments(arguments.FacetArgsSchema(), location="query")
@blp.response(200, schemas.FacetValuesSchema)
@_responses(404, 503)
def facet_values(args: dict[str, Any], facet: str) -> Response:
    """The most frequent values of a facet, with counts; 404 names the facets there are."""
    values = get_service().facet_values(facet, args["q"], args["limit"])
    return jsonify({"facet": facet, "prefix": args["q"], "values": [v.to_dict() for v in values]})


@blp.route("/authors/<path:name>")
@blp.arguments(arguments.AuthorArgsSchema(), location="query")
@blp.response(200, schemas.AuthorViewSchema)
@_responses(404, 503)
def author(args: dict[str, Any], name: str) -> Response:
    """An author's records (newest first), counts per year and category, coauthors."""
    return jsonify(get_service().author(name, args["page"], args["per_page"]).to_dict())


@blp.route("/stats")
@blp.response(200, schemas.StatsSchema)
@_responses(503)
def stats() -> Response:
    """Document count, facet cardinalities, index build time and version."""
    return jsonify(get_service().stats().to_dict())
