"""What the client answers: the service's JSON as small frozen dataclasses.

They mirror the server's own (searchsvc.domain: Record, SearchRequest, SearchResult, ...), with
the same names, fields and `to_dict()` forms, but check nothing the service has not checked
already, and keep none of its code: this package needs only `requests`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from searchsvc_client.errors import InvalidRequest

# The service's facets, each a filter keyword of `search` (`author=[...]`, `year=2021`).
FACET_NAMES = ("author", "year", "category", "subject")
DEFAULT_PER_PAGE = 10
DEFAULT_FACET_SIZE = 10
# The deepest result a search reaches (page x per_page), as the service counts it.
MAX_RESULT_WINDOW = 10_000
# Fields a record is made of, in display order.
RECORD_FIELDS = (
    "id",
    "title",
    "abstract",
    "authors",
    "year",
    "categories",
    "source",
    "url",
    "doi",
    "journal_ref",
    "comments",
)


@dataclass(frozen=True, slots=True)
class Record:
    """One publication; `authors` and `categories` are ordered, the first category is primary."""

    id: str
    title: str
    abstract: str = ""
    authors: tuple[str, ...] = ()
    year: int | None = None
    categories: tuple[str, ...] = ()
    source: str = ""
    url: str | None = None
    doi: str | None = None
    journal_ref: str | None = None
    comments: str | None = None

    def __post_init__(self) -> None:
        # Lists arrive from JSON (and from callers): keep the frozen type honest.
        for name in ("authors", "categories"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ValueError(f"record field {name!r} must be a list, not a string")
            object.__setattr__(self, name, tuple(value))

    @property
    def primary_category(self) -> str | None:
        return self.categories[0] if self.categories else None

    def to_dict(self) -> dict[str, Any]:
        """The record in the service's JSON form (the format `searchsvc export` writes)."""
        data = {name: getattr(self, name) for name in RECORD_FIELDS}
        data["authors"] = list(self.authors)
        data["categories"] = list(self.categories)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Record:
        """A record from its JSON form; fields it does not have (a newer service's) left out."""
        known = {name: data[name] for name in RECORD_FIELDS if name in data}
        for name in ("abstract", "source"):
            if known.get(name) is None:
                known.pop(name, None)
        for name in ("authors", "categories"):
            known[name] = tuple(known.get(name) or ())
        return cls(**known)


@dataclass(frozen=True, slots=True)
class FacetValue:
    """One value of a facet with the number of matching records."""

    value: str
    count: int
    selected: bool = False
    # How people read the value ("Distributed, Parallel, and Cluster Computing" for cs.DC) and
    # the code of what it belongs to (its archive).
    label: str | None = None
    parent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "count": self.count,
            "selected": self.selected,
            "label": self.value if self.label is None else self.label,
            "parent": self.parent,
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """A matching record, its score (None when not ranked by relevance) and HTML highlights."""

    record: Record
    score: float | None = None
    # "title"/"abstract" -> HTML-escaped text with <mark> around matched words
    highlights: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.record.to_dict()
        data["score"] = None if self.score is None else round(float(self.score), 4)
        data["highlights"] = dict(self.highlights)
        return data


# The keyword arguments of a search besides `q` and the facets' filters.
OPTIONS = (
    "year_from",
    "year_to",
    "sort",
    "page",
    "per_page",
    "facets",
    "facet_size",
    "highlight",
    "fields",
    "crosslists",
    "mode",
)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What to search for, in the HTTP API's parameters. Filters are OR within a facet and AND
    across facets. The service checks it (InvalidRequest, QueryError); None leaves a parameter
    to the service's default.
    """

    q: str = ""
    # Facet name -> selected values.
    filters: Mapping[str, tuple[str | int, ...]] = field(default_factory=dict, hash=False)
    year_from: int | None = None
    year_to: int | None = None
    sort: str | None = None  # None: relevance with a query, newest without one
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    facets: tuple[str, ...] | None = None  # None: every facet
    facet_size: int = DEFAULT_FACET_SIZE
    highlight: bool = True
    fields: tuple[str, ...] | None = None  # None: title, abstract and authors
    crosslists: str = "include"
    mode: str | None = None  # lexical | hybrid | semantic; None: the service chooses

    @classmethod
    def from_params(cls, q: str = "", **params: Any) -> SearchRequest:
        """A request from the keyword arguments of `SearchClient.search`, where each facet's
        filter is a keyword of its own (`author=[...]`, `year=2021`)."""
        filters = {name: _values(params.pop(name)) for name in FACET_NAMES if name in params}
        unknown = sorted(set(params) - set(OPTIONS))
        if unknown:
            raise InvalidRequest(
                f"unknown parameter {unknown[0]!r}: filters are {', '.join(FACET_NAMES)}",
                parameter=unknown[0],
            )
        for name in ("facets", "fields"):
            if params.get(name) is not None:
                params[name] = _names(name, params[name])
        return cls(q=q, filters={k: v for k, v in filters.items() if v}, **params)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchRequest:
        """The request a search answer echoes (its `query`)."""
        filters = {
            name: tuple(values)
            for name, values in data.items()
            if name not in OPTIONS and name != "q" and isinstance(values, list) and values
        }
        options = {name: data[name] for name in OPTIONS if name in data}
        for name in ("facets", "fields"):
            if options.get(name) is not None:
                options[name] = tuple(options[name])
        return cls(q=data.get("q", ""), filters=filters, **options)

    def to_params(self) -> list[tuple[str, str]]:
        """The query-string pairs of the request, defaults left out (as the server writes
        them: searchsvc.domain.query.query_params)."""
        pairs: list[tuple[str, str]] = []
        if self.q:
            pairs.append(("q", self.q))
        for name in (*FACET_NAMES, *sorted(set(self.filters) - set(FACET_NAMES))):
            pairs.extend((name, str(value)) for value in self.filters.get(name, ()))
        for name in ("year_from", "year_to", "sort"):
            if getattr(self, name) is not None:
                pairs.append((name, str(getattr(self, name))))
        if self.page != 1:
            pairs.append(("page", str(self.page)))
        if self.per_page != DEFAULT_PER_PAGE:
            pairs.append(("per_page", str(self.per_page)))
        if self.facets is not None:
            pairs.append(("facets", ",".join(self.facets)))
        if self.facet_size != DEFAULT_FACET_SIZE:
            pairs.append(("facet_size", str(self.facet_size)))
        if not self.highlight:
            pairs.append(("highlight", "false"))
        if self.fields is not None:
            pairs.append(("fields", ",".join(self.fields)))
        if self.crosslists != "include":
            pairs.append(("crosslists", self.crosslists))
        if self.mode is not None:
            pairs.append(("mode", self.mode))
        return pairs

    def selected(self, facet: str) -> tuple[str, ...]:
        """The filter values of a facet, as strings (the form facet values take)."""
        return tuple(str(value) for value in self.filters.get(facet, ()))

    def to_dict(self) -> dict[str, Any]:
        """The request as the service echoes it (every facet's filter, even empty)."""
        data: dict[str, Any] = {"q": self.q}
        for name in (*FACET_NAMES, *sorted(set(self.filters) - set(FACET_NAMES))):
            data[name] = list(self.filters.get(name, ()))
        for name in OPTIONS:
            value = getattr(self, name)
            data[name] = list(value) if isinstance(value, tuple) else value
        return data


def _values(value: Any) -> tuple[str | int, ...]:
    """One filter value, or any iterable of them."""
    if isinstance(value, str | int) or not isinstance(value, Iterable):
        return (value,)
    return tuple(dict.fromkeys(value))


def _names(name: str, value: Any) -> tuple[str, ...]:
    """A name list given as one string or an iterable of them."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable):
        raise InvalidRequest(f"{name} must be a list of names", parameter=name)
    return tuple(value)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One page of ranked hits with exact total and facet counts over all matches."""

    request: SearchRequest
    total: int
    hits: tuple[Hit, ...]
    facets: dict[str, tuple[FacetValue, ...]]
    took_ms: float
    suggestion: str | None = None
    # The mode that ranked these hits: the request's, or the one the service chose for it.
    mode: str = "lexical"
    # Of `total`, the records only meaning brought (without the query's words).
    added_by_meaning: int = 0
    # Whether meaning could add records to this search (a hybrid or semantic search of plain
    # words).
    meaning_adds: bool = False

    @property
    def page(self) -> int:
        return self.request.page

    @property
    def per_page(self) -> int:
        return self.request.per_page

    @property
    def pages(self) -> int:
        """Pages of `per_page` hits, as many as the result window reaches."""
        pages = max(1, math.ceil(self.total / self.per_page))
        return min(pages, MAX_RESULT_WINDOW // self.per_page)

    @property
    def matched_by_words(self) -> int:
        """Of `total`, the records that match the query."""
        return self.total - self.added_by_meaning


@dataclass(frozen=True, slots=True)
class Suggestions:
    """Autocomplete answers for a prefix: title words/titles and author names."""

    prefix: str
    titles: tuple[str, ...]
    authors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AuthorView:
    """The records attributed to an author, newest first, with per-year/category counts."""

    name: str
    total: int
    page: int
    per_page: int
    records: tuple[Record, ...]
    years: tuple[FacetValue, ...]
    categories: tuple[FacetValue, ...]
    coauthors: tuple[FacetValue, ...]

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page)) if self.per_page else 1


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What the service's index holds: document count, top facet values, cardinalities."""

    documents: int
    facets: dict[str, tuple[FacetValue, ...]]
    cardinalities: dict[str, int]
    built_at: datetime | None
    version: str
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Task:
    """One write request queued on the service, and what became of it."""

    id: int
    kind: str  # "upsert" or "delete"
    status: str  # "enqueued", "processing", "succeeded" or "failed"
    size: int  # records (upsert) or ids (delete) it carries
    origin: str  # "api" or "cli"
    enqueued_at: str
    started_at: str | None = None
    finished_at: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    key_id: str | None = None  # the id of the API key that made it

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "size": self.size,
            "origin": self.origin,
            "enqueued_at": self.enqueued_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "result": self.result,
            "error": self.error,
            "key_id": self.key_id,
        }
