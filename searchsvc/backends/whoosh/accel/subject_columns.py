"""Subject columns (`category`, `subject`) derived from each document's stored categories through
the subject taxonomy (domain/subjects): canonical codes, and archives; a newer taxonomy needs no
rebuild."""

from __future__ import annotations

from collections.abc import Callable

from searchsvc.domain.facets import facet_named
from searchsvc.domain.subjects import taxonomy


def derivation(facet: str) -> tuple[Callable[[str], tuple[str, ...]], Callable[[str], str]]:
    """How a subject facet's column is derived from stored categories: each value's mapping,
    and what a value prefix is looked for in."""
    searched_text = facet_named(facet).searched_text
    if facet == "category":
        return _canonical_of, searched_text
    return taxonomy().archives_of, searched_text


def _canonical_of(code: str) -> tuple[str, ...]:
    return (taxonomy().canonical(code),)
