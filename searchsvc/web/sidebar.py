"""The search page's sidebar: checkboxes of the flat facets (year, author), the Subject panel
(subjects grouped with their categories, named from the taxonomy) and the active-filter chips."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from searchsvc.domain.facets import DISPLAYED_FACETS, facet_named
from searchsvc.domain.query import MAX_FILTER_VALUES, FacetValue, SearchRequest, SearchResult
from searchsvc.domain.subjects import taxonomy
from searchsvc.web.params import SearchLinks

# Values shown before the rest of a facet folds into a "more" disclosure.
FACET_VISIBLE = 8
# The flat facets (year, author) show and chart this many values; the page asks the engine for
# more (params.FACET_SIZE) so that every subject's categories can be listed under it.
FLAT_FACET_SIZE = 50


@dataclass(frozen=True, slots=True)
class FacetOption:
    """A checkbox of the facet sidebar; `count` is None where none was counted (a subject
    heading of a category whose archive no record of the search has)."""

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
        return first_shown(self.categories)

    @property
    def more(self) -> list[FacetOption]:
        return folded(self.categories)

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
        return first_shown(self.flat)

    @property
    def flat_more(self) -> list[FacetOption]:
        return folded(self.flat)

    def __bool__(self) -> bool:
        return bool(self.groups or self.flat)


@dataclass(frozen=True, slots=True)
class Chip:
    """An active filter above the results, read by name (code on hover), with its remove link."""

    label: str
    text: str
    href: str
    code: str | None = None


def first_shown(options: list[FacetOption]) -> list[FacetOption]:
    return [o for i, o in enumerate(options) if i < FACET_VISIBLE or o.selected]


def folded(options: list[FacetOption]) -> list[FacetOption]:
    return [o for i, o in enumerate(options) if i >= FACET_VISIBLE and not o.selected]


def flat_values(values: Sequence[FacetValue]) -> list[FacetValue]:
    """The values a flat facet shows: its first FLAT_FACET_SIZE, and every selected one."""
    # The engines list each selected value, after the top N when it is not in it, counted
    # (query.with_selected): a ticked box is always there to untick.
    return [v for i, v in enumerate(values) if i < FLAT_FACET_SIZE or v.selected]


def facet_groups(result: SearchResult, ids: Iterable[str]) -> list[FacetGroup]:
    """Sidebar checkboxes per flat facet (the subject facets are `_subject_panel`'s); a selected
    value is always shown with its count, even outside the top N."""
    ids = iter(ids)
    groups = []
    for facet in DISPLAYED_FACETS:
        if facet.hierarchical:
            continue
        options = [
            FacetOption(facet.name, v.value, v.count, v.selected, v.value, "")
            for v in flat_values(result.facets.get(facet.name, ()))
        ]
        if facet.order == "value_descending":
            options.sort(key=lambda option: option.value, reverse=True)
        options = [replace(option, id=next(ids)) for option in options]
        groups.append(FacetGroup(facet.name, facet.label, first_shown(options), folded(options)))
    return groups


def subject_panel(
    result: SearchResult, subject_counts: list[FacetValue], ids: Iterable[str]
) -> SubjectPanel:
    """The subjects (archives, `subject_counts`) as groups holding the `category` facet's
    values whose parent they are. Selected values are always listed (the engines count them,
    `panel_subjects`): an archive as a group, anything else (a group such as grp_cs, an
    unknown code) flat.

    A group's "all of" box selects its archive as a `category` value, so that every box of the
    panel is one OR'ed filter; a `subject=` selection (API links) keeps its own parameter.
    """
    ids = iter(ids)
    request = result.request
    facets = {"subject": subject_counts, "category": list(result.facets.get("category", ()))}
    chosen = {name: set(request.selected(name)) for name in facets}
    counted = {name: {v.value for v in values} for name, values in facets.items()}
    archives = {v.value for v in subject_counts} | {
        value for value in chosen["category"] if is_archive(value)
    }

    def values(name: str) -> list[FacetValue]:
        # An archive ticked as a whole (counted in the category facet as its records) is its
        # group's "all of" box, not a category of its own.
        listed = [
            v
            for v in facets[name]
            if name != "category" or v.parent or not (v.selected and is_archive(v.value))
        ]
        describe = facet_named(name).describe
        # Beyond the engines' lists only when more subjects were ticked than one search takes.
        wanted = chosen[name] | (chosen["category"] & archives if name == "subject" else set())
        for value in sorted(wanted - counted[name]):
            if name == "category" and value in archives:
                continue  # an archive ticked as a whole: its group's "all of" box shows it
            label, parent = describe(value)
            listed.append(FacetValue(value, 0, True, label, parent))
        return listed

    def option(name: str, v: FacetValue) -> FacetOption:
        n = v.count if v.value in counted[name] else None
        if name == "subject" and v.value not in chosen["subject"]:
            name = "category"  # "all of" an archive: one more value of the category filter
        selected = v.value in chosen[name]
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


def panel_subjects(request: SearchRequest) -> tuple[str, ...]:
    """The subjects the panel's headings show ticked: `subject` values, and archives ticked
    as a whole (through the `category` filter, as its "all of" boxes select them)."""
    ticked = (*request.selected("subject"), *filter(is_archive, request.selected("category")))
    return tuple(dict.fromkeys(ticked))[:MAX_FILTER_VALUES]


def is_archive(code: str) -> bool:
    subject = taxonomy().subject(code)
    return subject is not None and subject.level == "archive"


def chips(links: SearchLinks) -> list[Chip]:
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
