"""The client's exceptions: the service's errors, rebuilt from its JSON error payload under the
names the server gives them (searchsvc.domain.errors), and those only a remote service has
(unreachable, a key refused, a rate limit, a wait that timed out).

Every one is a SearchsvcError with `code`, `message` and `details` (the payload's details, the
HTTP `status`, and `retry_after` in seconds when the service said when to retry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from searchsvc_client.types import Task


class SearchsvcError(Exception):
    """Base of every error the client raises on purpose."""

    code = "error"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details


class InvalidRequest(SearchsvcError, ValueError):
    """A request parameter (or a record to write) is out of range or of the wrong kind."""

    code = "invalid_parameter"


class QueryError(SearchsvcError, ValueError):
    """The query text cannot be used; `details` says what and where (`position`)."""

    code = "invalid_query"


class RecordNotFound(SearchsvcError, LookupError):
    """No record has the requested id."""

    code = "not_found"


class UnknownFacet(SearchsvcError, LookupError):
    """No facet has the requested name; `details["facets"]` lists those there are."""

    code = "unknown_facet"


class IndexUnavailable(SearchsvcError):
    """The service's index is missing, being created, or cannot be opened."""

    code = "index_unavailable"


class ModeUnavailable(SearchsvcError):
    """The search mode asked for needs what the index lacks (vectors for hybrid or semantic)."""

    code = "mode_unavailable"


class ModelUnavailable(SearchsvcError):
    """The embedding model that semantic and hybrid search need is not installed there."""

    code = "model_unavailable"


class BuildInProgress(SearchsvcError):
    """The index is being rebuilt."""

    code = "build_in_progress"


class TaskNotFound(SearchsvcError, LookupError):
    """No write task has the requested id (or the API key may not see it)."""

    code = "task_not_found"


class TaskQueueUnavailable(SearchsvcError):
    """The service's task queue cannot be read or written."""

    code = "task_queue_unavailable"


class PayloadTooLarge(SearchsvcError):
    """A write carries more records, or more bytes, than the service takes in one request."""

    code = "payload_too_large"


class QueueFull(SearchsvcError):
    """The service's write queue is full: `details["retry_after"]` says when to retry."""

    code = "queue_full"


class KeyQueueFull(SearchsvcError):
    """This API key's writes waiting in the queue reach its share: retry after
    `details["retry_after"]`."""

    code = "key_queue_full"


class InsufficientStorage(SearchsvcError):
    """The service's disk is below its free-space floor: no write is taken for now."""

    code = "insufficient_storage"


class ServiceError(SearchsvcError):
    """The service failed in a way no other error describes (a 5xx, a proxy's HTML page)."""

    code = "service_error"


class ServiceUnreachable(ServiceError):
    """No HTTP answer at all: connection refused, DNS failure, timeout."""

    code = "unreachable"


class AuthenticationError(ServiceError):
    """401: no API key was sent, or the service does not know it (unknown or revoked)."""

    code = "unauthorized"


class PermissionDenied(ServiceError):
    """403: the API key lacks the scope the request needs (writes need `write`)."""

    code = "forbidden"


class RateLimited(ServiceError):
    """429: the API key made too many writes; `details["retry_after"]` says when to retry."""

    code = "too_many_requests"


class TaskTimeout(SearchsvcError, TimeoutError):
    """`wait` gave up before the task finished; `task` is the task as last seen."""

    code = "task_timeout"

    def __init__(self, message: str, task: Task) -> None:
        super().__init__(message, id=task.id, status=task.status)
        self.task = task


ERROR_OF_CODE: dict[str, type[SearchsvcError]] = {
    error.code: error
    for error in (
        InvalidRequest,
        QueryError,
        RecordNotFound,
        UnknownFacet,
        IndexUnavailable,
        ModeUnavailable,
        ModelUnavailable,
        BuildInProgress,
        TaskNotFound,
        TaskQueueUnavailable,
        PayloadTooLarge,
        QueueFull,
        KeyQueueFull,
        InsufficientStorage,
        ServiceError,
        ServiceUnreachable,
        AuthenticationError,
        PermissionDenied,
        RateLimited,
        TaskTimeout,
    )
}
# A body over the service's size limit is refused by the HTTP layer, under its own code.
ERROR_OF_CODE["request_entity_too_large"] = PayloadTooLarge
# The refusals a bulk `add` waits out (the queue makes room as the writer applies tasks).
BACKLOG_CODES = frozenset({QueueFull.code, KeyQueueFull.code})


def error_from(
    response: requests.Response, classes: Mapping[str, type[Exception]] = ERROR_OF_CODE
) -> Exception:
    """The exception an error response stands for: the class of its code in `classes`
    (ServiceError's, `classes["service_error"]`, for a code not there or no JSON payload)."""
    fallback = classes["service_error"]
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], dict(error["details"])
    except (ValueError, KeyError, TypeError):
        return fallback(f"HTTP {response.status_code} from {response.url}")
    exception = classes.get(code, fallback)(message)
    exception.details = {**details, "status": response.status_code}  # type: ignore[attr-defined]
    retry_after = response.headers.get("Retry-After", "")
    if retry_after.isdigit():  # 429, 503 and 507 say when to try again
        exception.details["retry_after"] = int(retry_after)  # type: ignore[attr-defined]
    return exception


def in_bulk(exc: Exception, start: int, end: int, queued: list[Any]) -> Exception:
    """A failure of one request of a bulk `add`: positions counted in the whole input, the
    message naming the request, and the tasks already queued in `details["queued"]`."""
    details: dict[str, Any] = getattr(exc, "details", None) or {}
    errors = details.get("errors")
    for error in errors if isinstance(errors, list) else ():
        if isinstance(error, dict) and isinstance(error.get("position"), int):
            error["position"] += start
    message = (
        f"records {start} to {end - 1} were refused (tasks queued before them: {len(queued)}, "
        f"in details['queued']); in that request: {getattr(exc, 'message', exc)}"
    )
    exc.message = message  # type: ignore[attr-defined]
    exc.args = (message,)
    details["queued"] = list(queued)
    exc.details = details  # type: ignore[attr-defined]
    return exc
