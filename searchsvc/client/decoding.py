"""The service's JSON answers as the domain's objects: a SearchResult, Records, Tasks (a newer
service may send fields these do not have: they are left out). The decoder of
`searchsvc.client.SearchClient`, in place of the client package's own (searchsvc_client)."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from searchsvc.domain.query import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
)
from searchsvc.domain.records import RECORD_FIELDS, Record
from searchsvc.domain.tasks import Task


class DomainDecoder:
    """searchsvc_client.decoding.Decoder's methods, making the domain's objects."""

    def task(self, data: dict[str, Any]) -> Task:
        # Only the fields Task has: a newer service may send more.
        return Task(**{f.name: data[f.name] for f in fields(Task) if f.name in data})

    def record(self, data: dict[str, Any]) -> Record:
        return Record.from_dict({name: data[name] for name in RECORD_FIELDS if name in data})

    def hit(self, data: dict[str, Any]) -> Hit:
        return Hit(
            record=self.record(data), score=data["score"], highlights=dict(data["highlights"])
        )

    def facet_values(self, values: list[dict[str, Any]]) -> tuple[FacetValue, ...]:
        return tuple(
            FacetValue(v["value"], v["count"], v["selected"], v.get("label"), v.get("parent"))
            for v in values
        )

    def search_result(self, body: dict[str, Any]) -> SearchResult:
        # The echoed query is SearchRequest.to_dict(), in the API's parameter names.
        return SearchResult(
            request=SearchRequest.from_params(**body["query"]),
            total=body["total"],
            hits=tuple(self.hit(data) for data in body["hits"]),
            facets={name: self.facet_values(values) for name, values in body["facets"].items()},
            took_ms=body["took_ms"],
            suggestion=body["suggestion"],
            mode=body.get("mode", "lexical"),
            # A server before these fields: every record it answers matched the words.
            added_by_meaning=body.get("added_by_meaning", 0),
            meaning_adds=body.get("meaning_adds", False),
        )

    def suggestions(self, body: dict[str, Any]) -> Suggestions:
        return Suggestions(body["prefix"], tuple(body["titles"]), tuple(body["authors"]))

    def author_view(self, body: dict[str, Any]) -> AuthorView:
        return AuthorView(
            name=body["name"],
            total=body["total"],
            page=body["page"],
            per_page=body["per_page"],
            records=tuple(self.record(record) for record in body["records"]),
            years=self.facet_values(body["years"]),
            categories=self.facet_values(body["categories"]),
            coauthors=self.facet_values(body["coauthors"]),
        )

    def index_stats(self, body: dict[str, Any]) -> IndexStats:
        return IndexStats(
            documents=body["documents"],
            facets={name: self.facet_values(values) for name, values in body["facets"].items()},
            cardinalities=body["cardinalities"],
            built_at=datetime.fromisoformat(body["built_at"]) if body["built_at"] else None,
            version=body["version"],
            size_bytes=body["size_bytes"],
        )
