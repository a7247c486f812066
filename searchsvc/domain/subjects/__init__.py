"""Subjects readers understand: arXiv's taxonomy (group -> archive -> category) as domain data.

A record's categories are codes (`cs.DC`, `hep-ph`, `math.AP`); the first is its primary, the
others cross-lists. This module names them ("Distributed, Parallel, and Cluster Computing"),
places them (cs.DC is in the archive `cs`, "Computer Science", in the group `grp_cs`) and
resolves arXiv's equivalences: an alias is its canonical category (`math.IT` is `cs.IT`,
`cs.NA` is `math.NA`) and a defunct archive is the category that took it over (`chao-dyn` is
`nlin.CD`). Codes are matched case-insensitively. A code the taxonomy does not know (categories
of other sources) stays as it is, flat: its own subject, labelled with its code.

Engines use the per-code functions to index or derive what the facets count and filter:
`canonical` (the `category` facet), `archives_of` (the `subject` facet) and `keys_of` (every
level a category belongs to, which is what a filter value of any level is matched against).
The data is arxiv_taxonomy.json, generated from arXiv's arxiv-base package by
scripts/make_subject_taxonomy.py (provenance inside the file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from searchsvc.domain.texts import fold

DATA_FILE = Path(__file__).with_name("arxiv_taxonomy.json")
# Punctuation in names ("Distributed, Parallel, and ...") that typed words skip.
_NAME_PUNCTUATION = re.compile(r"[^\w\s-]+")
Level = Literal["group", "archive", "category"]


@dataclass(frozen=True, slots=True)
class Subject:
    """A group, archive or category of the taxonomy: its code, name and parent's code."""

    code: str
    label: str
    level: Level
    parent: str | None  # a category's archive, an archive's group; None for a group


class Taxonomy:
    """Lookups over one taxonomy (groups, archives, categories, aliases, subsumed archives)."""

    def __init__(self, data: dict) -> None:
        self._subjects: dict[str, Subject] = {}
        for code, group in data["groups"].items():
            self._subjects[code] = Subject(code, group["name"], "group", None)
        for code, archive in data["archives"].items():
            self._subjects[code] = Subject(code, archive["name"], "archive", archive["group"])
        self._categories: dict[str, Subject] = {
            code: Subject(code, category["name"], "category", category["archive"])
            for code, category in data["categories"].items()
        }
        # Folded code -> canonical code, for every code a reader may type.
        self._canonical: dict[str, str] = {fold(code): code for code in self._subjects}
        self._canonical.update({fold(code): code for code in self._categories})
        equivalents = {**data["subsumed"], **data["aliases"]}
        self._canonical.update({fold(old): new for old, new in equivalents.items()})
        self._aliases: dict[str, tuple[str, ...]] = {}
        for old, new in equivalents.items():
            self._aliases[new] = (*self._aliases.get(new, ()), old)
        # An article in an alias is in its canonical category too, and arXiv lists it under
        # both archives (math.IT = cs.IT: Mathematics and Computer Science).
        self._also_in: dict[str, tuple[str, ...]] = {}
        for alias, canonical in data["aliases"].items():
            alias_category = self._categories.get(alias)
            if alias_category and alias_category.parent:
                also = self._also_in.get(canonical, ())
                self._also_in[canonical] = (*also, alias_category.parent)

    def canonical(self, code: str) -> str:
        """The canonical code of a category, archive or group code (`math.it` -> `cs.IT`);
        an unknown code unchanged."""
        return self._canonical.get(fold(code), code)

    def category(self, code: str) -> Subject | None:
        """The category a code names (after aliases), None if the taxonomy has no such one."""
        return self._categories.get(self.canonical(code))

    def subject(self, code: str) -> Subject | None:
        """The group, archive or category a code names; a code that is both an archive and a
        category (`hep-ph`) names the archive."""
        canonical = self.canonical(code)
        return self._subjects.get(canonical) or self._categories.get(canonical)

    def archives_of(self, code: str) -> tuple[str, ...]:
        """The archives of a category (`cs.DC` -> `cs`; `cs.IT` -> `cs`, `math`: an alias's
        archive too); an unknown code is its own archive."""
        category = self.category(code)
        if category is None or category.parent is None:
            return (self.canonical(code),)
        return (category.parent, *self._also_in.get(category.code, ()))

    def keys_of(self, code: str) -> tuple[str, ...]:
        """Every level a category belongs to: the category, its archives and their groups,
        canonical codes. A filter value of any level selects the records with a category
        having it as a key."""
        category = self.category(code)
        if category is None or category.parent is None:
            # A record's category that names an archive or a group (`cs`, a legacy bare
            # archive): under itself and its group.
            subject = self.subject(code)
            if subject is not None and subject.parent is not None:
                return (subject.code, subject.parent)
            return (self.canonical(code),)
        keys = [category.code]
        for archive_code in self.archives_of(code):
            archive = self._subjects.get(archive_code)
            keys += [archive_code, archive.parent] if archive and archive.parent else [archive_code]
        return tuple(dict.fromkeys(keys))

    def label(self, code: str) -> str:
        """A code's name ("Distributed, Parallel, and Cluster Computing"); unknown: the code."""
        subject = self.subject(code)
        return subject.label if subject else code

    def searched_text(self, code: str, label: str) -> str:
        """What a facet value search looks in for a subject: its code, the codes that mean it
        (aliases, defunct archives: `math.IT` finds cs.IT) and its name without punctuation, a
        line each (a prefix of several words then matches "distributed parallel")."""
        name = " ".join(_NAME_PUNCTUATION.sub(" ", label).split())
        return "\n".join((code, *self._aliases.get(code, ()), name))

    def category_label(self, code: str) -> str:
        """The name of the category a code names (`physics` -> "Physics" as a category too)."""
        category = self.category(code)
        return category.label if category else self.label(code)

    def parent(self, code: str, level: Level) -> str | None:
        """The parent of `code` taken at `level` (a category's archive, an archive's group)."""
        if level == "category":
            category = self.category(code)
            return category.parent if category else None
        subject = self._subjects.get(self.canonical(code))
        return subject.parent if subject else None

    def groups(self) -> tuple[Subject, ...]:
        return tuple(s for s in self._subjects.values() if s.level == "group")


@lru_cache(maxsize=1)
def taxonomy() -> Taxonomy:
    """arXiv's taxonomy, as shipped with the service."""
    return Taxonomy(json.loads(DATA_FILE.read_text(encoding="utf-8")))


def _distinct(codes: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(codes))


def record_categories(categories: tuple[str, ...], primary_only: bool = False) -> tuple[str, ...]:
    """A record's canonical categories, primary first (only the primary with `primary_only`)."""
    tax = taxonomy()
    return _distinct(tax.canonical(c) for c in (categories[:1] if primary_only else categories))


def record_subjects(categories: tuple[str, ...], primary_only: bool = False) -> tuple[str, ...]:
    """The archives of a record's categories (the `subject` facet's values)."""
    tax = taxonomy()
    chosen = categories[:1] if primary_only else categories
    return _distinct(archive for c in chosen for archive in tax.archives_of(c))


def record_subject_keys(categories: tuple[str, ...], primary_only: bool = False) -> tuple[str, ...]:
    """Every category, archive and group of a record's categories: what filters match."""
    tax = taxonomy()
    chosen = categories[:1] if primary_only else categories
    return _distinct(key for c in chosen for key in tax.keys_of(c))
