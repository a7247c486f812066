"""The HTML pages: search (`/`), a record (`/records/<id>`) and an author (`/authors/<name>`)."""

from __future__ import annotations

import re
from itertools import count
from urllib.parse import quote

from flask import Blueprint, Response, jsonify, render_template, request, url_for
from markupsafe import Markup, escape

from searchsvc.domain.errors import InvalidRequest, QueryError, RecordNotFound
from searchsvc.domain.facets import facet_named
from searchsvc.domain.modes import SEMANTIC_DEPTH
from searchsvc.domain.query import (
    SORTS,
    FacetValue,
    Hit,
    SearchRequest,
    SearchResult,
    meaning_breakdown,
)
from searchsvc.domain.records import Record, is_arxiv_id
from searchsvc.extension import get_service
from searchsvc.web.bibtex import to_bibtex
from searchsvc.web.charts import year_bars
from searchsvc.web.params import SearchLinks, parse_page, parse_search_args, search_href
from searchsvc.web.sidebar import (
    SubjectPanel,
    chips,
    facet_groups,
    flat_values,
    panel_subjects,
    subject_panel,
)

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


@bp.get("/")
def search() -> tuple[str, int] | str:
    try:
        search_request = parse_search_args(request.args)
    except (InvalidRequest, QueryError) as exc:
        # The page stays usable: the form keeps what was typed, with the error above it.
        return _search_page(None, None, error=exc), 400
    result = get_service().search_request(search_request)
    return _search_page(search_request, result, _subject_counts(search_request, result))


def _subject_counts(search_request: SearchRequest, result: SearchResult) -> list[FacetValue]:
    """The subjects' counts for the panel's group headings, counted as its categories are.

    The panel is one facet to a reader: its "all of" boxes select archives through the
    `category` filter, OR'ed with the categories ticked. The `category` facet's counts leave
    that filter out (they are disjunctive); the `subject` facet's own counts apply it, so when
    a category is ticked the headings are counted again without it. The ticked subjects stay
    selected there, so that the engine counts each even outside its top N (the subject facet's
    counts leave the subject filter out: it changes nothing else that is counted).
    """
    if not (search_request.selected("category") or search_request.selected("subject")):
        return list(result.facets.get("subject", ()))
    filters = {
        name: values
        for name, values in search_request.filters.items()
        if name not in ("category", "subject")
    }
    ticked = panel_subjects(search_request)
    if ticked:
        filters["subject"] = ticked
    unfiltered = search_request.evolve(
        filters=filters, facets=("subject",), page=1, per_page=1, highlight=False
    )
    return list(get_service().search_request(unfiltered).facets.get("subject", ()))


def _search_page(
    search_request: SearchRequest | None,
    result: SearchResult | None,
    subject_counts: list[FacetValue] | None = None,
    error: Exception | None = None,
) -> str:
    # A request that failed validation is shown as an empty search, keeping the text the
    # person typed (unless the text itself was the problem).
    q = request.args.get("q", "")
    if isinstance(error, InvalidRequest) and getattr(error, "details", {}).get("parameter") == "q":
        q = ""
    links = SearchLinks(search_request or SearchRequest())
    ids = (f"f-{n}" for n in count(1))
    return render_template(
        "web/search.html",
        q=q,
        search=search_request,
        result=result,
        error=error,
        links=links,
        feed_href=links.feed(url_for("api.search_feed")) if result else None,
        subjects=subject_panel(result, subject_counts or [], ids)
        if result
        else SubjectPanel([], []),
        facet_groups=facet_groups(result, ids) if result else [],
        chips=chips(links) if result else [],
        # A selected year no record has would only stretch the axis: the sidebar lists it.
        bars=year_bars([v for v in flat_values(result.facets.get("year", ())) if v.count])
        if result
        else [],
        sort_labels=SORT_LABELS,
        sorts=SORTS,
        explicit_sort=search_request.sort if search_request else None,
        explicit_mode=search_request.mode if search_request else None,
        semantic_depth=SEMANTIC_DEPTH,
        # The mode toggle shows where the index can search by meaning.
        modes=MODE_LABELS if _has_vectors() else {},
    )


# The search modes as the page names them (domain/modes.py says what each returns).
MODE_LABELS = {
    "hybrid": "Words and meaning",
    "lexical": "Exact words",
    "semantic": "Meaning only",
}


def _has_vectors() -> bool:
    return get_service().has_vectors()


@bp.get("/records/<path:record_id>")
def record(record_id: str) -> Response | str:
    output = request.args.get("format", "html")
    if output == "bibtex":
        return _bibtex(record_id)
    if output == "json":
        return _json(record_id)
    if output != "html":
        raise InvalidRequest("format must be html, bibtex or json", parameter="format")
    found = _get_record(record_id)
    similar = get_service().similar(record_id, SIMILAR_LIMIT)
    return render_template(
        "web/record.html",
        record=found,
        # The arXiv id the citation tags name, when the record's id is one.
        arxiv_id=found.id if is_arxiv_id(found.id) else None,
        similar=similar,
        category_href=lambda category: search_href([("category", category)]),
    )


@bp.get("/records/<path:record_id>.bib")
def record_bibtex(record_id: str) -> Response | str:
    return _download_or_page(record_id, ".bib", _bibtex)


@bp.get("/records/<path:record_id>.json")
def record_json(record_id: str) -> Response | str:
    return _download_or_page(record_id, ".json", _json)


def _download_or_page(record_id: str, suffix: str, download) -> Response | str:
    """`<id>.bib` is the BibTeX of record `<id>`, or, when only a record whose id itself ends
    in `.bib` exists, that record's page: its links reach it whatever its id."""
    try:
        return download(record_id)
    except RecordNotFound:
        if not _exists(record_id + suffix):
            raise
    return record(record_id + suffix)


def _exists(record_id: str) -> bool:
    try:
        get_service().get(record_id)
    except RecordNotFound:
        return False
    return True


def _bibtex(record_id: str) -> Response:
    text = to_bibtex(_get_record(record_id))
    return Response(
        text,
        content_type="application/x-bibtex; charset=utf-8",
        headers={"Content-Disposition": content_disposition(f"{record_id}.bib")},
    )


_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


def content_disposition(filename: str) -> str:
    """`inline` with the file name twice (RFC 6266): plain ASCII with anything else as `_`,
    and the exact name percent-encoded, so no quote, CR/LF or `;` in an id reaches the header."""
    plain = _UNSAFE_IN_FILENAME.sub("_", filename)
    return f"inline; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"


def _json(record_id: str) -> Response:
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
bp.add_app_template_global(meaning_breakdown, "meaning_breakdown")


@bp.app_template_filter("category_name")
def category_name(code: str) -> str:
    """A category's name ("Distributed, Parallel, and Cluster Computing" for cs.DC); a code
    the subject taxonomy does not know is its own name."""
    return facet_named("category").describe(code)[0]


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
