"""The MCP tools over a SearchService: `build_server(service)` is a FastMCP server (the official
SDK) with five read-only tools, the same over stdio and over streamable HTTP.

- `search`: ranked records for a query, with the API's facet filters (category, subject,
  author, year range), mode and paging (per_page at most MAX_PER_PAGE, within the 10,000-result
  window);
- `get_record`: one record by its id;
- `lookup`: a record by identifier, an arXiv id (any version, `arXiv:` prefix or arxiv.org URL),
  a record id or a DOI that is some record's id (DOIs are stored on records but not searchable);
- `similar`: records like a record (the API's /records/<id>/similar);
- `facet_values`: a facet's values and counts among a query's matches.

Each record answered carries what a citation needs (title, authors, year, identifier, URL) and,
from a search, a short passage with the matched words in **bold**. A bad argument (an unknown
facet, a page beyond the window, an empty query) is a tool error whose text says what to change:
searchsvc's own errors become ToolError with their message, never a traceback.
"""

from __future__ import annotations

import functools
import html
import inspect
import logging
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from searchsvc.domain.errors import RecordNotFound, SearchsvcError
from searchsvc.domain.facets import FACET_NAMES, facet_named
from searchsvc.domain.query import (
    MAX_PAGE,
    MAX_RESULT_WINDOW,
    SearchRequest,
    SearchResult,
    check_int,
)
from searchsvc.domain.records import ARXIV_VERSION, Record, is_arxiv_id
from searchsvc.service import SearchService

NAME = "searchsvc"
MAX_PER_PAGE = 25
DEFAULT_PER_PAGE = 10
MAX_SIMILAR = 25
MAX_FACET_VALUES = 100
PASSAGE_CHARS = 320
INSTRUCTIONS = (
    "Search an index of scholarly publication records (arXiv and others). Use `search` to find "
    "records by words, with filters by category, subject, author and year; `get_record` or "
    "`lookup` to fetch one by id, arXiv id or DOI-as-id; `similar` for related records; "
    "`facet_values` to see which categories, authors or years a query's matches have. Every "
    "record comes with its title, authors, year, identifier and URL for citing it."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True)

_MARK = re.compile(r"</?mark>")
_SPACE = re.compile(r"\s+")
_ARXIV_PREFIX = re.compile(
    r"^(?:arxiv:|https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE
)
_DOI_PREFIX = re.compile(r"^(?:doi:|https?://(?:dx\.)?doi\.org/)", re.IGNORECASE)

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger(__name__)


def build_server(
    service: Callable[[], SearchService], *, local: bool = False, **settings: Any
) -> FastMCP:
    """The FastMCP server whose tools read the SearchService `service()` returns (called per
    tool call: the mounted server reads the process's service of the Flask app). `local`: the
    client runs on this machine (stdio), and errors may name the index's path, as the command
    line's do. `settings` go to FastMCP (stateless_http, json_response...)."""
    settings.setdefault("log_level", "WARNING")
    server = FastMCP(NAME, instructions=INSTRUCTIONS, **settings)
    tools = _Tools(service, local)
    for name, title in (
        ("search", "Search records"),
        ("get_record", "Get a record by id"),
        ("lookup", "Look up a record by identifier"),
        ("similar", "Records similar to a record"),
        ("facet_values", "Facet values and counts"),
    ):
        function = getattr(tools, name)
        server.add_tool(
            function,
            name=name,
            title=title,
            description=inspect.cleandoc(function.__doc__ or ""),
            annotations=READ_ONLY,
        )
    return server


def _bounded(low: int, high: int, description: str) -> Any:
    """A number's description and bounds in the tool's input schema, left to the code to check:
    its error says what the bounds are in plain words (pydantic's carries a URL)."""
    return Field(description=description, json_schema_extra={"minimum": low, "maximum": high})


def _tool_errors(function: F) -> F:
    """searchsvc's errors as tool errors with their message (what to change), no traceback;
    any other failure logged here and answered without its details."""

    @functools.wraps(function)
    def wrapper(self: _Tools, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(self, *args, **kwargs)
        except ToolError:
            raise
        except SearchsvcError as exc:
            message = (exc.local_message if self.local else None) or exc.message
            raise ToolError(message) from None
        except Exception:
            log.exception("MCP tool %s failed", function.__name__)
            raise ToolError("internal error: the tool failed (the server's log says why)") from None

    return wrapper  # type: ignore[return-value]


class _Tools:
    """The tools, bound to a service; each docstring is the tool's description."""

    def __init__(self, service: Callable[[], SearchService], local: bool) -> None:
        self.service = service
        self.local = local

    @_tool_errors
    def search(
        self,
        query: Annotated[
            str,
            Field(
                description="Words to find in titles, abstracts and author names; the query "
                'language is accepted: "exact phrase", OR, NOT, title:word, author:name, '
                "category:cs.DC, year:2020..2023. May be empty only with a filter."
            ),
        ] = "",
        category: Annotated[
            list[str] | None,
            Field(
                description="Only records in one of these arXiv categories, or archives "
                "(cs.DC, cs, hep-ph)"
            ),
        ] = None,
        subject: Annotated[
            list[str] | None,
            Field(description="Only records in one of these subjects (cs, physics, grp_cs)"),
        ] = None,
        author: Annotated[
            list[str] | None,
            Field(description="Only records by one of these authors (full names as indexed)"),
        ] = None,
        year_from: Annotated[
            int | None, Field(description="Only records of this year or later")
        ] = None,
        year_to: Annotated[
            int | None, Field(description="Only records of this year or earlier")
        ] = None,
        mode: Annotated[
            Literal["lexical", "hybrid", "semantic"] | None,
            Field(
                description="lexical: matching words; hybrid/semantic: also by meaning, where "
                "the index has vectors. Default: hybrid where possible, else lexical."
            ),
        ] = None,
        sort: Annotated[
            Literal["relevance", "newest", "oldest", "title"] | None,
            Field(description="Default: relevance with words, newest without"),
        ] = None,
        page: Annotated[int, _bounded(1, MAX_PAGE, "Page of results, from 1")] = 1,
        per_page: Annotated[int, _bounded(1, MAX_PER_PAGE, "Results per page")] = DEFAULT_PER_PAGE,
    ) -> dict[str, Any]:
        """Search the scholarly records: ranked results with title, authors, year, identifier,
        URL and a short passage where the words matched (in **bold**). Filters are OR within
        one (several categories) and AND across them. Only the first 10,000 results of a search
        can be paged to (page x per_page at most 10,000): narrow the query to see others."""
        filters = {
            name: values
            for name, values in (("category", category), ("subject", subject), ("author", author))
            if values
        }
        check_int("per_page", per_page, 1, MAX_PER_PAGE)
        if not query.strip() and not filters and year_from is None and year_to is None:
            raise ToolError(
                "query is empty: give words to search for, or at least one filter "
                "(category, subject, author, year_from, year_to)"
            )
        request = SearchRequest.from_params(
            query,
            **filters,
            year_from=year_from,
            year_to=year_to,
            sort=sort,
            page=page,
            per_page=per_page,
            facets=(),
            mode=mode,
        )
        result = self.service().search_request(request)
        return _search_answer(result)

    @_tool_errors
    def get_record(
        self, id: Annotated[str, Field(description="The record's id, e.g. 2301.00001")]
    ) -> dict[str, Any]:
        """One record by its id, in full: title, authors, year, abstract, categories,
        identifier (arXiv id, DOI), URL, journal reference and comments."""
        return _full_record(self.service().get(id))

    @_tool_errors
    def lookup(
        self,
        identifier: Annotated[
            str,
            Field(
                description="An arXiv id (2301.00001, 2301.00001v2, arXiv:hep-th/9901001, an "
                "arxiv.org URL), a record id, or a DOI (10.xxxx/..., doi:, https://doi.org/)"
            ),
        ],
    ) -> dict[str, Any]:
        """Find the record an identifier names. Records are found by their id: an arXiv
        record's id is its arXiv id (without version), so arXiv ids and URLs are found; other
        records are found by their own id. A DOI is found only when it is a record's id: the
        DOIs stored on records are not searchable, so a paper known by its DOI alone may not be
        found here (search its title instead). Answers `found: false` with what was tried when
        nothing matches."""
        tried = _candidate_ids(identifier)
        if not tried:
            raise ToolError("identifier is empty: give an arXiv id, a record id or a DOI")
        service = self.service()
        for candidate in tried:
            try:
                record = service.get(candidate)
            except RecordNotFound:
                continue
            return {"found": True, "matched_id": candidate, "record": _full_record(record)}
        return {
            "found": False,
            "tried_ids": tried,
            "note": "no record has one of these ids; DOIs are not searchable, only ids are: "
            "search the title to find a paper known by DOI",
        }

    @_tool_errors
    def similar(
        self,
        id: Annotated[str, Field(description="The id of the record to find others like")],
        limit: Annotated[int, _bounded(1, MAX_SIMILAR, "How many records at most")] = 10,
    ) -> dict[str, Any]:
        """Records similar to a record (more like this, on its title and abstract words), most
        similar first, each with what a citation needs."""
        hits = self.service().similar(id, check_int("limit", limit, 1, MAX_SIMILAR))
        return {
            "id": id,
            "results": [{**_citation(hit.record), "score": _score(hit.score)} for hit in hits],
        }

    @_tool_errors
    def facet_values(
        self,
        facet: Annotated[str, Field(description=f"The facet: one of {', '.join(FACET_NAMES)}")],
        query: Annotated[
            str,
            Field(
                description="Count among this query's matches (same syntax as search); "
                "empty: among all records"
            ),
        ] = "",
        limit: Annotated[int, _bounded(1, MAX_FACET_VALUES, "How many values at most")] = 20,
    ) -> dict[str, Any]:
        """A facet's values with the number of matching records each, most records first
        (years newest first): which categories, subjects, authors or years a query's matches
        have. Category and subject values come with their names (cs.DC: Distributed, Parallel,
        and Cluster Computing); a value can be passed back to `search` as a filter."""
        facet_named(facet)  # an unknown one: its error lists the facets
        check_int("limit", limit, 1, MAX_FACET_VALUES)
        request = SearchRequest(
            q=query, per_page=1, facets=(facet,), facet_size=limit, highlight=False
        )
        result = self.service().search_request(request)
        return {
            "facet": facet,
            "query": query,
            "total": result.total,
            "values": [
                {"value": value.value, "label": value.label or value.value, "count": value.count}
                for value in result.facets.get(facet, ())
            ],
        }


def _search_answer(result: SearchResult) -> dict[str, Any]:
    request = result.request
    results = []
    for rank, hit in enumerate(result.hits, start=(request.page - 1) * request.per_page + 1):
        passage = _passage(hit.highlights.get("abstract") or hit.record.abstract)
        results.append(
            {"rank": rank, **_citation(hit.record), "passage": passage, "score": _score(hit.score)}
        )
    answer: dict[str, Any] = {
        "query": request.q,
        "total": result.total,
        "page": request.page,
        "per_page": request.per_page,
        "pages": result.pages,
        "mode": result.mode,
        "results": results,
    }
    if result.suggestion:
        answer["did_you_mean"] = result.suggestion
    if request.page < result.pages:
        answer["next_page"] = request.page + 1
    elif result.total > MAX_RESULT_WINDOW and request.page == result.pages:
        answer["note"] = (
            f"only the first {MAX_RESULT_WINDOW:,} of {result.total:,} results can be paged "
            "to: narrow the query or add filters to see others"
        )
    return answer


def _citation(record: Record) -> dict[str, Any]:
    """What citing a record needs: title, authors, year, identifier and URL."""
    arxiv_id = record.id if is_arxiv_id(record.id) else None
    if arxiv_id:
        identifier = f"arXiv:{arxiv_id}"
    elif record.doi:
        identifier = f"doi:{record.doi}"
    else:
        identifier = record.id
    url = record.url
    if not url and arxiv_id:
        url = f"https://arxiv.org/abs/{arxiv_id}"
    elif not url and record.doi:
        url = f"https://doi.org/{record.doi}"
    citation: dict[str, Any] = {
        "id": record.id,
        "title": record.title,
        "authors": list(record.authors),
        "year": record.year,
        "identifier": identifier,
        "url": url,
    }
    if arxiv_id:
        citation["arxiv_id"] = arxiv_id
    if record.doi:
        citation["doi"] = record.doi
    if record.journal_ref:
        citation["journal_ref"] = record.journal_ref
    if record.categories:
        citation["primary_category"] = record.categories[0]
    return citation


def _full_record(record: Record) -> dict[str, Any]:
    data = _citation(record)
    data.update(
        abstract=record.abstract,
        categories=list(record.categories),
        source=record.source,
        comments=record.comments,
    )
    return data


def _passage(highlighted: str) -> str:
    """The highlight's HTML as plain text, matched words in **bold**, at most PASSAGE_CHARS
    characters (cut at a word)."""
    text = html.unescape(_MARK.sub("**", highlighted))
    text = _SPACE.sub(" ", text).strip()
    if len(text) <= PASSAGE_CHARS:
        return text
    cut = text[:PASSAGE_CHARS].rsplit(" ", 1)[0]
    if cut.count("**") % 2:  # a bold word cut open
        cut += "**"
    return cut + " …"


def _score(score: float | None) -> float | None:
    return None if score is None else round(float(score), 4)


def _candidate_ids(identifier: str) -> list[str]:
    """The record ids an identifier may be, most literal first, each once."""
    text = identifier.strip() if isinstance(identifier, str) else ""
    candidates = [text]
    arxiv = _ARXIV_PREFIX.sub("", text).removesuffix(".pdf").strip("/")
    if is_arxiv_id(arxiv):
        candidates += [arxiv, ARXIV_VERSION.sub("", arxiv)]
    doi = _DOI_PREFIX.sub("", text)
    if doi.startswith("10."):
        candidates += [doi, doi.lower()]
    return [candidate for candidate in dict.fromkeys(candidates) if candidate]
