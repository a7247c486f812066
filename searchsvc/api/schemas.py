"""Marshmallow schemas of the responses: one per view, plus the one error shape.

They dump the `to_dict()` shapes of `searchsvc.domain.query`; the OpenAPI document is generated from
them, so it describes exactly what the views return.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from searchsvc.domain.facets import CROSSLISTS, FACET_NAMES, FACETS, Facet
from searchsvc.domain.modes import MODES
from searchsvc.domain.query import SORTS


def _strings(**kwargs: Any) -> fields.List:
    return fields.List(fields.String(), required=True, **kwargs)


class RecordSchema(Schema):
    """A publication record."""

    id = fields.String(required=True)
    title = fields.String(required=True)
    abstract = fields.String(required=True)
    authors = _strings()
    year = fields.Integer(required=True, allow_none=True)
    categories = _strings(metadata={"description": "The first is the primary category."})
    source = fields.String(required=True)
    url = fields.String(required=True, allow_none=True)
    doi = fields.String(required=True, allow_none=True)
    journal_ref = fields.String(required=True, allow_none=True)
    comments = fields.String(required=True, allow_none=True)


class HitSchema(RecordSchema):
    """A matching record with its score and highlighted fields (HTML with <mark>)."""

    score = fields.Float(required=True, allow_none=True)
    highlights = fields.Dict(keys=fields.String(), values=fields.String(), required=True)


class FacetValueSchema(Schema):
    value = fields.String(required=True, metadata={"description": "What a filter selects."})
    count = fields.Integer(
        required=True,
        metadata={
            "description": "Records with the value; in a search, of the matches with every "
            "filter but the facet's own (0 for a selected value that none has)."
        },
    )
    selected = fields.Boolean(
        required=True,
        metadata={
            "description": "Whether the search selects the value. Every selected value is "
            "listed: one the top facet_size leaves out follows them, most records first."
        },
    )
    label = fields.String(
        required=True,
        metadata={
            "description": "The value as people read it: a subject's name from arXiv's "
            'taxonomy (cs.DC: "Distributed, Parallel, and Cluster Computing"); else the value.'
        },
    )
    parent = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "What the value belongs to: a category's archive (cs), an "
            "archive's group (grp_cs); null for other values and unknown categories."
        },
    )


def _facet_values(**kwargs: Any) -> fields.List:
    return fields.List(fields.Nested(FacetValueSchema), required=True, **kwargs)


def _facet_table(**kwargs: Any) -> fields.Dict:
    return fields.Dict(keys=fields.String(), values=_facet_values(), required=True, **kwargs)


class _UnderstoodQueryBase(Schema):
    """The search request as the service understood it (defaults filled in)."""

    q = fields.String(required=True)
    year_from = fields.Integer(required=True, allow_none=True)
    year_to = fields.Integer(required=True, allow_none=True)
    sort = fields.String(required=True, validate=validate.OneOf(SORTS))
    page = fields.Integer(required=True)
    per_page = fields.Integer(required=True)
    facets = _strings()
    facet_size = fields.Integer(required=True)
    highlight = fields.Boolean(required=True)
    search_fields = _strings(data_key="fields", attribute="fields")
    crosslists = fields.String(required=True, validate=validate.OneOf(CROSSLISTS))
    mode = fields.String(
        required=True,
        allow_none=True,
        validate=validate.OneOf(MODES),
        metadata={"description": "The mode the search ran in (the result's `mode`)."},
    )


def _selection(facet: Facet) -> fields.List:
    value = fields.Integer() if facet.value_type is int else fields.String()
    return fields.List(value, required=True, metadata={"description": f"{facet.label} filter."})


# One list of selected values per facet (facets.py), named after it.
UnderstoodQuerySchema = _UnderstoodQueryBase.from_dict(
    {facet.name: _selection(facet) for facet in FACETS}, name="UnderstoodQuerySchema"
)


class SearchResultSchema(Schema):
    query = fields.Nested(UnderstoodQuerySchema, required=True)
    total = fields.Integer(
        required=True,
        metadata={
            "description": "Exact number of records in the answer: matched_by_words + "
            "added_by_meaning."
        },
    )
    matched_by_words = fields.Integer(
        required=True,
        metadata={
            "description": "Of total, the records that match q (its words, or its "
            "query-language expression) and the filters."
        },
    )
    added_by_meaning = fields.Integer(
        required=True,
        metadata={
            "description": "Of total, the records related by meaning only (without the query's "
            "words): hybrid and semantic searches of plain words add the records nearest "
            "the query at a cosine of at least the floor (modes.MEANING_FLOOR); 0 otherwise."
        },
    )
    meaning_adds = fields.Boolean(
        required=True,
        metadata={
            "description": "Whether meaning could add records to this search: true for a "
            "hybrid or semantic search of plain words. A query using the query language "
            "(fields, phrases, AND/OR/NOT, parentheses, ranges, wildcards, fuzzy words, "
            "boosts) selects exactly its lexical matches in every mode: meaning only ranks "
            "them."
        },
    )
    page = fields.Integer(required=True)
    per_page = fields.Integer(required=True)
    pages = fields.Integer(required=True)
    took_ms = fields.Float(required=True)
    hits = fields.List(fields.Nested(HitSchema), required=True)
    facets = _facet_table(
        metadata={
            "description": "Counts over all matches, per facet: the top facet_size values (most "
            "records first, ties by value), then the selected values they leave out, counted "
            "the same way (a selected subject of another level, such as category=cs, counts "
            "the records under it)."
        }
    )
    suggestion = fields.String(
        required=True, allow_none=True, metadata={"description": "A spelling correction of q."}
    )
    mode = fields.String(
        required=True,
        validate=validate.OneOf(MODES),
        metadata={
            "description": "The mode that ranked the hits: the one asked for, or the default "
            "(hybrid where the index has vectors and q has words to mean, else lexical). A q "
            "with nothing to mean (empty, `*`, or only fields such as category:, author: or "
            "year:, or NOT parts) is lexical in every mode."
        },
    )


class SimilarSchema(Schema):
    id = fields.String(required=True, metadata={"description": "The record compared against."})
    hits = fields.List(fields.Nested(HitSchema), required=True)


class SuggestionsSchema(Schema):
    prefix = fields.String(required=True)
    titles = _strings()
    authors = _strings()


class FacetValuesSchema(Schema):
    facet = fields.String(required=True, validate=validate.OneOf(FACET_NAMES))
    prefix = fields.String(required=True)
    values = _facet_values()


class AuthorViewSchema(Schema):
    name = fields.String(required=True)
    total = fields.Integer(required=True)
    page = fields.Integer(required=True)
    per_page = fields.Integer(required=True)
    pages = fields.Integer(required=True)
    records = fields.List(fields.Nested(RecordSchema), required=True)
    years = _facet_values()
    categories = _facet_values()
    coauthors = _facet_values()


class StatsSchema(Schema):
    documents = fields.Integer(required=True)
    facets = _facet_table(metadata={"description": "The most frequent values of each facet."})
    cardinalities = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    built_at = fields.String(
        required=True, allow_none=True, metadata={"description": "ISO 8601 build time."}
    )
    version = fields.String(required=True)
    size_bytes = fields.Integer(required=True)


class HealthSchema(Schema):
    status = fields.String(required=True)


class ReadinessSchema(Schema):
    status = fields.String(
        required=True,
        metadata={"description": "ready; degraded when the previous index answers (see warning)"},
    )
    documents = fields.Integer(
        metadata={
            "description": "Records in the index; when reads take a key, only to a key with "
            "the read scope."
        }
    )
    version = fields.String(required=True)
    warning = fields.String(
        metadata={
            "description": "Only when degraded: the live index failed verification and the "
            "previous one answers reads."
        }
    )


class ErrorBodySchema(Schema):
    status = fields.Integer(required=True, metadata={"description": "The HTTP status."})
    code = fields.String(
        required=True, metadata={"description": "invalid_parameter, invalid_query, not_found…"}
    )
    message = fields.String(required=True)
    details = fields.Dict(required=True, metadata={"description": "What and where, by code."})


class ErrorSchema(Schema):
    """The one shape of every error response."""

    error = fields.Nested(ErrorBodySchema, required=True)
