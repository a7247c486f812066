"""The HTTP client of the service, answering with the server's domain objects.

The client itself is its own distribution, `searchsvc-client` (clients/python, module
`searchsvc_client`), which needs only `requests`: applications that use the service remotely
install that one. This module keeps `from searchsvc.client import SearchClient` working where
the server is installed too: the same client (a subclass of `searchsvc_client.SearchClient`,
every request made there), whose answers are the domain's `SearchResult`, `Record`, `Task`,
... (those `SearchService` answers in-process), and whose errors are the domain's exceptions,
rebuilt from the JSON error payload (the client-only ones, `ServiceUnreachable`, `TaskTimeout`,
..., are the client package's classes and domain errors at once).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

try:
    import searchsvc_client
except ImportError as exc:  # pragma: no cover - `make test` installs it
    raise ImportError(
        "searchsvc.client needs the client package: pip install ./clients/python "
        "(the searchsvc-client distribution)"
    ) from exc

from searchsvc.client.decoding import DomainDecoder
from searchsvc.client.errors import (
    ERROR_OF_CODE,
    AuthenticationError,
    PermissionDenied,
    RateLimited,
    ServiceError,
    ServiceUnreachable,
    TaskTimeout,
)
from searchsvc.domain.query import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
    query_params,
)
from searchsvc.domain.records import Record
from searchsvc.domain.tasks import Task

__all__ = [
    "ERROR_OF_CODE",
    "AuthenticationError",
    "PermissionDenied",
    "RateLimited",
    "SearchClient",
    "ServiceError",
    "ServiceUnreachable",
    "TaskTimeout",
]

RECORDS_PER_REQUEST = searchsvc_client.RECORDS_PER_REQUEST
RecordInput = Record | searchsvc_client.RecordInput


class SearchClient(searchsvc_client.SearchClient):
    """`searchsvc_client.SearchClient` answering with the domain's objects and exceptions.

    `search` builds the SearchRequest here first, so that a bad argument fails at once, as it
    does in-process. The overrides below only say the domain's types; the requests are the
    client package's.
    """

    decoder = DomainDecoder()  # type: ignore[assignment]
    errors = ERROR_OF_CODE

    def search(self, q: str = "", **params: Any) -> SearchResult:  # type: ignore[override]
        """Same keyword arguments and result as `SearchService.search`."""
        return self.search_request(SearchRequest.from_params(q, **params))

    def search_request(self, request: SearchRequest) -> SearchResult:  # type: ignore[override]
        # The translator's own inverse: the server reads back exactly this request.
        body = self._get("/api/v1/search", query_params(request))
        return self.decoder.search_result(body)

    def get(self, record_id: str) -> Record:  # type: ignore[override]
        return cast(Record, super().get(record_id))

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:  # type: ignore[override]
        return cast(tuple[Hit, ...], super().similar(record_id, limit))

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:  # type: ignore[override]
        return cast(Suggestions, super().suggest(prefix, limit))

    def facet_values(  # type: ignore[override]
        self, facet: str, prefix: str = "", limit: int = 10
    ) -> tuple[FacetValue, ...]:
        return cast(tuple[FacetValue, ...], super().facet_values(facet, prefix, limit))

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:  # type: ignore[override]
        return cast(AuthorView, super().author(name, page, per_page))

    def stats(self) -> IndexStats:  # type: ignore[override]
        return cast(IndexStats, super().stats())

    def add(self, records: RecordInput | Iterable[RecordInput]) -> list[Task]:  # type: ignore[override]
        return cast(list[Task], super().add(records))  # type: ignore[arg-type]

    def delete(self, record_ids: Iterable[str] | str) -> Task:  # type: ignore[override]
        return cast(Task, super().delete(record_ids))

    def task(self, task_id: int) -> Task:  # type: ignore[override]
        return cast(Task, super().task(task_id))

    def wait(self, task: Task | int | str, timeout: float = 30.0) -> Task:  # type: ignore[override]
        return cast(Task, super().wait(task, timeout))  # type: ignore[arg-type]
