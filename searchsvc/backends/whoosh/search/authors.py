"""The author view: an author's records newest first, with per-year, per-category and co-author
counts (what the seed pages show as "Publications attributed to NAME")."""

from __future__ import annotations

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.value_column import ValueColumn
from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.domain.errors import RecordNotFound
from searchsvc.domain.query import AuthorView, FacetValue

MAX_COAUTHORS = 50


def author_view(
    searcher: Searcher, table: FacetTable, name: str, page: int, per_page: int
) -> AuthorView:
    """The records attributed to `name` (matched case- and accent-insensitively)."""
    authors = table.columns["author"]
    ordinal = authors.ordinal(name.strip())
    if ordinal is None:
        raise RecordNotFound(f"no records attributed to {name!r}", author=name)
    exact = authors.values[ordinal]
    documents = authors.documents_with([exact], table.doc_count) & table.live
    ordered = table.order(documents, "newest")
    start = (page - 1) * per_page
    records = tuple(
        from_stored(searcher.stored_fields(int(docnum)))
        for docnum in ordered[start : start + per_page]
    )
    coauthor_counts = authors.counts(documents)
    coauthor_counts[ordinal] = 0
    return AuthorView(
        name=exact,
        total=len(ordered),
        page=page,
        per_page=per_page,
        records=records,
        years=_newest_first(table.columns["year"], documents),
        categories=_all_values(table.column("category"), documents),
        coauthors=authors.top(coauthor_counts, MAX_COAUTHORS),
    )


def _all_values(column: ValueColumn, documents: np.ndarray) -> tuple[FacetValue, ...]:
    return column.top(column.counts(documents), len(column.values))


def _newest_first(years: ValueColumn, documents: np.ndarray) -> tuple[FacetValue, ...]:
    counts = years.counts(documents)
    return tuple(
        FacetValue(years.values[i], int(counts[i]))
        for i in sorted(
            np.flatnonzero(counts).tolist(), key=lambda i: int(years.values[i]), reverse=True
        )
    )
