"""The facets, described once as data: every layer (filters, counts, the index, the API, the web
page and the CLI) reads them from here instead of knowing "category" itself.

A facet is a record attribute whose values records are filtered and counted by. Filters are OR
within a facet and AND across facets; counts are disjunctive (a facet's own selection is left out
of its counts, so a reader sees what else they could pick).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from searchsvc.domain.errors import InvalidRequest, UnknownFacet
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR, Record
from searchsvc.domain.subjects import record_categories, record_subjects, taxonomy

# Whether cross-listed categories count: `exclude` keeps to each record's primary category in
# subject filters and counts.
CROSSLISTS = ("include", "exclude")


@dataclass(frozen=True, slots=True)
class Facet:
    """One facet: its name (API, filters, counts), label, record attribute and value type."""

    name: str
    label: str
    attribute: str  # the Record attribute holding the values
    value_type: type[str] | type[int]  # the type of a filter value
    multi_valued: bool  # several values per record (authors) or at most one (year)
    # How a list of values is shown to people: most records first, or newest value first.
    order: Literal["count", "value_descending"]
    filter_help: str  # what a filter value selects (OpenAPI, CLI help)
    display_rank: int  # where pages list the facet among the others (lowest first)

    @property
    def hierarchical(self) -> bool:
        """Whether values are subjects of the taxonomy (filters take any level, cross-lists)."""
        return False

    def values_of(self, record: Record, primary_only: bool = False) -> tuple[str, ...]:
        """The record's values of this facet, as strings (the form facet values take);
        `primary_only` matters to subject facets only."""
        value = getattr(record, self.attribute)
        if self.multi_valued:
            return tuple(value)
        return () if value is None else (str(value),)

    def describe(self, value: str) -> tuple[str, str | None]:
        """(label, parent) of a value: how people read it and what it belongs to."""
        return value, None

    def searched_text(self, value: str) -> str:
        """What a facet value search (`/facets/<facet>?q=`) finds a value by: word starts of
        this text, folded."""
        return value

    def filter_value(self, value: object) -> str | int:
        """A filter value of this facet's type; InvalidRequest names the facet otherwise."""
        if self.value_type is int:
            if isinstance(value, bool) or not isinstance(value, int):
                text = value.strip() if isinstance(value, str) else ""
                if text.isascii() and text.isdigit():
                    value = int(text)
                else:
                    raise InvalidRequest(
                        f"{self.name} must be a whole number", parameter=self.name, value=str(value)
                    )
            if not MIN_YEAR <= value <= MAX_YEAR:
                raise InvalidRequest(
                    f"{self.name} must be an integer from {MIN_YEAR} to {MAX_YEAR}",
                    parameter=self.name,
                    value=str(value),
                )
            return value
        if not isinstance(value, str) or not value:
            raise InvalidRequest(
                f"{self.name} values must be non-empty strings", parameter=self.name
            )
        return value


@dataclass(frozen=True, slots=True)
class SubjectFacet(Facet):
    """A facet over the records' categories at one level of the subject taxonomy (subjects/).

    Its values are canonical codes of that level, counted once per record. A filter value may
    name a category, an archive or a group (`cs.DC`, `cs`, `grp_cs`): it selects the records
    with a category under it. With cross-lists excluded only the primary category counts.
    """

    level: Literal["category", "archive"] = "category"

    @property
    def hierarchical(self) -> bool:
        return True

    def values_of(self, record: Record, primary_only: bool = False) -> tuple[str, ...]:
        if self.level == "category":
            return record_categories(record.categories, primary_only)
        return record_subjects(record.categories, primary_only)

    def describe(self, value: str) -> tuple[str, str | None]:
        tax = taxonomy()
        if self.level == "category":
            return tax.category_label(value), tax.parent(value, "category")
        return tax.label(value), tax.parent(value, "archive")

    def searched_text(self, value: str) -> str:
        return taxonomy().searched_text(value, self.describe(value)[0])

    def filter_value(self, value: object) -> str:
        # Canonical (`math.it` -> `cs.IT`), so a selection reads and marks as its facet value.
        return taxonomy().canonical(str(Facet.filter_value(self, value)))


FACETS: tuple[Facet, ...] = (
    Facet(
        name="author",
        label="Author",
        attribute="authors",
        value_type=str,
        multi_valued=True,
        order="count",
        filter_help="Only records by this author",
        display_rank=2,
    ),
    Facet(
        name="year",
        label="Year",
        attribute="year",
        value_type=int,
        multi_valued=False,
        order="value_descending",
        filter_help="Only records of this year",
        display_rank=1,
    ),
    SubjectFacet(
        name="category",
        label="Category",
        attribute="categories",
        value_type=str,
        multi_valued=True,
        order="count",
        filter_help="Only records in this category, or in any category of this archive or "
        "group (cs.DC, cs, grp_cs; arXiv's aliases are one category: math.IT is cs.IT)",
        display_rank=0,
        level="category",
    ),
    SubjectFacet(
        name="subject",
        label="Subject",
        attribute="categories",
        value_type=str,
        multi_valued=True,
        order="count",
        filter_help="Only records with a category in this subject (an archive such as cs or "
        "hep-ph, or a group such as grp_physics)",
        display_rank=0,
        level="archive",
    ),
)
FACET_NAMES: tuple[str, ...] = tuple(facet.name for facet in FACETS)
# The facets in the order pages show them.
DISPLAYED_FACETS: tuple[Facet, ...] = tuple(sorted(FACETS, key=lambda facet: facet.display_rank))
_BY_NAME = {facet.name: facet for facet in FACETS}


def facet_named(name: str) -> Facet:
    """The facet called `name`; UnknownFacet (naming the valid ones) if there is none."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise UnknownFacet(
            f"unknown facet {name!r}: the facets are {', '.join(FACET_NAMES)}",
            facet=str(name),
            facets=list(FACET_NAMES),
        ) from None
