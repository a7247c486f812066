"""The exceptions of `searchsvc.client.SearchClient`: the domain's own, rebuilt from the
service's JSON error payload, and those only a remote service has (unreachable, a key refused,
a rate limit, a wait that timed out): the client package's classes (searchsvc_client), made
domain errors too, so that `except SearchsvcError` of either package catches them."""

from __future__ import annotations

import searchsvc_client.errors as remote
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
)


class ServiceError(remote.ServiceError, SearchsvcError):
    __doc__ = remote.ServiceError.__doc__


class ServiceUnreachable(remote.ServiceUnreachable, ServiceError):
    __doc__ = remote.ServiceUnreachable.__doc__


class AuthenticationError(remote.AuthenticationError, ServiceError):
    __doc__ = remote.AuthenticationError.__doc__


class PermissionDenied(remote.PermissionDenied, ServiceError):
    __doc__ = remote.PermissionDenied.__doc__


class RateLimited(remote.RateLimited, ServiceError):
    __doc__ = remote.RateLimited.__doc__


class TaskTimeout(remote.TaskTimeout, SearchsvcError):
    __doc__ = remote.TaskTimeout.__doc__


ERROR_OF_CODE: dict[str, type[Exception]] = {
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
