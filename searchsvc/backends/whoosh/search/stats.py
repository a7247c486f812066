"""What an index holds: document count and exact facet value counts, read from Whoosh's terms."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.store import IndexDirectory, version_token
from searchsvc.facets import FACET_NAMES, facet_named
from searchsvc.query import FacetValue, IndexStats


def index_stats(
    directory: IndexDirectory,
    generation: str,
    reader: IndexReader,
    table: FacetTable,
    top: int = 10,
) -> IndexStats:
    """Document count, the `top` values of each facet with exact counts, and build details of
    the generation served, read with one snapshot's `reader` (subject facets counted on `table`,
    the facet arrays of the same snapshot)."""
    counts = {
        facet: subject_counts(table, facet)
        if facet_named(facet).hierarchical
        else facet_value_counts(reader, facet)
        for facet in FACET_NAMES
    }
    return IndexStats(
        documents=reader.doc_count(),
        facets={facet: top_values(counts[facet], top) for facet in FACET_NAMES},
        cardinalities={facet: len(counts[facet]) for facet in FACET_NAMES},
        built_at=directory.built_at(generation),
        # Changes with every build (new generation) and every update (new Whoosh TOC).
        version=version_token(generation, reader.generation()),
        index_dir=str(directory.root),
        size_bytes=directory.size_bytes(generation),
    )


def facet_value_counts(reader: IndexReader, facet: str) -> Counter[str]:
    """Number of live documents per value of `facet`, over the whole index."""
    # Each facet is indexed under its name; its values are stored under the record attribute.
    field_name, stored_name = facet, facet_named(facet).attribute
    field = reader.schema[field_name]
    counts: Counter[str] = Counter()
    # One term per value, with its document frequency: no per-document work. (For the numeric
    # year field, sortable_terms skips the lower-precision terms Whoosh adds for range queries.)
    for term in field.sortable_terms(reader, field_name):
        value = field.from_bytes(term)
        counts[str(value)] += reader.doc_frequency(field_name, term)
    # Document frequencies still count documents an update deleted, until their segment is
    # merged away; take those documents' own values back off (they are few: one per upsert).
    for value in _deleted_values(reader, stored_name):
        counts[value] -= 1
    return +counts  # drops values left with no live document


def subject_counts(table: FacetTable, facet: str) -> Counter[str]:
    """Live documents per value of a subject facet (derived from the stored categories)."""
    column = table.column(facet)
    present = np.flatnonzero(column.totals)
    return Counter({column.values[i]: int(column.totals[i]) for i in present.tolist()})


def top_values(counts: Counter[str], top: int) -> tuple[FacetValue, ...]:
    """The `top` most frequent values, ties broken by value so the order is stable."""
    best = heapq.nsmallest(top, counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(FacetValue(value, count) for value, count in best)


def _deleted_values(reader: IndexReader, stored_name: str) -> Iterable[str]:
    if not reader.has_deletions():
        return
    for docnum in range(reader.doc_count_all()):
        if reader.is_deleted(docnum):
            value = reader.stored_fields(docnum).get(stored_name)
            if isinstance(value, list):
                yield from value
            elif value is not None:
                yield str(value)
