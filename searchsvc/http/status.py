"""The HTTP status of each domain error: one map for every HTTP surface (the JSON API and the
web page), so that an error means the same status wherever it is shown."""

from __future__ import annotations

from searchsvc.domain.errors import (
    BuildInProgress,
    IndexUnavailable,
    InsufficientStorage,
    InvalidRequest,
    KeyQueueFull,
    ModelUnavailable,
    ModeUnavailable,
    PayloadTooLarge,
    QueryError,
    QueueFull,
    RecordNotFound,
    SearchsvcError,
    TaskNotFound,
    TaskQueueUnavailable,
    UnknownFacet,
    WriteRateExceeded,
)

# Any other SearchsvcError is a failure of the service (500).
STATUS_OF_ERROR: dict[type[SearchsvcError], int] = {
    InvalidRequest: 400,
    QueryError: 400,
    RecordNotFound: 404,
    UnknownFacet: 404,
    TaskNotFound: 404,
    ModeUnavailable: 409,
    PayloadTooLarge: 413,
    # The client's own writes are too many or too far ahead of the writer: it should slow down.
    WriteRateExceeded: 429,
    KeyQueueFull: 429,
    IndexUnavailable: 503,
    ModelUnavailable: 503,
    BuildInProgress: 503,
    TaskQueueUnavailable: 503,
    # The service is behind on every key's writes.
    QueueFull: 503,
    # The queue's disk is nearly full: an operator's matter, told apart from load (503).
    InsufficientStorage: 507,
}


def status_of(error: SearchsvcError) -> int:
    """The HTTP status of a domain error."""
    return next((s for kind, s in STATUS_OF_ERROR.items() if isinstance(error, kind)), 500)
