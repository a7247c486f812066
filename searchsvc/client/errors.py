"""The client's exceptions: the domain's own, rebuilt from the service's JSON error payload, and
those only a remote service has (unreachable, a key refused, a rate limit, a wait that timed
out)."""

from __future__ import annotations

import requests

from searchsvc.domain.errors import (
    BuildInProgress,
    IndexUnavailable,
    InsufficientStorage,
    InvalidRequest,
    KeyQueueFull,
    PayloadTooLarge,
    QueryError,
    QueueFull,
    RecordNotFound,
    SearchsvcError,
    TaskNotFound,
    TaskQueueUnavailable,
    UnknownFacet,
)
from searchsvc.domain.tasks import Task


class ServiceError(SearchsvcError):
    """The service failed in a way no domain error describes (a 5xx, a proxy's HTML page)."""

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
        BuildInProgress,
        TaskNotFound,
        TaskQueueUnavailable,
        PayloadTooLarge,
        QueueFull,
        KeyQueueFull,
        InsufficientStorage,
        AuthenticationError,
        PermissionDenied,
        RateLimited,
    )
}
# A body over the service's size limit is refused by the HTTP layer, under its own code.
ERROR_OF_CODE["request_entity_too_large"] = PayloadTooLarge


def error_from(response: requests.Response) -> SearchsvcError:
    """The domain exception an error response stands for."""
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], dict(error["details"])
    except (ValueError, KeyError, TypeError):
        return ServiceError(f"HTTP {response.status_code} from {response.url}")
    exception = ERROR_OF_CODE.get(code, ServiceError)(message)
    exception.details = {**details, "status": response.status_code}
    retry_after = response.headers.get("Retry-After", "")
    if retry_after.isdigit():  # 429, 503 and 507 say when to try again
        exception.details["retry_after"] = int(retry_after)
    return exception


def in_bulk(exc: SearchsvcError, start: int, end: int, queued: list[Task]) -> SearchsvcError:
    """A failure of one request of a bulk `add`: positions counted in the whole input, the
    message naming the request, and the tasks already queued in `details["queued"]`."""
    errors = exc.details.get("errors")
    for error in errors if isinstance(errors, list) else ():
        if isinstance(error, dict) and isinstance(error.get("position"), int):
            error["position"] += start
    exc.message = (
        f"records {start} to {end - 1} were refused (tasks queued before them: {len(queued)}, "
        f"in details['queued']); in that request: {exc.message}"
    )
    exc.args = (exc.message,)
    exc.details["queued"] = list(queued)
    return exc
