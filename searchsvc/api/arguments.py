"""Marshmallow schemas of the query parameters of each view: validation at the edge.

Each schema checks types and ranges (documented in the OpenAPI document from the same fields).
The search's own parameters are `params.SearchParams`, which the web page and the CLI share.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from searchsvc.domain.query import MAX_FACET_SIZE, MAX_PER_PAGE
from searchsvc.params import SearchBody, SearchParams, page_field, query_text_field
from searchsvc.service import DEFAULT_AUTHOR_PER_PAGE, DEFAULT_LIMIT


def _limit(maximum: int, description: str) -> fields.Integer:
    return fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(1, maximum),
        metadata={"description": description},
    )


# The parameters of /api/v1/search are the one translator's (params.py), shared with the web
# page and the CLI.
SearchArgsSchema = SearchParams
# POST /api/v1/search takes them as a JSON object.
SearchBodySchema = SearchBody

# /api/v1/search.atom takes the search's parameters, less those a feed has no use for (facet
# counts, highlights: ignored like any unknown parameter), and lists the newest records first:
# a reader looks for new records at the top, so another order is refused rather than ignored.
FEED_IGNORED = ("facets", "facet_size", "highlight")
FeedArgsSchema = SearchParams.from_dict(
    {
        "sort": fields.String(
            load_default="newest",
            validate=validate.OneOf(("newest",)),
            metadata={"description": "Order of entries: always newest first."},
        )
    },
    name="FeedParams",
)


class LimitArgsSchema(Schema):
    """Query parameters of /api/v1/records/<id>/similar."""

    limit = _limit(MAX_PER_PAGE, "Number of similar records.")


class SuggestArgsSchema(Schema):
    """Query parameters of /api/v1/suggest."""

    q = query_text_field("The prefix typed so far.")
    limit = _limit(MAX_PER_PAGE, "Number of titles and of author names.")


class FacetArgsSchema(Schema):
    """Query parameters of /api/v1/facets/<facet>."""

    q = query_text_field(
        "Only values with a word starting with this prefix (any case); subjects also by a word "
        "of their name or an alias: distributed finds cs.DC, math.IT finds cs.IT."
    )
    limit = _limit(MAX_FACET_SIZE, "Number of values.")


class AuthorArgsSchema(Schema):
    """Query parameters of /api/v1/authors/<name>."""

    page = page_field()
    per_page = fields.Integer(
        load_default=DEFAULT_AUTHOR_PER_PAGE,
        validate=validate.Range(1, MAX_PER_PAGE),
        metadata={"description": "Records per page."},
    )
