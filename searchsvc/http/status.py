"""The HTTP status of each domain error: one map for every HTTP surface (the JSON API and the
web page), so that an error means the same status wherever it is shown."""

from __future__ import annotations

from searchsvc.domain.errors import (
    BuildInProgress,
    IndexUnavailable,
    InvalidRequest,
    ModelUnavailable,
    ModeUnavailable,
    PayloadTooLarge,
    QueryError,
    RecordNotFound,
    SearchsvcError,
    TaskNotFound,
    TaskQueueUnavailable,
    UnknownFacet,
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
    IndexUnavailable: 503,
    ModelUnavailable: 503,
    BuildInProgress: 503,
    TaskQueueUnavailable: 503,
}


def status_of(error: SearchsvcError) -> int:
    """The HTTP status of a domain error."""
    return next((s for kind, s in STATUS_OF_ERROR.items() if isinstance(error, kind)), 500)
