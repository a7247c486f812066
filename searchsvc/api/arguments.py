"""Marshmallow schemas of the query parameters of each view: validation at the edge.

Each schema checks types and ranges (documented in the OpenAPI document from the same fields);
`SearchArgsSchema` loads straight into the domain's `SearchRequest`.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate
from webargs.fields import DelimitedList

from searchsvc.errors import InvalidRequest
from searchsvc.query import (
    DEFAULT_FACET_SIZE,
    DEFAULT_PER_PAGE,
    FACETS,
    MAX_FACET_SIZE,
    MAX_FILTER_VALUES,
    MAX_PAGE,
    MAX_PER_PAGE,
    MAX_QUERY_LENGTH,
    SEARCH_FIELDS,
    SORTS,
    SearchRequest,
)
from searchsvc.records import MAX_YEAR, MIN_YEAR
from searchsvc.service import DEFAULT_AUTHOR_PER_PAGE, DEFAULT_LIMIT

# SearchRequest attribute -> query parameter, to report domain errors under the parameter name.
_PARAMETER_OF = {"authors": "author", "categories": "category", "years": "year"}


def _year(**kwargs: Any) -> fields.Integer:
    return fields.Integer(validate=validate.Range(MIN_YEAR, MAX_YEAR), **kwargs)


def _page() -> fields.Integer:
    return fields.Integer(
        load_default=1,
        validate=validate.Range(1, MAX_PAGE),
        metadata={"description": "Page number, from 1."},
    )


def _limit(maximum: int, description: str) -> fields.Integer:
    return fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(1, maximum),
        metadata={"description": description},
    )


def _query_text(description: str) -> fields.String:
    return fields.String(
        load_default="",
        validate=validate.Length(max=MAX_QUERY_LENGTH),
        metadata={"description": description},
    )


class SearchArgsSchema(Schema):
    """Query parameters of /api/v1/search; loads into a SearchRequest."""

    q = _query_text(
        'Query text: words (any may match, ranked BM25), "phrases", AND/OR/NOT, wildcards*, '
        "fuzzy~, field:word (title, abstract, author, category, year). Empty: every record."
    )
    authors = fields.List(
        fields.String(validate=validate.Length(min=1, max=MAX_QUERY_LENGTH)),
        data_key="author",
        load_default=(),
        validate=validate.Length(max=MAX_FILTER_VALUES),
        metadata={"description": "Only records by this author (repeatable: any of them)."},
    )
    categories = fields.List(
        fields.String(validate=validate.Length(min=1, max=MAX_QUERY_LENGTH)),
        data_key="category",
        load_default=(),
        validate=validate.Length(max=MAX_FILTER_VALUES),
        metadata={"description": "Only records in this category (repeatable: any of them)."},
    )
    years = fields.List(
        _year(),
        data_key="year",
        load_default=(),
        validate=validate.Length(max=MAX_FILTER_VALUES),
        metadata={"description": "Only records of this year (repeatable: any of them)."},
    )
    # No load_default for these three: absent means SearchRequest's own default (None), and a
    # null default would document them as nullable.
    year_from = _year(metadata={"description": "Earliest year, inclusive."})
    year_to = _year(metadata={"description": "Latest year, inclusive."})
    sort = fields.String(
        validate=validate.OneOf(SORTS),
        metadata={"description": "Order of hits; default relevance with q, newest without."},
    )
    page = _page()
    per_page = fields.Integer(
        load_default=DEFAULT_PER_PAGE,
        validate=validate.Range(1, MAX_PER_PAGE),
        metadata={"description": "Hits per page."},
    )
    facets = DelimitedList(
        fields.String(validate=validate.OneOf(FACETS)),
        load_default=FACETS,
        # As a list: the OpenAPI default of a comma-list parameter is an array.
        metadata={
            "description": "Comma list of facets to count; empty for none.",
            "default": list(FACETS),
        },
    )
    facet_size = fields.Integer(
        load_default=DEFAULT_FACET_SIZE,
        validate=validate.Range(1, MAX_FACET_SIZE),
        metadata={"description": "Values per facet."},
    )
    highlight = fields.Boolean(
        load_default=True, metadata={"description": "Mark matched words in title and abstract."}
    )
    # Not named `fields`: a Schema's `fields` attribute is its own field table.
    search_fields = DelimitedList(
        fields.String(validate=validate.OneOf(SEARCH_FIELDS)),
        data_key="fields",
        load_default=SEARCH_FIELDS,
        validate=validate.Length(min=1),
        metadata={
            "description": "Comma list of the fields q searches.",
            "default": list(SEARCH_FIELDS),
        },
    )

    @post_load
    def make_request(self, data: dict[str, Any], **_: Any) -> SearchRequest:
        data["fields"] = data.pop("search_fields")
        try:
            return SearchRequest(**data)
        except InvalidRequest as exc:
            name = str(exc.details.get("parameter") or "_schema")
            raise ValidationError(exc.message, field_name=_PARAMETER_OF.get(name, name)) from exc


class LimitArgsSchema(Schema):
    """Query parameters of /api/v1/records/<id>/similar."""

    limit = _limit(MAX_PER_PAGE, "Number of similar records.")


class SuggestArgsSchema(Schema):
    """Query parameters of /api/v1/suggest."""

    q = _query_text("The prefix typed so far.")
    limit = _limit(MAX_PER_PAGE, "Number of titles and of author names.")


class FacetArgsSchema(Schema):
    """Query parameters of /api/v1/facets/<facet>."""

    q = _query_text("Only values starting with this prefix (case-insensitive).")
    limit = _limit(MAX_FACET_SIZE, "Number of values.")


class AuthorArgsSchema(Schema):
    """Query parameters of /api/v1/authors/<name>."""

    page = _page()
    per_page = fields.Integer(
        load_default=DEFAULT_AUTHOR_PER_PAGE,
        validate=validate.Range(1, MAX_PER_PAGE),
        metadata={"description": "Records per page."},
    )
