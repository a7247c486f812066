"""The HTML pages: search (`/`), a record (`/records/<id>`) and an author (`/authors/<name>`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import count

from flask import Blueprint, Response, jsonify, render_template, request, url_for
from markupsafe import Markup, escape

from searchsvc.errors import InvalidRequest, QueryError, RecordNotFound
from searchsvc.extension import get_service
from searchsvc.facets import DISPLAYED_FACETS, facet_named
from searchsvc.query import SORTS, FacetValue, Hit, SearchRequest, SearchResult
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


# The flat facets (year, author) show and chart this many values; the page asks the engine for
# more (params.FACET_SIZE) so that every subject's categories can be listed under it.
FLAT_FACET_SIZE = 50


@dataclass(frozen=True, slots=True)
class FacetOption:
    """A checkbox of the facet sidebar; `count` is None for a selected value outside the top N."""

    facet: str  # the query parameter it sets
    value: str
    count: int | None
    selected: bool
    label: str  # how people read it: a subject's name, else the value itself
    id: str

    @property
    def code(self) -> str | None:
        """The code behind a name (`cs.DC` for "Distributed, …"), None when the label is it."""
        return self.value if self.label != self.value else None


@dataclass(frozen=True, slots=True)
class FacetGroup:
    """One flat facet of the sidebar: the values shown at once and those folded under "more"."""

    name: str
    label: str
    shown: list[FacetOption]
    more: list[FacetOption]


@dataclass(slots=True)
class SubjectGroup:
    """A subject (an archive: "Computer Science") of the sidebar: the checkbox selecting all of
    it and its categories, the first ones shown and the rest folded under "more"."""

    subject: FacetOption
    categories: list[FacetOption] = field(default_factory=list)
    open: bool = False

    @property
    def shown(self) -> list[FacetOption]:
        return _first(self.categories)

    @property
    def more(self) -> list[FacetOption]:
        return _rest(self.categories)

    @property
    def has_selection(self) -> bool:
        return self.subject.selected or any(option.selected for option in self.categories)


@dataclass(frozen=True, slots=True)
class SubjectPanel:
    """The sidebar's Subject facet: one collapsible group per subject, categories inside it;
    categories the taxonomy does not know (other sources) listed flat, by their code."""

    groups: list[SubjectGroup]
    flat: list[FacetOption]

    @property
    def shown(self) -> list[SubjectGroup]:
        return [g for i, g in enumerate(self.groups) if i < FACET_VISIBLE or g.has_selection]

    @property
    def more(self) -> list[SubjectGroup]:
        return [g for i, g in enumerate(self.groups) if i >= FACET_VISIBLE and not g.has_selection]

    @property
    def flat_shown(self) -> list[FacetOption]:
        return _first(self.flat)

    @property
    def flat_more(self) -> list[FacetOption]:
        return _rest(self.flat)

    def __bool__(self) -> bool:
        return bool(self.groups or self.flat)


@dataclass(frozen=True, slots=True)
class Chip:
    """An active filter above the results, read by name (code on hover), with its remove link."""

    label: str
    text: str
    href: str
    code: str | None = None


def _first(options: list[FacetOption]) -> list[FacetOption]:
    return [o for i, o in enumerate(options) if i < FACET_VISIBLE or o.selected]


def _rest(options: list[FacetOption]) -> list[FacetOption]:
    return [o for i, o in enumerate(options) if i >= FACET_VISIBLE and not o.selected]


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
    ids = (f"f-{n}" for n in count(1))
    return render_template(
        "web/search.html",
        q=q,
        search=search_request,
        result=result,
        error=error,
        links=links,
        feed_href=links.feed(url_for("api.search_feed")) if result else None,
        subjects=_subject_panel(result, ids) if result else SubjectPanel([], []),
        facet_groups=_facet_groups(result, ids) if result else [],
        chips=_chips(links) if result else [],
        bars=year_bars(result.facets.get("year", ())[:FLAT_FACET_SIZE]) if result else [],
        sort_labels=SORT_LABELS,
        sorts=SORTS,
        explicit_sort=search_request.sort if search_request else None,
    )


def _facet_groups(result: SearchResult, ids: Iterable[str]) -> list[FacetGroup]:
    """Sidebar checkboxes per flat facet (the subject facets are `_subject_panel`'s); a selected
    value is always shown, even outside the top N."""
    ids = iter(ids)
    groups = []
    for facet in DISPLAYED_FACETS:
        if facet.hierarchical:
            continue
        selected = set(result.request.selected(facet.name))
        options = [
            FacetOption(
                facet.name, v.value, v.count, v.selected or v.value in selected, v.value, ""
            )
            for v in result.facets.get(facet.name, ())[:FLAT_FACET_SIZE]
        ]
        listed = {option.value for option in options}
        options += [
            FacetOption(facet.name, v, None, True, v, "") for v in sorted(selected - listed)
        ]
        if facet.order == "value_descending":
            options.sort(key=lambda option: option.value, reverse=True)
        options = [replace(option, id=next(ids)) for option in options]
        groups.append(FacetGroup(facet.name, facet.label, _first(options), _rest(options)))
    return groups


def _subject_panel(result: SearchResult, ids: Iterable[str]) -> SubjectPanel:
    """The `subject` facet's values (archives) as groups holding the `category` facet's values
    whose parent they are. Selected values are always listed, even outside the counts: an
    archive as a group, anything else (a group such as grp_cs, an unknown code) flat."""
    ids = iter(ids)
    request = result.request
    names = ("subject", "category")
    chosen = {name: set(request.selected(name)) for name in names}
    counted = {name: {v.value for v in result.facets.get(name, ())} for name in names}

    def values(name: str) -> list[FacetValue]:
        listed = list(result.facets.get(name, ()))
        describe = facet_named(name).describe
        for value in sorted(chosen[name] - counted[name]):
            label, parent = describe(value)
            listed.append(FacetValue(value, 0, True, label, parent))
        return listed

    def option(name: str, v: FacetValue) -> FacetOption:
        n = v.count if v.value in counted[name] else None
        selected = v.selected or v.value in chosen[name]
        return FacetOption(name, v.value, n, selected, v.label or v.value, next(ids))

    groups: dict[str, SubjectGroup] = {}
    flat: list[FacetOption] = []
    for v in values("subject"):
        if v.parent is None:
            # Not an archive: a group (grp_cs) or a code of another source, whose records the
            # flat category of the same code lists; shown only when selected.
            if v.value in chosen["subject"]:
                flat.append(option("subject", v))
            continue
        groups[v.value] = SubjectGroup(option("subject", v))
    for v in values("category"):
        if v.parent is None:
            flat.append(option("category", v))
            continue
        group = groups.get(v.parent)
        if group is None:  # its archive went uncounted: a group without a count
            label, parent = facet_named("subject").describe(v.parent)
            archive = FacetValue(v.parent, 0, False, label, parent)
            group = groups[v.parent] = SubjectGroup(option("subject", archive))
        group.categories.append(option("category", v))
    for group in groups.values():
        # A one-category archive (hep-ph holds hep-ph): its "all of" checkbox says it all.
        only = group.categories[0] if len(group.categories) == 1 else None
        if only and only.value == group.subject.value and not only.selected:
            group.categories.clear()
        group.open = group.has_selection or len(groups) == 1
    return SubjectPanel(list(groups.values()), flat)


def _chips(links: SearchLinks) -> list[Chip]:
    """The active filters of the facets, named as people read them (subjects by name)."""
    request = links.request
    chips = []
    for facet in DISPLAYED_FACETS:
        for value in request.selected(facet.name):
            label = facet.describe(value)[0]
            code = value if label != value else None
            href = links.removing(facet.name, value=value)
            chips.append(Chip(facet.label, label, href, code))
    return chips


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
