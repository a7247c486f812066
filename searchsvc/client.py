"""A small HTTP client of the service for applications that use it remotely.

It needs `requests`, which the engine does not: install the `client` extra
(`pip install 'searchsvc[client]'`).

`SearchClient(base_url)` mirrors `SearchService`: the same methods, the same result objects
(`SearchResult`, `Record`, ...), and the same exceptions, rebuilt from the JSON error payload.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import requests

from searchsvc.errors import (
    BuildInProgress,
    IndexUnavailable,
    InvalidRequest,
    QueryError,
    RecordNotFound,
    SearchsvcError,
    UnknownFacet,
)
from searchsvc.params import query_params
from searchsvc.query import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
)
from searchsvc.records import RECORD_FIELDS, Record

DEFAULT_TIMEOUT = 10.0
ERROR_OF_CODE: dict[str, type[SearchsvcError]] = {
    error.code: error
    for error in (
        InvalidRequest,
        QueryError,
        RecordNotFound,
        UnknownFacet,
        IndexUnavailable,
        BuildInProgress,
    )
}


class ServiceError(SearchsvcError):
    """The service failed in a way no domain error describes (a 5xx, a proxy's HTML page)."""

    code = "service_error"


class ServiceUnreachable(ServiceError):
    """No HTTP answer at all: connection refused, DNS failure, timeout."""

    code = "unreachable"


class SearchClient:
    """The search service at `base_url` (e.g. http://127.0.0.1:8000), over HTTP."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()

    def search(self, q: str = "", **params: Any) -> SearchResult:
        """Same keyword arguments and result as `SearchService.search`."""
        # Built here first: a bad argument fails at once, as it does in-process.
        return self.search_request(SearchRequest.from_params(q, **params))

    def search_request(self, request: SearchRequest) -> SearchResult:
        # The translator's own inverse: the server reads back exactly this request.
        return _search_result(self._get("/api/v1/search", query_params(request)))

    def get(self, record_id: str) -> Record:
        return _record(self._get(f"/api/v1/records/{quote(record_id, safe='/')}"))

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        body = self._get(f"/api/v1/records/{quote(record_id, safe='/')}/similar", {"limit": limit})
        return tuple(_hit(hit) for hit in body["hits"])

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        body = self._get("/api/v1/suggest", {"q": prefix, "limit": limit})
        return Suggestions(body["prefix"], tuple(body["titles"]), tuple(body["authors"]))

    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        body = self._get(f"/api/v1/facets/{quote(facet)}", {"q": prefix, "limit": limit})
        return _facet_values(body["values"])

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        body = self._get(
            f"/api/v1/authors/{quote(name, safe='/')}", {"page": page, "per_page": per_page}
        )
        return AuthorView(
            name=body["name"],
            total=body["total"],
            page=body["page"],
            per_page=body["per_page"],
            records=tuple(_record(record) for record in body["records"]),
            years=_facet_values(body["years"]),
            categories=_facet_values(body["categories"]),
            coauthors=_facet_values(body["coauthors"]),
        )

    def stats(self) -> IndexStats:
        body = self._get("/api/v1/stats")
        return IndexStats(
            documents=body["documents"],
            facets={name: _facet_values(values) for name, values in body["facets"].items()},
            cardinalities=body["cardinalities"],
            built_at=datetime.fromisoformat(body["built_at"]) if body["built_at"] else None,
            version=body["version"],
            index_dir=body["index_dir"],
            size_bytes=body["size_bytes"],
        )

    def version(self) -> str:
        return self._get("/readyz")["version"]

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> SearchClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _get(self, path: str, params: Any = None) -> dict[str, Any]:
        try:
            response = self.session.get(self.base_url + path, params=params, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ServiceUnreachable(f"{self.base_url} did not answer: {exc}") from exc
        if response.ok:
            return response.json()
        raise _error_from(response)


def _error_from(response: requests.Response) -> SearchsvcError:
    """The domain exception an error response stands for."""
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], dict(error["details"])
    except (ValueError, KeyError, TypeError):
        return ServiceError(f"HTTP {response.status_code} from {response.url}")
    exception = ERROR_OF_CODE.get(code, ServiceError)(message)
    exception.details = {**details, "status": response.status_code}
    return exception


def _record(data: dict[str, Any]) -> Record:
    return Record.from_dict({name: data[name] for name in RECORD_FIELDS if name in data})


def _hit(data: dict[str, Any]) -> Hit:
    return Hit(record=_record(data), score=data["score"], highlights=dict(data["highlights"]))


def _facet_values(values: list[dict[str, Any]]) -> tuple[FacetValue, ...]:
    return tuple(FacetValue(v["value"], v["count"], v["selected"]) for v in values)


def _search_result(body: dict[str, Any]) -> SearchResult:
    query = body["query"]
    # The echoed query is SearchRequest.to_dict(), in the API's parameter names.
    request = SearchRequest.from_params(**query)
    return SearchResult(
        request=request,
        total=body["total"],
        hits=tuple(_hit(hit) for hit in body["hits"]),
        facets={name: _facet_values(values) for name, values in body["facets"].items()},
        took_ms=body["took_ms"],
        suggestion=body["suggestion"],
    )
