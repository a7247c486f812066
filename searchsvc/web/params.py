"""The search page's URL: query string -> SearchRequest, and SearchRequest -> links that change it.

Every state of the page (query, filters, sort, page) lives in the query string, so the links built
here are the page's only navigation: bookmarks, Back/Forward and JavaScript-free use all follow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlencode

from werkzeug.datastructures import MultiDict

from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.query import (
    MAX_FACET_SIZE,
    MAX_PAGE,
    MAX_QUERY_LENGTH,
    SORTS,
    SearchRequest,
    query_params,
)
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR
from searchsvc.params import check_year_order, search_request_from

PER_PAGE = 10
_INTEGER = re.compile(r"-?[0-9]{1,9}")
# Facet counts fetched per search: as many as allowed, so that each subject of the sidebar lists
# its categories (the flat facets, year and author, show fewer: sidebar.FLAT_FACET_SIZE).
FACET_SIZE = MAX_FACET_SIZE
YEAR_PARAMETERS = ("year", "year_from", "year_to")


def parse_search_args(args: MultiDict[str, str]) -> SearchRequest:
    """The SearchRequest a search page URL asks for; InvalidRequest names the bad parameter.

    The translation is the API's (params.py); the page only fixes its page size and words the
    errors for someone who followed a link rather than wrote an API call.
    """
    try:
        request = search_request_from(
            args,
            overrides={"per_page": PER_PAGE, "facet_size": FACET_SIZE},
            blank_is_absent=True,
        )
        return check_year_order(request)
    except InvalidRequest as exc:
        raise _for_people(exc, args) from exc


def _for_people(error: InvalidRequest, args: MultiDict[str, str]) -> InvalidRequest:
    """The same error, worded for someone who followed a link rather than wrote an API call."""
    parameter = str(error.details.get("parameter") or "")
    given = [value.strip() for value in args.getlist(parameter) if value.strip()]
    not_whole = next((value for value in given if not _INTEGER.fullmatch(value)), None)
    if parameter == "q":
        message = f"The search text is too long: at most {MAX_QUERY_LENGTH:,} characters, please"
    elif parameter == "page":
        message = (
            f"The page number must be a whole number, such as 2 — not “{not_whole[:40]}”"
            if not_whole is not None
            else f"The page number must be from 1 to {MAX_PAGE:,}"
        )
    elif parameter in YEAR_PARAMETERS and not_whole is not None:
        message = f"A year must be a whole number, such as 2021 — not “{not_whole[:40]}”"
    elif parameter in YEAR_PARAMETERS:
        year_from, year_to = (_integer_or_none(args, name) for name in ("year_from", "year_to"))
        if parameter == "year_from" and year_from and year_to and year_from > year_to:
            message = f"The year range starts after it ends (from {year_from} to {year_to})"
        else:
            message = f"Years must be from {MIN_YEAR} to {MAX_YEAR}"
    elif parameter == "sort":
        message = f"Sort must be one of: {', '.join(SORTS)}"
    else:
        return error
    return InvalidRequest(message, **error.details)


def _integer_or_none(args: MultiDict[str, str], name: str) -> int | None:
    text = (args.get(name) or "").strip()
    return int(text) if _INTEGER.fullmatch(text) else None


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


def _optional_integer(args: MultiDict[str, str], name: str) -> int | None:
    text = (args.get(name) or "").strip()
    return _integer(name, text) if text else None


def _integer(name: str, text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise InvalidRequest(
            f"The page number must be a whole number, such as 2 — not “{text[:40]}”",
            parameter=name,
            value=text,
        )
    return int(text)


def query_pairs(request: SearchRequest, *, page: int | None = None) -> list[tuple[str, str]]:
    """The query-string pairs of a request, in a stable order, defaults left out (the page's
    fixed page size and facet size are not the URL's to say)."""
    if page is not None:
        request = request.evolve(page=page)
    return query_params(request, omit=("per_page", "facet_size"))


def search_href(pairs: Iterable[tuple[str, str]], path: str = "/") -> str:
    query = urlencode(list(pairs))
    return f"{path}?{query}" if query else path


class SearchLinks:
    """Links from the current search to its neighbours: another page, one filter more or less."""

    def __init__(self, request: SearchRequest) -> None:
        self.request = request

    def page(self, number: int) -> str:
        return search_href(query_pairs(self.request, page=number))

    def feed(self, path: str) -> str:
        """The Atom feed (served at `path`) of this search: its first page, in the feed's one
        order, newest first."""
        return search_href((p for p in query_pairs(self.request, page=1) if p[0] != "sort"), path)

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
        keep = ("q", "sort", "mode")
        return search_href(p for p in query_pairs(self.request, page=1) if p[0] in keep)

    @property
    def filter_count(self) -> int:
        """Active filters: facet values, a year range, and cross-lists left out."""
        r = self.request
        ranges = (r.year_from is not None) or (r.year_to is not None)
        return sum(len(values) for values in r.filters.values()) + int(ranges) + r.primary_only

    @property
    def has_filters(self) -> bool:
        r = self.request
        return bool(r.filters) or r.year_from is not None or r.year_to is not None or r.primary_only
