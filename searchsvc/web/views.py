"""The HTML pages: search (`/`), a record (`/records/<id>`) and an author (`/authors/<name>`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import Blueprint, Response, jsonify, render_template, request, url_for
from markupsafe import Markup, escape

from searchsvc.errors import InvalidRequest, QueryError, RecordNotFound
from searchsvc.extension import get_service
from searchsvc.facets import DISPLAYED_FACETS
from searchsvc.query import SORTS, Hit, SearchRequest, SearchResult
from searchsvc.records import Record
from searchsvc.web.bibtex import to_bibtex
from searchsvc.web.charts import year_bars
from searchsvc.web.params import SearchLinks, parse_page, parse_search_args, search_href

# Own static URL path: the app may have a `/static` of its own.
bp = Blueprint(
    "web", __name__, template_folder="templates", static_folder="static", static_url_path="/assets"
)

AUTHOR_PER_PAGE = 20
SIMILAR_LIMIT = 5
ABSTRACT_PREVIEW = 320
SORT_LABELS = {
    "relevance": "Relevance",
    "newest": "Newest first",
    "oldest": "Oldest first",
    "title": "Title (A–Z)",
}
HIGHLIGHTED_FIELDS = ("title", "abstract")
_MARK_TAG = re.compile(r"</?mark>")
# Values shown before the rest of a facet folds into a "more" disclosure.
FACET_VISIBLE = 8


@dataclass(frozen=True, slots=True)
class FacetOption:
    """A checkbox of the facet sidebar; `count` is None for a selected value outside the top N."""

    value: str
    count: int | None
    selected: bool


@dataclass(frozen=True, slots=True)
class FacetGroup:
    """One facet of the sidebar: the values shown at once and those folded under "more"."""

    name: str
    label: str
    shown: list[FacetOption]
    more: list[FacetOption]


@bp.get("/")
def search() -> tuple[str, int] | str:
    try:
        search_request = parse_search_args(request.args)
    except (InvalidRequest, QueryError) as exc:
        # The page stays usable: the form keeps what was typed, with the error above it.
        return _search_page(None, None, error=exc), 400
    result = get_service().search_request(search_request)
    return _search_page(search_request, result)


def _search_page(
    search_request: SearchRequest | None,
    result: SearchResult | None,
    error: Exception | None = None,
) -> str:
    # A request that failed validation is shown as an empty search, keeping the text the
    # person typed (unless the text itself was the problem).
    q = request.args.get("q", "")
    if isinstance(error, InvalidRequest) and getattr(error, "details", {}).get("parameter") == "q":
        q = ""
    links = SearchLinks(search_request or SearchRequest())
    return render_template(
        "web/search.html",
        q=q,
        search=search_request,
        result=result,
        error=error,
        links=links,
        feed_href=links.feed(url_for("api.search_feed")) if result else None,
        facet_groups=_facet_groups(result) if result else [],
        bars=year_bars(result.facets.get("year", ())) if result else [],
        sort_labels=SORT_LABELS,
        sorts=SORTS,
        explicit_sort=search_request.sort if search_request else None,
    )


def _facet_groups(result: SearchResult) -> list[FacetGroup]:
    """Sidebar checkboxes per facet; a selected value is always shown, even outside the top N."""
    groups = []
    for facet in DISPLAYED_FACETS:
        selected = set(result.request.selected(facet.name))
        options = [
            FacetOption(v.value, v.count, v.selected or v.value in selected)
            for v in result.facets.get(facet.name, ())
        ]
        listed = {option.value for option in options}
        options += [FacetOption(v, None, True) for v in sorted(selected - listed)]
        if facet.order == "value_descending":
            options.sort(key=lambda option: option.value, reverse=True)
        shown = [o for i, o in enumerate(options) if i < FACET_VISIBLE or o.selected]
        more = [o for i, o in enumerate(options) if i >= FACET_VISIBLE and not o.selected]
        groups.append(FacetGroup(facet.name, facet.label, shown, more))
    return groups


@bp.get("/records/<path:record_id>")
def record(record_id: str) -> Response | str:
    output = request.args.get("format", "html")
    if output == "bibtex":
        return record_bibtex(record_id)
    if output == "json":
        return record_json(record_id)
    if output != "html":
        raise InvalidRequest("format must be html, bibtex or json", parameter="format")
    found = _get_record(record_id)
    similar = get_service().similar(record_id, SIMILAR_LIMIT)
    return render_template(
        "web/record.html",
        record=found,
        similar=similar,
        category_href=lambda category: search_href([("category", category)]),
    )


@bp.get("/records/<path:record_id>.bib")
def record_bibtex(record_id: str) -> Response:
    text = to_bibtex(_get_record(record_id))
    filename = record_id.replace("/", "_")
    return Response(
        text,
        content_type="application/x-bibtex; charset=utf-8",
        headers={"Content-Disposition": f'inline; filename="{filename}.bib"'},
    )


@bp.get("/records/<path:record_id>.json")
def record_json(record_id: str) -> Response:
    return jsonify(_get_record(record_id).to_dict())


def _get_record(record_id: str) -> Record:
    try:
        return get_service().get(record_id)
    except RecordNotFound as exc:
        message = f"There is no record with the id “{record_id}”."
        raise RecordNotFound(message, id=record_id) from exc


@bp.get("/authors/<path:name>")
def author(name: str) -> str:
    page = parse_page(request.args)
    message = f"No records are attributed to “{name}”."
    try:
        view = get_service().author(name, page, AUTHOR_PER_PAGE)
    except RecordNotFound as exc:
        raise RecordNotFound(message, author=name) from exc
    if view.total == 0:
        raise RecordNotFound(message, author=name)
    return render_template(
        "web/author.html",
        view=view,
        bars=year_bars(view.years),
        page_href=lambda number: url_for("web.author", name=name, page=number),
    )


bp.add_app_template_global(search_href, "search_href")


@bp.app_template_filter("highlighted")
def highlighted(hit: Hit, field: str) -> Markup:
    """A hit's title/abstract with the engine's `<mark>`s, or the plain (escaped) text."""
    if field not in HIGHLIGHTED_FIELDS:
        raise ValueError(f"no highlights for {field!r}")
    fragment = hit.highlights.get(field)
    # The engine HTML-escapes everything but its own <mark> tags (see query.Hit): these two
    # strings are the only markup trusted as HTML in the templates, and only if no other tag
    # slipped through (else the plain text is shown, escaped).
    if fragment and "<" not in _MARK_TAG.sub("", fragment):
        return Markup(fragment)
    text = getattr(hit.record, field)
    if field == "abstract":
        text = preview(text)
    return escape(text)


@bp.app_template_filter("preview")
def preview(text: str, length: int = ABSTRACT_PREVIEW) -> str:
    """The first `length` characters, cut at a word boundary."""
    if len(text) <= length:
        return text
    return text[:length].rsplit(" ", 1)[0].rstrip(",.;:") + " …"


@bp.app_template_filter("sentence")
def sentence(message: str) -> str:
    """An error message as a sentence, ending with a full stop."""
    message = message.strip()
    return message if not message or message[-1] in ".!?" else message + "."


@bp.app_template_filter("web_url")
def web_url(url: str | None) -> str | None:
    """The URL if it is an http(s) link; anything else (`javascript:`…) is not linked."""
    if url and url.strip().lower().startswith(("https://", "http://")):
        return url.strip()
    return None


@bp.app_template_filter("source_label")
def source_label(url: str) -> str:
    host = url.split("://", 1)[-1].split("/", 1)[0]
    return host.removeprefix("www.")
