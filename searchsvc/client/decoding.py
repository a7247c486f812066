"""The service's JSON answers as the domain's objects: a SearchResult, Records, Tasks (a newer
service may send fields these do not have: they are left out)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from searchsvc.domain.query import FacetValue, Hit, SearchRequest, SearchResult
from searchsvc.domain.records import RECORD_FIELDS, Record
from searchsvc.domain.tasks import Task


def task(data: dict[str, Any]) -> Task:
    # Only the fields Task has: a newer service may send more.
    return Task(**{field.name: data[field.name] for field in fields(Task) if field.name in data})


def record(data: dict[str, Any]) -> Record:
    return Record.from_dict({name: data[name] for name in RECORD_FIELDS if name in data})


def hit(data: dict[str, Any]) -> Hit:
    return Hit(record=record(data), score=data["score"], highlights=dict(data["highlights"]))


def facet_values(values: list[dict[str, Any]]) -> tuple[FacetValue, ...]:
    return tuple(
        FacetValue(v["value"], v["count"], v["selected"], v.get("label"), v.get("parent"))
        for v in values
    )


def search_result(body: dict[str, Any]) -> SearchResult:
    query = body["query"]
    # The echoed query is SearchRequest.to_dict(), in the API's parameter names.
    request = SearchRequest.from_params(**query)
    return SearchResult(
        request=request,
        total=body["total"],
        hits=tuple(hit(data) for data in body["hits"]),
        facets={name: facet_values(values) for name, values in body["facets"].items()},
        took_ms=body["took_ms"],
        suggestion=body["suggestion"],
        mode=body.get("mode", "lexical"),
        # A server before these fields: every record it answers matched the words.
        added_by_meaning=body.get("added_by_meaning", 0),
        meaning_adds=body.get("meaning_adds", False),
    )
