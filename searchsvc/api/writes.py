"""The write API: records in, replaced and deleted through the durable task queue.

A write is validated whole, queued on disk and answered `202 Accepted` with its task; the
writer (tasks/writer.py) applies it within moments, and `GET /api/v1/tasks/<id>` tells how it
went (`?wait=` seconds to wait for it). Nothing here touches the engine: a request never waits
for the index's write lock.

The queue admits a key's writes within its bounds (config: WRITE_RATE_LIMIT, QUEUE_MAX_BYTES,
QUEUE_MAX_BYTES_PER_KEY, MIN_FREE_DISK_BYTES), checked in the queue's file so that every worker
counts the same; the refusals are domain errors with a Retry-After (api/errors.py). A key sees
its own tasks only (admin keys all of them): a task's error may quote its records.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from flask import Response, current_app, jsonify, request, url_for
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate
from werkzeug.exceptions import UnsupportedMediaType

from searchsvc.api.auth import SECURED, auth
from searchsvc.api.record_input import (
    NDJSON,
    DeleteInputSchema,
    RecordInputSchema,
    ids_of,
    parse_body,
    records_of,
)
from searchsvc.config import write_rates
from searchsvc.domain.errors import InvalidRequest
from searchsvc.extension import get_queue
from searchsvc.tasks import KINDS, MAX_TASK_ID, MAX_WAIT_SECONDS, STATUSES, Task, WriteLimits

blp = Blueprint(
    "writes",
    __name__,
    url_prefix="/api/v1",
    description="Writes (queued as tasks, applied in order by one writer) and their tasks.",
)
RECORD = "/records/<path:record_id>"
MAX_TASKS_LISTED = 100
ACCEPTED_TYPES = ("application/json", NDJSON)
# A wait beyond MAX_WAITS_PER_KEY is answered at once, with the task as it is, this header
# saying so, and Retry-After: a client polling again sees the task, and is told when to.
WAIT_HEADER = "Searchsvc-Wait"
WAIT_REFUSED_RETRY_SECONDS = 1
_LIMITS = "searchsvc.write_limits"


class TaskErrorSchema(Schema):
    code = fields.String(required=True)
    message = fields.String(required=True)
    details = fields.Dict(
        required=True, metadata={"description": "`errors`: per record, position and reason."}
    )


class TaskSchema(Schema):
    """A write task: what it carries and what became of it."""

    id = fields.Integer(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    status = fields.String(required=True, validate=validate.OneOf(STATUSES))
    size = fields.Integer(required=True, metadata={"description": "Records or ids it carries."})
    origin = fields.String(required=True, metadata={"description": "api or cli."})
    enqueued_at = fields.String(required=True)
    started_at = fields.String(required=True, allow_none=True)
    finished_at = fields.String(required=True, allow_none=True)
    key_id = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "Id of the API key that made it (null: the command line); a key "
            "sees only its own tasks, an admin key all."
        },
    )
    result = fields.Dict(
        required=True,
        allow_none=True,
        metadata={"description": "When succeeded: the engine commit (batch) it was part of."},
    )
    error = fields.Nested(
        TaskErrorSchema,
        required=True,
        allow_none=True,
        metadata={"description": "When failed: why, with per-record errors in details."},
    )


class TaskListSchema(Schema):
    tasks = fields.List(fields.Nested(TaskSchema), required=True)
    next_before = fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "Pass as `before` for the next (older) page; null at the end."},
    )


class TaskArgsSchema(Schema):
    wait = fields.Float(
        load_default=0.0,
        validate=validate.Range(0, MAX_WAIT_SECONDS),
        metadata={
            "description": "Seconds to wait for the task to finish (at most "
            f"{MAX_WAIT_SECONDS:g}). A key has a few waits at once "
            "(SEARCHSVC_MAX_WAITS_PER_KEY); beyond them the task "
            f"is answered at once, with `{WAIT_HEADER}: refused` and Retry-After."
        },
    )


class TaskListArgsSchema(Schema):
    status = fields.String(validate=validate.OneOf(STATUSES), load_default=None)
    limit = fields.Integer(load_default=20, validate=validate.Range(1, MAX_TASKS_LISTED))
    before = fields.Integer(load_default=None, validate=validate.Range(1, MAX_TASK_ID))


_RECORD_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "oneOf": [
                    {"$ref": "#/components/schemas/RecordInput"},
                    {"type": "array", "items": {"$ref": "#/components/schemas/RecordInput"}},
                ]
            }
        },
        NDJSON: {
            "schema": {
                "type": "string",
                "description": "One RecordInput JSON object per line.",
            }
        },
    },
}
_ONE_RECORD_BODY = {
    "required": True,
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RecordInput"}}},
}
_DELETE_BODY = {
    "required": True,
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeleteInput"}}},
}
# 429: the key's rate or backlog; 503: the whole queue's backlog (or the queue unusable); 507:
# the queue's disk below its free-space floor. The last three carry Retry-After.
_WRITE_ERRORS = (400, 401, 403, 413, 415, 429, 503, 507)
_READ_ERRORS = (400, 401, 403, 404, 503)


def _documented(*statuses: int, body: dict[str, Any] | None = None):
    """The key it takes, its body, and the error responses it may give (one error shape)."""

    def decorate(view):
        view = blp.doc(security=SECURED)(view)
        if body is not None:
            view = blp.doc(requestBody=body)(view)
        for status in statuses:
            view = blp.alt_response(status, response=HTTPStatus(status).name)(view)
        return view

    return decorate


def _writing(view: Callable[..., Response]) -> Callable[..., Response]:
    """A write view: the write scope, then the queue's bounds checked before the body is read
    (checked again, and the write counted, when it is enqueued: one budget for every write
    endpoint of a key, and for every worker)."""

    @functools.wraps(view)
    def admitted(*args: Any, **kwargs: Any) -> Response:
        get_queue().admit(_key_id(), _limits(), request.content_length or 0)
        return view(*args, **kwargs)

    return auth.login_required(role="write")(admitted)


def _key_id() -> str:
    """The id of the request's API key (login_required has checked it)."""
    return str(auth.current_user().id)


def _visible_to() -> str | None:
    """Whose tasks the request's key sees: its own, or all (None) for an admin key."""
    key = auth.current_user()
    return None if "admin" in key.scopes else str(key.id)


def _limits() -> WriteLimits:
    """The app's bounds of the queue, made once from its settings (checked at start-up)."""
    limits = current_app.extensions.get(_LIMITS)
    if limits is None:
        config = current_app.config
        limits = WriteLimits(
            max_bytes=config["QUEUE_MAX_BYTES"],
            max_bytes_per_key=config["QUEUE_MAX_BYTES_PER_KEY"],
            min_free_disk_bytes=config["MIN_FREE_DISK_BYTES"],
            rates=write_rates(config["WRITE_RATE_LIMIT"]),
        )
        current_app.extensions[_LIMITS] = limits
    return limits


def _accepted(task: Task) -> Response:
    response = jsonify(task.to_dict())
    response.status_code = 202
    response.headers["Location"] = url_for("writes.task", task_id=task.id)
    response.headers["Cache-Control"] = "no-store"
    return response


def _body() -> tuple[bytes, str]:
    content_type = request.mimetype
    if content_type not in ACCEPTED_TYPES:
        raise UnsupportedMediaType(
            f"send records as {' or '.join(ACCEPTED_TYPES)}, not {content_type or 'no type'}"
        )
    # Bounded by MAX_WRITE_CONTENT_LENGTH (http.refuse_oversized_requests), chunked or not.
    return request.get_data(cache=False), content_type


def _max_records() -> int:
    return current_app.config["MAX_BATCH_RECORDS"]


@blp.route("/records", methods=["POST"])
@_documented(*_WRITE_ERRORS, body=_RECORD_BODY)
@blp.response(202, TaskSchema)
@_writing
def add_records() -> Response:
    """Add or replace records by id: one record, a JSON array, or NDJSON lines (bulk).

    The batch is all-or-nothing: every record is validated before any is queued, and a bad one
    refuses the request (400) with each bad record's position, field and reason.
    """
    body, content_type = _body()
    records = records_of(parse_body(body, content_type, _max_records()))
    return _accepted(get_queue().enqueue_upserts(records, owner=_key_id(), limits=_limits()))


@blp.route(RECORD, methods=["PUT"])
@_documented(*_WRITE_ERRORS, body=_ONE_RECORD_BODY)
@blp.response(202, TaskSchema)
@_writing
def put_record(record_id: str) -> Response:
    """Add or replace the record with this id (its body's `id` may be left out)."""
    body, content_type = _body()
    values = parse_body(body, content_type, 1)
    if len(values) != 1 or not isinstance(values[0], dict):
        raise InvalidRequest("PUT takes one record, a JSON object")
    records = records_of(values, path_id=record_id)
    return _accepted(get_queue().enqueue_upserts(records, owner=_key_id(), limits=_limits()))


@blp.route(RECORD, methods=["DELETE"])
@_documented(400, 401, 403, 429, 503, 507)
@blp.response(202, TaskSchema)
@_writing
def delete_record(record_id: str) -> Response:
    """Delete the record with this id (a task that deletes nothing when there is none)."""
    ids = ids_of([record_id], 1)
    return _accepted(get_queue().enqueue_deletes(ids, owner=_key_id(), limits=_limits()))


@blp.route("/records/delete", methods=["POST"])
@_documented(*_WRITE_ERRORS, body=_DELETE_BODY)
@blp.response(202, TaskSchema)
@_writing
def delete_records() -> Response:
    """Delete records by id: `{"ids": [...]}`."""
    body, content_type = _body()
    if content_type != "application/json":
        raise InvalidRequest('send the ids as JSON: {"ids": [...]}')
    values = parse_body(body, content_type, 1)
    ids = ids_of(values[0] if len(values) == 1 else values, _max_records())
    return _accepted(get_queue().enqueue_deletes(ids, owner=_key_id(), limits=_limits()))


@blp.route("/tasks/<int:task_id>")
@_documented(*_READ_ERRORS)
# The key before the query string: a request without one is a 401, whatever it asks.
@auth.login_required(role="write")
@blp.arguments(TaskArgsSchema(), location="query")
@blp.response(200, TaskSchema)
def task(args: dict[str, Any], task_id: int) -> Response:
    """A write task: enqueued, processing, succeeded or failed (`wait` for it to finish).

    A key sees its own tasks (another key's is not found); an admin key sees all."""
    queue = get_queue()
    visible_to = _visible_to()
    found = queue.get(task_id, visible_to)
    refused = False
    if args["wait"] and not found.done:
        # A waiting request holds a sync worker: a key gets a few at once, across workers.
        with queue.wait_slot(_key_id(), current_app.config["MAX_WAITS_PER_KEY"]) as slot:
            if slot:
                found = queue.wait(task_id, args["wait"], visible_to)
            else:
                refused = True
    response = jsonify(found.to_dict())
    response.headers["Cache-Control"] = "no-store"
    if refused:
        response.headers[WAIT_HEADER] = "refused"
        response.headers["Retry-After"] = str(WAIT_REFUSED_RETRY_SECONDS)
    return response


@blp.route("/tasks")
@_documented(400, 401, 403, 503)
# The key before the query string: a request without one is a 401, whatever it asks.
@auth.login_required(role="write")
@blp.arguments(TaskListArgsSchema(), location="query")
@blp.response(200, TaskListSchema)
def tasks(args: dict[str, Any]) -> Response:
    """Write tasks, newest first, of one status or all: the key's own (an admin key's: all)."""
    found = get_queue().tasks(args["status"], args["limit"] + 1, args["before"], _visible_to())
    page = found[: args["limit"]]
    next_before = page[-1].id if len(found) > args["limit"] else None
    response = jsonify({"tasks": [t.to_dict() for t in page], "next_before": next_before})
    response.headers["Cache-Control"] = "no-store"
    return response


def document(api: Any) -> None:
    """Name the input schemas in the OpenAPI document (the request bodies refer to them)."""
    api.spec.components.schema("RecordInput", schema=RecordInputSchema)
    api.spec.components.schema("DeleteInput", schema=DeleteInputSchema)
