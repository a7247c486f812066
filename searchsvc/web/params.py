"""The search page's URL: query string -> SearchRequest, and SearchRequest -> links that change it.

Every state of the page (query, filters, sort, page) lives in the query string, so the links built
here are the page's only navigation: bookmarks, Back/Forward and JavaScript-free use all follow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlencode

from werkzeug.datastructures import MultiDict

from searchsvc.errors import InvalidRequest
from searchsvc.query import MAX_FACET_SIZE, MAX_PAGE, MAX_QUERY_LENGTH, SORTS, SearchRequest
from searchsvc.records import MAX_YEAR, MIN_YEAR

PER_PAGE = 10
_INTEGER = re.compile(r"-?[0-9]{1,9}")
# Facet counts fetched per search: enough years for the histogram, and a "more" list per facet.
FACET_SIZE = min(50, MAX_FACET_SIZE)
# The query-string names of the repeatable filters, with the SearchRequest field each fills.
FILTERS = {"author": "authors", "category": "categories", "year": "years"}


def parse_search_args(args: MultiDict[str, str]) -> SearchRequest:
    """The SearchRequest a search page URL asks for; InvalidRequest names the bad parameter."""
    years = tuple(_integer("year", value) for value in _values(args, "year"))
    sort = (args.get("sort") or "").strip() or None
    if sort is not None and sort not in SORTS:
        raise InvalidRequest(
            f"Sort must be one of: {', '.join(SORTS)}", parameter="sort", value=sort
        )
    year_from = _optional_integer(args, "year_from")
    year_to = _optional_integer(args, "year_to")
    page = _optional_integer(args, "page")
    try:
        return SearchRequest(
            q=args.get("q", ""),
            authors=_values(args, "author"),
            categories=_values(args, "category"),
            years=years,
            year_from=year_from,
            year_to=year_to,
            sort=sort,
            page=1 if page is None else page,
            per_page=PER_PAGE,
            facet_size=FACET_SIZE,
        )
    except InvalidRequest as exc:
        raise _for_people(exc, year_from, year_to) from exc


def _for_people(
    error: InvalidRequest, year_from: int | None, year_to: int | None
) -> InvalidRequest:
    """The same error, worded for someone who followed a link rather than wrote an API call."""
    parameter = error.details.get("parameter")
    if parameter == "q":
        message = f"The search text is too long: at most {MAX_QUERY_LENGTH:,} characters, please"
    elif parameter == "page":
        message = f"The page number must be from 1 to {MAX_PAGE:,}"
    elif parameter == "year_from" and year_from is not None and year_to is not None:
        if year_from > year_to:
            message = f"The year range starts after it ends (from {year_from} to {year_to})"
        else:
            message = f"Years must be from {MIN_YEAR} to {MAX_YEAR}"
    elif parameter in ("year", "year_from", "year_to"):
        message = f"Years must be from {MIN_YEAR} to {MAX_YEAR}"
    else:
        return error
    return InvalidRequest(message, **error.details)


def parse_page(args: MultiDict[str, str]) -> int:
    """The `page` parameter of a paged view (1 when absent)."""
    page = _optional_integer(args, "page")
    if page is None:
        return 1
    if not 1 <= page <= MAX_PAGE:
        raise InvalidRequest(
            f"The page number must be from 1 to {MAX_PAGE:,}", parameter="page", value=str(page)
        )
    return page


def _values(args: MultiDict[str, str], name: str) -> tuple[str, ...]:
    # A plain GET form sends empty fields too (`year_from=`): they mean "not set".
    return tuple(dict.fromkeys(v.strip() for v in args.getlist(name) if v.strip()))


def _optional_integer(args: MultiDict[str, str], name: str) -> int | None:
    text = (args.get(name) or "").strip()
    return _integer(name, text) if text else None


def _integer(name: str, text: str) -> int:
    what, example = ("A year", "2021") if name.startswith("year") else ("The page number", "2")
    if not _INTEGER.fullmatch(text):
        raise InvalidRequest(
            f"{what} must be a whole number, such as {example} — not “{text[:40]}”",
            parameter=name,
            value=text,
        )
    return int(text)


def query_pairs(request: SearchRequest, *, page: int | None = None) -> list[tuple[str, str]]:
    """The query-string pairs of a request, in a stable order, defaults left out."""
    pairs: list[tuple[str, str]] = []
    if request.q:
        pairs.append(("q", request.q))
    for name, field in FILTERS.items():
        pairs.extend((name, str(value)) for value in getattr(request, field))
    for name in ("year_from", "year_to"):
        if getattr(request, name) is not None:
            pairs.append((name, str(getattr(request, name))))
    if request.sort:
        pairs.append(("sort", request.sort))
    page = request.page if page is None else page
    if page > 1:
        pairs.append(("page", str(page)))
    return pairs


def search_href(pairs: Iterable[tuple[str, str]]) -> str:
    query = urlencode(list(pairs))
    return f"/?{query}" if query else "/"


class SearchLinks:
    """Links from the current search to its neighbours: another page, one filter more or less."""

    def __init__(self, request: SearchRequest) -> None:
        self.request = request

    def page(self, number: int) -> str:
        return search_href(query_pairs(self.request, page=number))

    def sorted_by(self, sort: str) -> str:
        pairs = [p for p in query_pairs(self.request, page=1) if p[0] != "sort"]
        return search_href([*pairs, ("sort", sort)])

    def with_query(self, q: str) -> str:
        pairs = [p for p in query_pairs(self.request, page=1) if p[0] != "q"]
        return search_href([("q", q), *pairs])

    def adding(self, name: str, value: str) -> str:
        """Narrow the search (back to page 1) with one more filter value."""
        pairs = query_pairs(self.request, page=1)
        if (name, str(value)) not in pairs:
            pairs.append((name, str(value)))
        return search_href(pairs)

    def adding_category(self, value: str) -> str:
        return self.adding("category", value)

    def only_year(self, value: int | str) -> str:
        """Narrow to one year: replaces any year filter or range."""
        pairs = [
            p
            for p in query_pairs(self.request, page=1)
            if p[0] not in ("year", "year_from", "year_to")
        ]
        return search_href([*pairs, ("year", str(value))])

    def removing(self, *names: str, value: str | None = None) -> str:
        """Drop filter `names` (only `value` of them, when given), back to page 1."""
        return search_href(
            (key, v)
            for key, v in query_pairs(self.request, page=1)
            if key not in names or (value is not None and v != str(value))
        )

    def pairs_without(self, *names: str) -> list[tuple[str, str]]:
        """The current state minus `names` and the page (for the hidden fields of a form)."""
        return [p for p in query_pairs(self.request, page=1) if p[0] not in names]

    def without_filters(self) -> str:
        keep = ("q", "sort")
        return search_href(p for p in query_pairs(self.request, page=1) if p[0] in keep)

    @property
    def filter_count(self) -> int:
        r = self.request
        ranges = (r.year_from is not None) or (r.year_to is not None)
        return len(r.authors) + len(r.categories) + len(r.years) + int(ranges)

    @property
    def has_filters(self) -> bool:
        r = self.request
        return bool(
            r.authors or r.categories or r.years or r.year_from is not None or r.year_to is not None
        )
