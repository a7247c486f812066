"""Search parameters -> SearchRequest: the one translator the API, the web page and the CLI use.

`SearchParams` is a marshmallow schema of the query-string parameters of a search (checked types
and ranges, documented in the OpenAPI document from the same fields); it loads straight into the
domain's `SearchRequest`. The API hands it to flask-smorest; the web page and the CLI call
`search_request_from(params)` with a query-string mapping. A facet's filter parameter is named
after the facet (facets.py) and repeats: `author=A&author=B`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate
from webargs.fields import DelimitedList

from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.facets import CROSSLISTS, FACET_NAMES, FACETS, Facet
from searchsvc.domain.modes import MEANING_FLOOR, MODES, SEMANTIC_DEPTH
from searchsvc.domain.query import (
    DEFAULT_FACET_SIZE,
    DEFAULT_PER_PAGE,
    MAX_FACET_SIZE,
    MAX_FILTER_VALUES,
    MAX_PAGE,
    MAX_PER_PAGE,
    MAX_QUERY_LENGTH,
    MAX_RESULT_WINDOW,
    SEARCH_FIELDS,
    SORTS,
    SearchRequest,
)
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR

# A query-string mapping: Werkzeug's MultiDict, or a plain dict of a string or a list of them.
QueryParams = Mapping[str, Any]


def year_field(**kwargs: Any) -> fields.Integer:
    return fields.Integer(validate=validate.Range(MIN_YEAR, MAX_YEAR), **kwargs)


def page_field() -> fields.Integer:
    return fields.Integer(
        load_default=1,
        validate=validate.Range(1, MAX_PAGE),
        metadata={
            "description": "Page number, from 1; page x per_page is at most "
            f"{MAX_RESULT_WINDOW:,} (a search shows its first {MAX_RESULT_WINDOW:,} results)."
        },
    )


def query_text_field(description: str) -> fields.String:
    return fields.String(
        load_default="",
        validate=validate.Length(max=MAX_QUERY_LENGTH),
        metadata={"description": description},
    )


def _filter_field(facet: Facet) -> fields.List:
    value: fields.Field
    if facet.value_type is int:
        value = year_field()
    else:
        value = fields.String(validate=validate.Length(min=1, max=MAX_QUERY_LENGTH))
    return fields.List(
        value,
        data_key=facet.name,
        load_default=(),
        validate=validate.Length(max=MAX_FILTER_VALUES),
        metadata={"description": f"{facet.filter_help} (repeatable: any of them)."},
    )


class _SearchParamsSchema(Schema):
    """The parameters every search takes besides the facet filters (added from FACETS)."""

    q = query_text_field(
        "Query text: words (any may match; more, and rarer, matched words rank higher), "
        '"phrases", AND/OR/NOT, (groups), wildcards*, fuzzy~, field:word (title, abstract, '
        "author, category, subject, year; category:cs is every cs.* record). Empty: every "
        "record. A malformed query is a 400 whose details give the position of the problem."
    )
    # No load_default for these three: absent means SearchRequest's own default (None), and a
    # null default would document them as nullable.
    year_from = year_field(
        metadata={"description": "Earliest year, inclusive (after year_to: no records match)."}
    )
    year_to = year_field(metadata={"description": "Latest year, inclusive."})
    sort = fields.String(
        validate=validate.OneOf(SORTS),
        metadata={"description": "Order of hits; default relevance with q, newest without."},
    )
    page = page_field()
    per_page = fields.Integer(
        load_default=DEFAULT_PER_PAGE,
        validate=validate.Range(1, MAX_PER_PAGE),
        metadata={"description": "Hits per page."},
    )
    facets = DelimitedList(
        fields.String(validate=validate.OneOf(FACET_NAMES)),
        load_default=FACET_NAMES,
        # As a list: the OpenAPI default of a comma-list parameter is an array.
        metadata={
            "description": "Comma list of facets to count; empty for none.",
            "default": list(FACET_NAMES),
        },
    )
    facet_size = fields.Integer(
        load_default=DEFAULT_FACET_SIZE,
        validate=validate.Range(1, MAX_FACET_SIZE),
        metadata={
            "description": "Values per facet: the most frequent, ties by value. A selected "
            "value they leave out is listed after them (beyond this number), with its count."
        },
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

    crosslists = fields.String(
        load_default="include",
        validate=validate.OneOf(CROSSLISTS),
        metadata={
            "description": "exclude: the category and subject filters and counts see each "
            "record's primary category only (its first); include: every category."
        },
    )

    mode = fields.String(
        validate=validate.OneOf(MODES),
        metadata={
            "description": "lexical: records with the query's words, by how well they match. "
            f"semantic: up to {SEMANTIC_DEPTH} records nearest the query's meaning "
            "(embeddings) that pass the filters, each at a cosine of at least the floor "
            f"({MEANING_FLOOR}). hybrid: the records with the words, plus those; the best of "
            "each ranked together; total and facet counts are over that answer. Meaning adds "
            "records only to plain words: a query using the query language (fields, phrases, "
            "operators, ranges, wildcards, fuzzy words, boosts) selects exactly its lexical "
            "matches in every mode, which meaning ranks. Default: hybrid where the index has "
            "vectors, else lexical (the result's `mode` says which ran). Filters are exact in "
            "every mode."
        },
    )

    @post_load
    def make_request(self, data: dict[str, Any], **_: Any) -> SearchRequest:
        data["fields"] = data.pop("search_fields")
        data["filters"] = {name: data.pop(name) for name in FACET_NAMES}
        try:
            return SearchRequest(**data)
        except InvalidRequest as exc:
            name = str(exc.details.get("parameter") or "_schema")
            raise ValidationError(exc.message, field_name=name) from exc


SearchParams = _SearchParamsSchema.from_dict(
    {facet.name: _filter_field(facet) for facet in FACETS}, name="SearchParams"
)
SearchParams.__doc__ = "Query parameters of a search; loads into a SearchRequest."


def _body_filter_field(facet: Facet) -> fields.List:
    field = _filter_field(facet)
    field.metadata = {"description": f"{facet.filter_help} (a list: any of them)."}
    return field


# The same parameters as a JSON object (POST /api/v1/search), for a query too long for a URL:
# the comma lists are JSON lists, and a name the search does not take is an error (in a query
# string it is ignored, as links carry other parameters).
SearchBody = SearchParams.from_dict(
    {
        "facets": fields.List(
            fields.String(validate=validate.OneOf(FACET_NAMES)),
            load_default=FACET_NAMES,
            metadata={"description": "Facets to count; [] for none.", "default": list(FACET_NAMES)},
        ),
        "search_fields": fields.List(
            fields.String(validate=validate.OneOf(SEARCH_FIELDS)),
            data_key="fields",
            load_default=SEARCH_FIELDS,
            validate=validate.Length(min=1),
            metadata={"description": "The fields q searches.", "default": list(SEARCH_FIELDS)},
        ),
        **{facet.name: _body_filter_field(facet) for facet in FACETS},
    },
    name="SearchBody",
)
SearchBody.__doc__ = "A search as a JSON object; loads into a SearchRequest."

# Built once: marshmallow compiles a schema's fields on construction.
_SCHEMA = SearchParams()


def search_request_from(
    params: QueryParams,
    *,
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    blank_is_absent: bool = False,
) -> SearchRequest:
    """The SearchRequest of query-string parameters; InvalidRequest names the bad parameter.

    `defaults` fill parameters that are absent, `overrides` replace whatever was given (the
    web page's fixed page size); with `blank_is_absent`, values are stripped and empty ones
    (`year_from=` from a plain GET form) count as absent. A malformed `q` raises QueryError
    with its position.
    """
    data: dict[str, Any] = dict(defaults or {})
    for name, field in _SCHEMA.fields.items():
        key = field.data_key or name
        values = _values(params, key)
        if blank_is_absent:
            # The query text keeps its spaces: error positions point into it as typed.
            values = [_stripped(v) if key != "q" else _blank_to_empty(v) for v in values]
            values = [v for v in values if v != ""]
        if values:
            # Repeatable parameters keep every value; others (comma lists included) take the
            # first, as webargs does.
            repeatable = isinstance(field, fields.List) and not isinstance(field, DelimitedList)
            data[key] = values if repeatable else values[0]
    data.update(overrides or {})
    try:
        return _SCHEMA.load(data)
    except ValidationError as exc:
        errors = exc.normalized_messages()
        name, messages = next(iter(errors.items()))
        raise InvalidRequest(
            f"invalid parameter {name}: {first_message(messages)}", parameter=name, errors=errors
        ) from None


def check_year_order(request: SearchRequest) -> SearchRequest:
    """`request`, or InvalidRequest when year_from is after year_to: for the surfaces people type
    into (the web page, the CLI), where a reversed range is a slip. The API answers it with no
    records, as its OpenAPI document, which cannot relate two parameters, says."""
    low, high = request.year_from, request.year_to
    if low is not None and high is not None and low > high:
        raise InvalidRequest(
            "invalid parameter year_from: year_from is after year_to", parameter="year_from"
        )
    return request


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _blank_to_empty(value: Any) -> Any:
    return "" if isinstance(value, str) and not value.strip() else value


def _values(params: QueryParams, key: str) -> list[Any]:
    getlist = getattr(params, "getlist", None)
    if getlist is not None:
        return list(getlist(key))
    value = params.get(key)
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def first_message(messages: Any) -> str:
    """The first message of marshmallow's nested error messages."""
    while isinstance(messages, dict | list) and messages:
        messages = next(iter(messages.values())) if isinstance(messages, dict) else messages[0]
    return str(messages)
