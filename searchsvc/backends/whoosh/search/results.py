"""Whoosh documents and scores -> Hits and SearchResult: the way out of the backend."""

from __future__ import annotations

from collections.abc import Iterable

from whoosh import query
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.accel.highlight import highlight_record
from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.backends.whoosh.queries.compile import positive_terms
from searchsvc.domain.query import Hit

# Fields whose terms are stems of title/abstract words, so they can be marked in both.
HIGHLIGHTED_FIELDS = ("content", "title", "abstract")


def highlight_terms(q: query.Query) -> frozenset[str]:
    """The analysed words a highlighted title or abstract should mark for this query."""
    return frozenset(text for field, text in positive_terms(q) if field in HIGHLIGHTED_FIELDS)


def hits_for(
    searcher: Searcher,
    ranked: Iterable[tuple[int, float | None]],
    terms: frozenset[str] | None,
) -> tuple[Hit, ...]:
    """Hits for (document number, score) pairs; highlighted when `terms` is given."""
    hits = []
    for docnum, score in ranked:
        record = from_stored(searcher.stored_fields(docnum))
        highlights = highlight_record(record, terms) if terms is not None else {}
        hits.append(Hit(record=record, score=score, highlights=highlights))
    return tuple(hits)
