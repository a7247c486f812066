"""A small Python client of the searchsvc HTTP API, for applications that use the service
remotely: `pip install searchsvc-client` needs only `requests`, none of the server.

`SearchClient(base_url)` has the methods of the server's `SearchService` (search, get, similar,
suggest, facet_values, author, stats) and answers with small dataclasses of the same names and
fields (`SearchResult`, `Hit`, `Record`, ...); errors come back as exceptions named as the
server names them (`RecordNotFound`, `QueryError`, ...), rebuilt from the JSON error payload.
With `api_key=` it also writes: `add` and `delete` queue tasks on the service (answered at
once), `task` reads one, and `wait` waits for one to be applied.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime
from typing import Any, ClassVar, Self, TypeAlias
from urllib.parse import quote

import requests

from searchsvc_client.decoding import Decoder
from searchsvc_client.errors import (
    BACKLOG_CODES,
    ERROR_OF_CODE,
    AuthenticationError,
    BuildInProgress,
    IndexUnavailable,
    InsufficientStorage,
    InvalidRequest,
    KeyQueueFull,
    ModelUnavailable,
    ModeUnavailable,
    PayloadTooLarge,
    PermissionDenied,
    QueryError,
    QueueFull,
    RateLimited,
    RecordNotFound,
    SearchsvcError,
    ServiceError,
    ServiceUnreachable,
    TaskNotFound,
    TaskQueueUnavailable,
    TaskTimeout,
    UnknownFacet,
    error_from,
    in_bulk,
)
from searchsvc_client.types import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    Record,
    SearchRequest,
    SearchResult,
    Suggestions,
    Task,
)

__all__ = [
    "ERROR_OF_CODE",
    "AuthenticationError",
    "AuthorView",
    "BuildInProgress",
    "FacetValue",
    "Hit",
    "IndexStats",
    "IndexUnavailable",
    "InsufficientStorage",
    "InvalidRequest",
    "KeyQueueFull",
    "ModeUnavailable",
    "ModelUnavailable",
    "PayloadTooLarge",
    "PermissionDenied",
    "QueryError",
    "QueueFull",
    "RateLimited",
    "Record",
    "RecordNotFound",
    "SearchClient",
    "SearchRequest",
    "SearchResult",
    "SearchsvcError",
    "ServiceError",
    "ServiceUnreachable",
    "Suggestions",
    "Task",
    "TaskNotFound",
    "TaskQueueUnavailable",
    "TaskTimeout",
    "UnknownFacet",
]

__version__ = "0.1.0"

DEFAULT_TIMEOUT = 10.0
# Records in one write request at most: half the service's default MAX_BATCH_RECORDS, and a
# body (a few MB of typical records) well under its MAX_WRITE_CONTENT_LENGTH.
RECORDS_PER_REQUEST = 5_000
# Longest one `?wait=` request of `wait`: the most the service allows (its MAX_WAIT_SECONDS, kept
# well under gunicorn's 30 s worker timeout).
WAIT_SLICE_SECONDS = 10.0
# The pause before asking again when the service answered a wait at once with the task still
# unfinished (it bounds the waits of a key: `Searchsvc-Wait: refused`), rather than asking in a
# tight loop.
WAIT_REFUSED_PAUSE_SECONDS = 1.0
# How long a bulk `add` waits in all, between its requests, for the service's queue to make room
# (a 429 or 503 of a full backlog, saying when to retry) before it raises: a load larger than
# the queue takes is paced to the writer.
BACKLOG_PATIENCE_SECONDS = 300.0
NDJSON = "application/x-ndjson"
# A record to write: a Record, or a dict in its export format (`Record.to_dict()`).
RecordInput: TypeAlias = Record | Mapping[str, Any]


class SearchClient:
    """The search service at `base_url` (e.g. http://127.0.0.1:8000), over HTTP.

    `api_key` (a key made by `searchsvc keys create`) is sent as `Authorization: Bearer` on
    every request: writes and tasks need one with the write scope, reads one with the read
    scope when the service requires it. `timeout` bounds each request (seconds).
    """

    # What answers and errors are made of. The server package's client (searchsvc.client)
    # gives its own, the server's domain types, and keeps all the rest.
    decoder: ClassVar[Decoder] = Decoder()
    errors: ClassVar[Mapping[str, type[Exception]]] = ERROR_OF_CODE
    # Records in one request of a bulk `add`.
    records_per_request: ClassVar[int] = RECORDS_PER_REQUEST

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()
        # Per request, not on the session: a session passed in may serve other clients too.
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def search(self, q: str = "", **params: Any) -> SearchResult:
        """The same keyword arguments as the server's `SearchService.search`: `q`, a filter
        per facet (`author`, `year`, `category`, `subject`: one value or a list), `year_from`,
        `year_to`, `sort`, `page`, `per_page`, `facets`, `facet_size`, `highlight`, `fields`,
        `crosslists`, `mode`. The service checks them: InvalidRequest, QueryError."""
        return self.search_request(SearchRequest.from_params(q, **params))

    def search_request(self, request: SearchRequest) -> SearchResult:
        return self.decoder.search_result(self._get("/api/v1/search", request.to_params()))

    def get(self, record_id: str) -> Record:
        return self.decoder.record(self._get(f"/api/v1/records/{quote(record_id, safe='/')}"))

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        body = self._get(f"/api/v1/records/{quote(record_id, safe='/')}/similar", {"limit": limit})
        return tuple(self.decoder.hit(hit) for hit in body["hits"])

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        return self.decoder.suggestions(self._get("/api/v1/suggest", {"q": prefix, "limit": limit}))

    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        body = self._get(f"/api/v1/facets/{quote(facet)}", {"q": prefix, "limit": limit})
        return self.decoder.facet_values(body["values"])

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        body = self._get(
            f"/api/v1/authors/{quote(name, safe='/')}", {"page": page, "per_page": per_page}
        )
        return self.decoder.author_view(body)

    def stats(self) -> IndexStats:
        return self.decoder.index_stats(self._get("/api/v1/stats"))

    def version(self) -> str:
        return str(self._get("/readyz")["version"])

    def add(self, records: RecordInput | Iterable[RecordInput]) -> list[Task]:
        """Queue records to add or replace by id: one or many Records, or dicts in the export
        format. Returns the tasks, one per request, in order; `wait` for them to be applied.

        Up to `records_per_request` records go in one request (a JSON array), and make one
        task. More (any iterable, read as it goes) are sent as NDJSON, that many a request. The
        service validates each request whole and queues all of it or nothing: a bad record
        raises InvalidRequest with `details["errors"]` giving each bad record's `position` in
        `records`, `field` and `reason`. When a later request fails, the earlier ones stay
        queued: the exception's `details["queued"]` lists their tasks. A bulk load that the
        service's queue cannot hold yet (KeyQueueFull, QueueFull) waits for room, as the
        service says, up to BACKLOG_PATIENCE_SECONDS in all.
        """
        chunks = _chunks(_record_dicts(records), self.records_per_request)
        first = next(chunks, [])
        second = next(chunks, None)
        if second is None:
            return [self._write("POST", "/api/v1/records", _json(first))]
        tasks: list[Task] = []
        start = 0
        patience = [BACKLOG_PATIENCE_SECONDS]
        for chunk in itertools.chain((first, second), chunks):
            body = b"".join(_json(record) + b"\n" for record in chunk)
            try:
                tasks.append(self._paced_write(body, patience))
            except Exception as exc:
                if not hasattr(exc, "details"):
                    raise
                raise in_bulk(exc, start, start + len(chunk), tasks) from None
            start += len(chunk)
        return tasks

    def delete(self, record_ids: Iterable[str] | str) -> Task:
        """Queue the deletion of records by id, one or many (ids not indexed are ignored)."""
        ids = [record_ids] if isinstance(record_ids, str) else list(record_ids)
        return self._write("POST", "/api/v1/records/delete", _json({"ids": ids}))

    def task(self, task_id: int) -> Task:
        """The write task with this id as it is now; TaskNotFound when there is none."""
        return self.decoder.task(self._get(f"/api/v1/tasks/{int(task_id)}"))

    def wait(self, task: Task | int | str, timeout: float = 30.0) -> Task:
        """The task once it has finished (succeeded or failed: see its `status` and `error`).

        The service holds each request until the task finishes or WAIT_SLICE_SECONDS pass;
        after `timeout` seconds in all this raises TaskTimeout, whose `task` is the task as last
        seen (still queued or processing: waiting again may see it finish).
        """
        # A Task, or its id as a number or text (as `task()` takes it, and the client did).
        task_id = int(task.id) if hasattr(task, "id") else int(task)
        deadline = time.monotonic() + timeout
        while True:
            seconds = min(max(0.0, deadline - time.monotonic()), WAIT_SLICE_SECONDS)
            asked = time.monotonic()
            # The service answers after up to `seconds`: allow for them.
            found = self.decoder.task(
                self._get(
                    f"/api/v1/tasks/{task_id}", {"wait": round(seconds, 3)}, self.timeout + seconds
                )
            )
            if found.done:
                return found
            if time.monotonic() >= deadline:
                raise self.errors[TaskTimeout.code](
                    f"task {task_id} is still {found.status} after {timeout:g} s", found
                )
            if time.monotonic() - asked < seconds / 2:
                # Answered without the wait (this key's other waits hold its share).
                time.sleep(min(WAIT_REFUSED_PAUSE_SECONDS, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _paced_write(self, body: bytes, patience: list[float]) -> Task:
        """POST an NDJSON piece of a bulk load, waiting while the service's queue is full, as
        long as `patience[0]` seconds (what is left of them is kept there)."""
        while True:
            try:
                return self._write("POST", "/api/v1/records", body, NDJSON)
            except Exception as exc:
                if getattr(exc, "code", None) not in BACKLOG_CODES:
                    raise
                retry_after = getattr(exc, "details", {}).get("retry_after")
                pause = float(retry_after) if isinstance(retry_after, int | float) else 1.0
                if pause > patience[0]:
                    raise
                patience[0] -= pause
                time.sleep(pause)

    def _get(self, path: str, params: Any = None, timeout: float | None = None) -> Any:
        return self._request("GET", path, params=params, timeout=timeout)

    def _write(
        self, method: str, path: str, body: bytes, content_type: str = "application/json"
    ) -> Task:
        return self.decoder.task(self._request(method, path, data=body, content_type=content_type))

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
        data: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        headers = dict(self._headers)
        if content_type is not None:
            headers["Content-Type"] = content_type
        try:
            response = self.session.request(
                method,
                self.base_url + path,
                params=params,
                data=data,
                headers=headers,
                timeout=self.timeout if timeout is None else timeout,
            )
        except requests.RequestException as exc:
            unreachable = self.errors[ServiceUnreachable.code]
            raise unreachable(f"{self.base_url} did not answer: {exc}") from exc
        if response.ok:
            return response.json()
        raise error_from(response, self.errors)


def _json(value: Any) -> bytes:
    # Dates and times as ISO 8601 text, as the server's encoder (orjson) sent them before.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_iso).encode()


def _iso(value: Any) -> str:
    if isinstance(value, date | datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _record_dicts(records: RecordInput | Iterable[RecordInput]) -> Iterator[dict[str, Any]]:
    # A record is a Mapping, or has `to_dict()` (this package's Record, or the server's).
    if isinstance(records, Mapping) or hasattr(records, "to_dict"):
        records = [records]  # type: ignore[list-item]
    elif isinstance(records, str | bytes):
        raise TypeError("add takes Records or dicts, one or many, not a string")
    for record in records:
        if isinstance(record, Mapping):
            yield dict(record)
        elif hasattr(record, "to_dict"):
            yield record.to_dict()
        else:
            raise TypeError(f"add takes Records or dicts, not {type(record).__name__}")


def _chunks(items: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk
