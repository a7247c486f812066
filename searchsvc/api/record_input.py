"""Records arriving in write requests: the body read (JSON or NDJSON), each record validated.

The record shape is the export format (`Record.to_dict()`, what `searchsvc export` writes), so
an export posts back as it is. A batch is all-or-nothing: it is validated whole before anything
is queued, and one bad record refuses the request with every bad record listed by position
(0-based, in the array or among the NDJSON lines that hold a value), field and reason.
"""

from __future__ import annotations

from typing import Any

import orjson
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from searchsvc.domain.errors import InvalidRequest, PayloadTooLarge
from searchsvc.domain.records import MAX_ID_LENGTH, MAX_YEAR, MIN_YEAR, Record, id_problem

# Per-record limits: generous for real publications (collaboration papers list thousands of
# authors), small enough that one request cannot make a record the index chokes on.
MAX_TITLE_LENGTH = 2_000
MAX_ABSTRACT_LENGTH = 100_000
MAX_AUTHORS = 5_000
MAX_AUTHOR_LENGTH = 1_000  # the arXiv-2025 corpus has a 512-character one
MAX_CATEGORIES = 100
MAX_CATEGORY_LENGTH = 100
MAX_TEXT_LENGTH = 10_000  # source, url, doi, journal_ref, comments
# Bad records listed in one error response at most (the count covers them all).
MAX_ERRORS_REPORTED = 100
NDJSON = "application/x-ndjson"


def _valid_id(value: str) -> None:
    # The domain's one id rule (records.py), so that the 400 names the field.
    problem = id_problem(value)
    if problem:
        raise ValidationError(problem)


def _text(maximum: int, **kwargs: Any) -> fields.String:
    return fields.String(validate=validate.Length(max=maximum), **kwargs)


def _optional(maximum: int) -> fields.String:
    return _text(maximum, load_default=None, allow_none=True)


def _list(maximum_items: int, maximum_length: int, description: str) -> fields.List:
    return fields.List(
        fields.String(validate=validate.Length(max=maximum_length)),
        load_default=list,
        validate=validate.Length(max=maximum_items),
        metadata={"description": description},
    )


class RecordInputSchema(Schema):
    """A record to add or replace: the export format; only `id` and `title` are required."""

    class Meta:
        unknown = RAISE

    id = fields.String(
        required=True,
        validate=_valid_id,
        # What the OpenAPI document can say of the rule (the validator says it all).
        metadata={
            "minLength": 1,
            "maxLength": MAX_ID_LENGTH,
            "description": (
                "The record's identity: a write with this id replaces it. At most "
                f"{MAX_ID_LENGTH} printable characters (no control characters such as CR or "
                "LF), not starting or ending with a space, and not one reserved for the engine "
                "(`__searchsvc_meta__`)."
            ),
        },
    )
    title = fields.String(required=True, validate=validate.Length(min=1, max=MAX_TITLE_LENGTH))
    abstract = _text(MAX_ABSTRACT_LENGTH, load_default="", allow_none=True)
    authors = _list(MAX_AUTHORS, MAX_AUTHOR_LENGTH, "In order of the byline.")
    year = fields.Integer(
        load_default=None, allow_none=True, strict=True, validate=validate.Range(MIN_YEAR, MAX_YEAR)
    )
    categories = _list(MAX_CATEGORIES, MAX_CATEGORY_LENGTH, "The first is the primary category.")
    source = _text(MAX_TEXT_LENGTH, load_default="", allow_none=True)
    url = _optional(MAX_TEXT_LENGTH)
    doi = _optional(MAX_TEXT_LENGTH)
    journal_ref = _optional(MAX_TEXT_LENGTH)
    comments = _optional(MAX_TEXT_LENGTH)


class DeleteInputSchema(Schema):
    """Ids of records to delete."""

    class Meta:
        unknown = RAISE

    # Only bounded, not held to the id rule: an id indexed before the rule (one with a line
    # break) can still be deleted.
    ids = fields.List(
        fields.String(validate=[validate.Length(min=1, max=MAX_ID_LENGTH)]),
        required=True,
        validate=validate.Length(min=1),
    )


_RECORD_SCHEMA = RecordInputSchema()


def parse_body(body: bytes, content_type: str, max_records: int) -> list[Any]:
    """The JSON values of a write body: one object, an array, or NDJSON lines."""
    if content_type == NDJSON:
        values = []
        for number, line in enumerate(body.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                values.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise InvalidRequest(
                    f"line {number} is not JSON: {exc}", line=number, position=len(values)
                ) from None
            _check_count(len(values), max_records)
        return values
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"the body is not JSON: {exc}") from None
    values = value if isinstance(value, list) else [value]
    _check_count(len(values), max_records)
    return values


def _check_count(count: int, max_records: int) -> None:
    if count > max_records:
        raise PayloadTooLarge(
            f"more than {max_records} records in one request: send them in several",
            max_records=max_records,
        )


def records_of(values: list[Any], path_id: str | None = None) -> list[Record]:
    """Validated Records, in order; InvalidRequest listing every bad one."""
    if not values:
        raise InvalidRequest("no records in the request")
    records: list[Record] = []
    errors: list[dict[str, Any]] = []
    for position, value in enumerate(values):
        if path_id is not None and isinstance(value, dict):
            value = {"id": path_id, **value}
            if value["id"] != path_id:
                errors.append(_error(position, "id", f"differs from the path's id {path_id!r}"))
                continue
        record_or_errors = _record(value)
        if isinstance(record_or_errors, Record):
            records.append(record_or_errors)
        else:
            errors.extend(_error(position, f, reason) for f, reason in record_or_errors)
    if errors:
        raise invalid_records(errors, len(values))
    return records


def _record(value: Any) -> Record | list[tuple[str, str]]:
    if not isinstance(value, dict):
        return [("_record", "a record is a JSON object")]
    try:
        data = _RECORD_SCHEMA.load(value)
    except ValidationError as exc:
        return [(name, _first(messages)) for name, messages in _messages(exc).items()]
    data["abstract"] = data["abstract"] or ""
    data["source"] = data["source"] or ""
    try:
        return Record.from_dict(data)
    except ValueError as exc:
        return [("_record", str(exc))]


def _messages(exc: ValidationError) -> dict[str, Any]:
    messages = exc.messages
    return messages if isinstance(messages, dict) else {"_record": messages}


def _first(messages: Any) -> str:
    while isinstance(messages, list | dict) and messages:
        messages = messages[0] if isinstance(messages, list) else next(iter(messages.values()))
    return str(messages)


def _error(position: int, field: str, reason: str) -> dict[str, Any]:
    return {"position": position, "field": field, "reason": reason}


def invalid_records(errors: list[dict[str, Any]], batch_size: int) -> InvalidRequest:
    first = errors[0]
    return InvalidRequest(
        f"record {first['position']}: {first['field']}: {first['reason']} "
        f"({len(errors)} problems in {batch_size} records; nothing was queued)",
        errors=errors[:MAX_ERRORS_REPORTED],
        error_count=len(errors),
    )


def ids_of(value: Any, max_records: int) -> list[str]:
    """The ids of a delete request body ({"ids": [...]}); InvalidRequest when malformed."""
    try:
        data = DeleteInputSchema().load(value if isinstance(value, dict) else {"ids": value})
    except ValidationError as exc:
        name, messages = next(iter(_messages(exc).items()))
        raise InvalidRequest(f"{name}: {_first(messages)}", errors=_messages(exc)) from None
    _check_count(len(data["ids"]), max_records)
    return list(dict.fromkeys(data["ids"]))
