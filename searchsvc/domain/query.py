"""The language between layers: SearchRequest in, SearchResult out (no Flask, no Whoosh)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from searchsvc.domain.errors import InvalidRequest, UnknownFacet
from searchsvc.domain.facets import CROSSLISTS, FACET_NAMES, facet_named
from searchsvc.domain.modes import MODES
from searchsvc.domain.querylang import QueryTree, parse_query
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR, Record
from searchsvc.domain.texts import fold

SORTS = ("relevance", "newest", "oldest", "title")
SEARCH_FIELDS = ("title", "abstract", "authors")
MAX_PER_PAGE = 100
MAX_PAGE = 10_000
# The deepest result a search reaches: page x per_page at most this (as Elasticsearch's
# max_result_window), in every mode, so that no search ranks, fuses or fetches more hits.
MAX_RESULT_WINDOW = 10_000
# Room for every category of arXiv's taxonomy (176) in one list: the web page groups them.
MAX_FACET_SIZE = 200
MAX_QUERY_LENGTH = 10_000
MAX_FILTER_VALUES = 50
DEFAULT_PER_PAGE = 10
DEFAULT_FACET_SIZE = 10


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What to search for. Filters are OR within a facet and AND across facets.

    `filters` maps facet names (facets.FACET_NAMES) to the values selected; `q` is parsed into
    `tree` (the query language, querylang) when the request is made, so a malformed query fails
    here, with the position of the problem, whichever engine would run it.
    """

    q: str = ""
    # Facet name -> selected values (a single value or any iterable is accepted too).
    filters: Mapping[str, tuple[str | int, ...]] = field(default_factory=dict, hash=False)
    year_from: int | None = None
    year_to: int | None = None
    sort: str | None = None  # None: relevance with a query, newest without one
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    facets: tuple[str, ...] = FACET_NAMES
    facet_size: int = DEFAULT_FACET_SIZE
    highlight: bool = True
    fields: tuple[str, ...] = SEARCH_FIELDS
    # `exclude`: subject filters and counts (category, subject) see primary categories only.
    crosslists: str = "include"
    # lexical | hybrid | semantic (domain/modes.py); None: hybrid where the index has vectors and
    # there is a query, lexical otherwise (the service decides: SearchService.search_request).
    mode: str | None = None
    tree: QueryTree = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("facets", "fields"):
            object.__setattr__(self, name, _strings(name, getattr(self, name)))
        if not isinstance(self.highlight, bool):
            raise InvalidRequest("highlight must be true or false", parameter="highlight")
        if not isinstance(self.q, str):
            raise InvalidRequest("q must be a string", parameter="q")
        if len(self.q) > MAX_QUERY_LENGTH:
            raise InvalidRequest(f"q is longer than {MAX_QUERY_LENGTH} characters", parameter="q")
        object.__setattr__(self, "filters", _checked_filters(self.filters))
        _check_choice("sort", self.sort, SORTS, allow_none=True)
        _check_choice("crosslists", self.crosslists, CROSSLISTS)
        _check_choice("mode", self.mode, MODES, allow_none=True)
        for facet in self.facets:
            _check_choice("facets", facet, FACET_NAMES)
        if not self.fields:
            raise InvalidRequest("fields must name at least one field", parameter="fields")
        for name in self.fields:
            _check_choice("fields", name, SEARCH_FIELDS)
        check_int("page", self.page, 1, MAX_PAGE)
        check_int("per_page", self.per_page, 1, MAX_PER_PAGE)
        if self.page * self.per_page > MAX_RESULT_WINDOW:
            raise InvalidRequest(
                f"page x per_page must be at most {MAX_RESULT_WINDOW:,}: a search shows its "
                f"first {MAX_RESULT_WINDOW:,} results (narrow it with words or filters to see "
                "others)",
                parameter="page",
                value=str(self.page),
            )
        check_int("facet_size", self.facet_size, 1, MAX_FACET_SIZE)
        # year_from after year_to is a range of no years: nothing matches, as in Solr and
        # Elasticsearch (and as the OpenAPI document, which cannot relate two parameters, says).
        for name in ("year_from", "year_to"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), MIN_YEAR, MAX_YEAR)
        object.__setattr__(self, "tree", parse_query(self.q))

    @classmethod
    def from_params(cls, q: str = "", **params: Any) -> SearchRequest:
        """A request from the parameter names of the HTTP and Python APIs, where each facet's
        filter is a keyword of its own (`author=[...]`, `year=2021`)."""
        filters = {name: params.pop(name) for name in FACET_NAMES if name in params}
        unknown = sorted(set(params) - _OPTIONS)
        if unknown:
            raise InvalidRequest(
                f"unknown parameter {unknown[0]!r}: filters are {', '.join(FACET_NAMES)}",
                parameter=unknown[0],
            )
        return cls(q=q, filters=filters, **params)

    def evolve(self, **changes: Any) -> SearchRequest:
        """This request with `changes`, checked as a new request is; `q` is parsed once per
        search: with `q` unchanged the new request keeps this one's tree."""
        if "q" in changes and changes["q"] != self.q:
            return replace(self, **changes)
        changes.pop("q", None)
        evolved = replace(self, q="", **changes)  # an empty query parses at once
        object.__setattr__(evolved, "q", self.q)
        object.__setattr__(evolved, "tree", self.tree)
        return evolved

    def with_mode(self, mode: str) -> SearchRequest:
        """This request in `mode` (the one the service chose), `q` not parsed again."""
        return self.evolve(mode=mode)

    @property
    def primary_only(self) -> bool:
        """Whether subject facets see each record's primary category only."""
        return self.crosslists == "exclude"

    @property
    def effective_sort(self) -> str:
        if self.sort:
            return self.sort
        return "relevance" if self.q.strip() else "newest"

    def selected(self, facet: str) -> tuple[str, ...]:
        """The filter values of a facet, as strings (the form facet values take)."""
        facet_named(facet)
        return tuple(str(value) for value in self.filters.get(facet, ()))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"q": self.q}
        for name in FACET_NAMES:
            data[name] = list(self.filters.get(name, ()))
        data.update(
            {
                "year_from": self.year_from,
                "year_to": self.year_to,
                "sort": self.effective_sort,
                "page": self.page,
                "per_page": self.per_page,
                "facets": list(self.facets),
                "facet_size": self.facet_size,
                "highlight": self.highlight,
                "fields": list(self.fields),
                "crosslists": self.crosslists,
                "mode": self.mode,
            }
        )
        return data


def query_params(request: SearchRequest, *, omit: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The query-string pairs of `request` (the HTTP API's parameters, which params.py turns
    back into it), in a stable order, defaults left out (and the parameters named in `omit`)."""
    pairs: list[tuple[str, str]] = []
    if request.q:
        pairs.append(("q", request.q))
    for name in FACET_NAMES:
        pairs.extend((name, value) for value in request.selected(name))
    for name in ("year_from", "year_to", "sort"):
        if getattr(request, name) is not None:
            pairs.append((name, str(getattr(request, name))))
    if request.page != 1:
        pairs.append(("page", str(request.page)))
    if request.per_page != DEFAULT_PER_PAGE:
        pairs.append(("per_page", str(request.per_page)))
    if request.facets != FACET_NAMES:
        pairs.append(("facets", ",".join(request.facets)))
    if request.facet_size != DEFAULT_FACET_SIZE:
        pairs.append(("facet_size", str(request.facet_size)))
    if not request.highlight:
        pairs.append(("highlight", "false"))
    if request.fields != SEARCH_FIELDS:
        pairs.append(("fields", ",".join(request.fields)))
    if request.crosslists != "include":
        pairs.append(("crosslists", request.crosslists))
    if request.mode is not None:
        pairs.append(("mode", request.mode))
    return [pair for pair in pairs if pair[0] not in omit]


# The keyword arguments a request takes besides `q` and the facets' filters.
_OPTIONS = frozenset(f.name for f in fields(SearchRequest) if f.init) - {"q", "filters"}


def _strings(name: str, value: object) -> tuple[str, ...]:
    """A name list given as one string or an iterable of them."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable):
        raise InvalidRequest(f"{name} must be a list of names", parameter=name)
    return tuple(value)


def _checked_filters(
    filters: Mapping[str, Iterable[str | int] | str | int],
) -> dict[str, tuple[str | int, ...]]:
    """Each facet's selection as a tuple of distinct values of the facet's type."""
    if not isinstance(filters, Mapping):
        raise InvalidRequest("filters must map facet names to values", parameter="filters")
    checked: dict[str, tuple[str | int, ...]] = {}
    for name, values in filters.items():
        try:
            facet = facet_named(name)
        except UnknownFacet:
            raise InvalidRequest(
                f"unknown filter {name!r}: filters are {', '.join(FACET_NAMES)}", parameter=name
            ) from None
        if isinstance(values, str | int) or not isinstance(values, Iterable):
            values = (values,)  # one value; filter_value refuses what is not one
        selected = tuple(dict.fromkeys(facet.filter_value(value) for value in values))
        if len(selected) > MAX_FILTER_VALUES:
            raise InvalidRequest(f"at most {MAX_FILTER_VALUES} values of {name}", parameter=name)
        if selected:
            checked[name] = selected
    return checked


def _check_choice(name: str, value: object, choices: tuple[str, ...], allow_none=False) -> None:
    if value is None and allow_none:
        return
    if value not in choices:
        raise InvalidRequest(
            f"{name} must be one of {', '.join(choices)}", parameter=name, value=str(value)
        )


def check_text(name: str, value: object, *, empty: bool = True) -> str:
    """`value` if it is a string (non-empty unless `empty`), else InvalidRequest naming it."""
    if not isinstance(value, str) or (not empty and not value):
        raise InvalidRequest(
            f"{name} must be a{'' if empty else ' non-empty'} string", parameter=name
        )
    return value


def check_int(name: str, value: object, low: int, high: int) -> int:
    """`value` if it is an integer from `low` to `high`, else InvalidRequest naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRequest(
            f"{name} must be an integer from {low} to {high}", parameter=name, value=str(value)
        )
    return value


@dataclass(frozen=True, slots=True)
class FacetValue:
    """One value of a facet with the number of matching records."""

    value: str
    count: int
    selected: bool = False
    # How people read the value ("Distributed, Parallel, and Cluster Computing" for cs.DC) and
    # the code of what it belongs to (its archive); None until `labelled` fills them.
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


def with_selected(
    top: Iterable[FacetValue], selected: Iterable[str], count: Callable[[str], int]
) -> tuple[FacetValue, ...]:
    """A facet's top values, then the selected values they leave out, flagged, each with
    `count(value)` (the records its filter selects, counted as the facet's values are: 0 when
    none), most records first, ties by value."""
    # A reader sees every value they selected, to unselect it, and the top N stays what it is
    # without the selection: the values it leaves out (ranked beyond it, or matching nothing)
    # come after it, beyond facet_size. A value it lists under another spelling is not listed
    # again: filters match case- and accent-insensitively.
    top = tuple(top)
    listed = {fold(value.value) for value in top if value.selected}
    missing: dict[str, str] = {}
    for value in selected:
        if fold(value) not in listed:
            missing.setdefault(fold(value), value)
    extra = [FacetValue(value, count(value), True) for value in missing.values()]
    return top + tuple(sorted(extra, key=lambda value: (-value.count, value.value)))


def labelled(facet: str, values: Iterable[FacetValue]) -> tuple[FacetValue, ...]:
    """`values` of `facet` with their labels and parents (subjects named from the taxonomy)."""
    describe = facet_named(facet).describe
    result = []
    for value in values:
        label, parent = describe(value.value)
        result.append(replace(value, label=label, parent=parent))
    return tuple(result)


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


def page_count(total: int, per_page: int) -> int:
    return max(1, math.ceil(total / per_page)) if per_page else 1


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
    # Of `total`, the records only meaning brought (without the query's words: hybrid and
    # semantic searches of plain words); the others match the query.
    added_by_meaning: int = 0
    # Whether meaning could add records to this search: a hybrid or semantic search of plain
    # words. False for a query using the language: meaning ranks its matches and adds none.
    meaning_adds: bool = False

    @property
    def page(self) -> int:
        return self.request.page

    @property
    def per_page(self) -> int:
        return self.request.per_page

    @property
    def pages(self) -> int:
        """Pages of `per_page` hits, as many as the result window reaches (MAX_RESULT_WINDOW:
        a page past it is refused, so no link leads there)."""
        reachable = MAX_RESULT_WINDOW // self.request.per_page
        return min(page_count(self.total, self.request.per_page), reachable)

    @property
    def matched_by_words(self) -> int:
        """Of `total`, the records that match the query (its words, or its query-language
        expression)."""
        return self.total - self.added_by_meaning

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.request.to_dict(),
            "total": self.total,
            "matched_by_words": self.matched_by_words,
            "added_by_meaning": self.added_by_meaning,
            "meaning_adds": self.meaning_adds,
            "page": self.page,
            "per_page": self.per_page,
            "pages": self.pages,
            "took_ms": round(self.took_ms, 3),
            "hits": [hit.to_dict() for hit in self.hits],
            "facets": {
                name: [value.to_dict() for value in values] for name, values in self.facets.items()
            },
            "suggestion": self.suggestion,
            "mode": self.mode,
        }


def records_count(count: int) -> str:
    return f"{count:,} record{'' if count == 1 else 's'}"


def meaning_breakdown(result: SearchResult) -> str | None:
    """How meaning took part in a result, for a person (the CLI's first line, the web page):
    `4 with your words, 6 related by meaning`; None for a lexical search or no records."""
    if result.mode == "lexical" or not result.total:
        return None
    if result.meaning_adds:
        return (
            f"{result.matched_by_words:,} with your words, "
            f"{result.added_by_meaning:,} related by meaning"
        )
    ranks = "ranks them" if result.mode == "semantic" else "ranks them with the words"
    return f"only your query's matches: meaning {ranks} and adds none"


@dataclass(frozen=True, slots=True)
class Suggestions:
    """Autocomplete answers for a prefix: title words/titles and author names."""

    prefix: str
    titles: tuple[str, ...]
    authors: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "titles": list(self.titles), "authors": list(self.authors)}


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
        return page_count(self.total, self.per_page)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "total": self.total,
            "page": self.page,
            "per_page": self.per_page,
            "pages": self.pages,
            "records": [record.to_dict() for record in self.records],
            "years": [v.to_dict() for v in self.years],
            "categories": [v.to_dict() for v in self.categories],
            "coauthors": [v.to_dict() for v in self.coauthors],
        }


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What an index holds: document count, top facet values, cardinalities, build time."""

    documents: int
    facets: dict[str, tuple[FacetValue, ...]]
    cardinalities: dict[str, int]
    built_at: datetime | None
    version: str
    # Where the index is, for whoever opened it (`searchsvc stats` prints it). Not in to_dict():
    # that is what the HTTP API sends, and a server's paths (or Solr hosts) are its own.
    index_dir: str = ""
    size_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The statistics without the index location, as the API sends them."""
        return {
            "documents": self.documents,
            "facets": {k: [v.to_dict() for v in vs] for k, vs in self.facets.items()},
            "cardinalities": dict(self.cardinalities),
            "built_at": self.built_at.isoformat() if self.built_at else None,
            "version": self.version,
            "size_bytes": self.size_bytes,
        }
