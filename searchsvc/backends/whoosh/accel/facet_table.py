"""Facet counts from per-document arrays: exact, disjunctive, and without scoring a single hit.

Whoosh's own `groupedby` scores and collects every match and (for a multi-valued KEYWORD field)
rebuilds doc -> values on every search. Here the values of every document are read once per
index snapshot into numpy arrays, and a facet count is one `np.bincount` over the entries of
the matched documents. Builds and updates save the arrays beside the index
(facet_table_file.py), so a new process loads them instead of reading every document again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.segment_columns import leaf_column_bytes, release_mapped_pages
from searchsvc.backends.whoosh.accel.subject_columns import derivation
from searchsvc.backends.whoosh.accel.title_rank import title_rank
from searchsvc.backends.whoosh.accel.value_column import ValueColumn, _ColumnBuilder
from searchsvc.backends.whoosh.documents import PACKED_FACETS, stored_facets, unpack_facets
from searchsvc.domain.facets import facet_named
from searchsvc.domain.query import FacetValue, with_selected
from searchsvc.domain.subjects import taxonomy
from searchsvc.domain.texts import fold

NO_YEAR = -1
FACET_COLUMN = "facet_values"


@dataclass
class FacetTable:
    """Every document's facet values, year and title order, read once per index snapshot."""

    doc_count: int  # document numbers run from 0 to doc_count - 1 (deleted ones included)
    live: np.ndarray  # False for deleted document numbers
    year: np.ndarray  # the year of each document, NO_YEAR when it has none
    title_rank: np.ndarray  # position of each document in title order
    columns: dict[str, ValueColumn]  # the stored ones (documents.PACKED_FACETS), as indexed
    # Columns derived from the stored ones when first asked for (subjects/, see `column`).
    _derived: dict[tuple[str, bool], ValueColumn] = field(default_factory=dict, repr=False)
    _under: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, reader: IndexReader) -> FacetTable:
        """The table of `reader`'s state, read segment by segment: what it holds at once
        beyond the table itself is one segment's values, whatever the index's size."""
        doc_count = reader.doc_count_all()
        live = np.zeros(doc_count, dtype=bool)
        year = np.full(doc_count, NO_YEAR, dtype=np.int32)
        builders = {name: _ColumnBuilder() for name in PACKED_FACETS}
        for docnums, facet_values in _facet_values(reader):
            live[docnums] = True
            # The year of each record also orders (newest, oldest) and bounds (year_from,
            # year_to).
            doc_years = [values["year"] for values in facet_values]
            has_year = np.fromiter(map(bool, doc_years), bool, len(doc_years))
            year[docnums[has_year]] = [int(values[0]) for values in doc_years if values]
            for name in PACKED_FACETS:
                builders[name].add(docnums, [values[name] for values in facet_values])
            del facet_values
        columns = {name: builders.pop(name).column() for name in PACKED_FACETS}
        return cls(doc_count, live, year, title_rank(reader, doc_count), columns)

    @classmethod
    def updated(
        cls, previous: FacetTable, previous_segments: dict[Hashable, int], reader: IndexReader
    ) -> FacetTable:
        """The table of `reader`'s state, from the table of an earlier state of the same index
        (`previous_segments`: each of its segments' id and first document number).

        An update keeps most segments as they were, only marking documents deleted: their
        entries are carried over, renumbered where the segment moved. Only the documents of new
        segments (the update's own, and those Whoosh merged) are read. Equal to `build(reader)`
        (tests/whoosh/test_facet_table_update.py), at a fraction of its time on a large index.
        """
        doc_count = reader.doc_count_all()
        live = _live_documents(reader, doc_count)
        year = np.full(doc_count, NO_YEAR, dtype=np.int32)
        # Where each document of the previous state is now (-1: deleted, or merged away).
        moved_to = np.full(previous.doc_count, -1, dtype=np.int64)
        fresh_docs: list[int] = []
        fresh_values: list[dict[str, tuple[str, ...]]] = []
        for leaf, offset in reader.leaf_readers():
            count = leaf.doc_count_all()
            if not count:
                continue
            start = previous_segments.get(_segment_id(leaf))
            if start is not None:
                moved_to[start : start + count] = np.arange(offset, offset + count)
                year[offset : offset + count] = previous.year[start : start + count]
                continue
            column = leaf_column_bytes(leaf, FACET_COLUMN)
            release_mapped_pages(leaf)
            for local, packed in enumerate(column):
                if live[offset + local]:
                    fresh_docs.append(offset + local)
                    fresh_values.append(unpack_facets(packed))
        carried = moved_to >= 0
        moved_to[carried] = np.where(live[moved_to[carried]], moved_to[carried], -1)
        docs = np.asarray(fresh_docs, dtype=np.int32)
        fresh_years = [values["year"] for values in fresh_values]
        has_year = np.fromiter(map(bool, fresh_years), bool, len(fresh_years))
        year[docs[has_year]] = [int(values[0]) for values in fresh_years if values]
        year[~live] = NO_YEAR
        columns = {
            name: previous.columns[name].updated(
                moved_to,
                ValueColumn.from_lists(docs, [values[name] for values in fresh_values]),
            )
            for name in PACKED_FACETS
        }
        return cls(doc_count, live, year, title_rank(reader, doc_count), columns)

    def column(self, facet: str, primary_only: bool = False) -> ValueColumn:
        """The column a facet counts: a stored one, or for a subject facet the canonical
        categories or archives derived from the stored categories (primary ones only with
        `primary_only`). Derived here, not stored, so a new taxonomy needs no rebuild (a saved
        table carries them only for the taxonomy it was saved with, see `seed_derived`)."""
        if not facet_named(facet).hierarchical:
            return self.columns[facet]
        return self._derive(facet, primary_only, *derivation(facet))

    def held_columns(self) -> list[ValueColumn]:
        """The stored columns and those derived so far."""
        return [*self.columns.values(), *self._derived.values()]

    def derived_mapping(self, facet: str) -> list[list[str]]:
        """What each stored category value maps to in a subject facet's column, under the
        taxonomy of this process."""
        mapping, _ = derivation(facet)
        return [list(mapping(value)) for value in self.columns["category"].values]

    def forget_derived(self, facet: str) -> None:
        """Drop a subject facet's derived column (all categories); it is derived again when
        next asked for."""
        self._derived.pop((facet, False), None)

    def seed_derived(self, facet: str, column: ValueColumn, mapping: list[list[str]]) -> bool:
        """Take a subject facet's column (all categories, not primary only) as saved with the
        table, if it was derived by the mapping this process would use; returns whether."""
        if mapping != self.derived_mapping(facet):
            return False
        _, describe = derivation(facet)
        column.search_texts = [describe(value) for value in column.values]
        self._derived[(facet, False)] = column
        return True

    def filter_mask(self, facet: str, values: Iterable[str], primary_only: bool) -> np.ndarray:
        """Mask of the documents a facet's selected values select (OR); a subject facet's
        value may be a category, an archive or a group."""
        if not facet_named(facet).hierarchical:
            return self.columns[facet].documents_with(values, self.doc_count)
        column = self._derive("keys", primary_only, taxonomy().keys_of)
        return column.documents_with(values, self.doc_count)

    def categories_under(self, subject: str) -> tuple[str, ...]:
        """The stored category values (as indexed) a subject of any level covers."""
        tax = taxonomy()
        wanted = fold(tax.canonical(subject))
        under = self._under.get(wanted)
        if under is None:
            under = self._under[wanted] = tuple(
                value
                for value in self.columns["category"].values
                if wanted in {fold(key) for key in tax.keys_of(value)}
            )
        return under

    def _derive(self, kind: str, primary_only: bool, mapping, describe=None) -> ValueColumn:
        key = (kind, primary_only)
        column = self._derived.get(key)
        if column is None:
            stored = self.columns["category"]
            column = self._derived[key] = stored.derived(mapping, primary_only, describe)
        return column

    def mask_of(self, docnums: Iterable[int]) -> np.ndarray:
        """Boolean document mask from document numbers (e.g. `searcher.docs_for_query`)."""
        mask = np.zeros(self.doc_count, dtype=bool)
        ids = np.fromiter(docnums, dtype=np.int64)
        mask[ids] = True
        return mask & self.live

    def year_range(self, year_from: int | None, year_to: int | None) -> np.ndarray | None:
        """Mask of documents with a year in the inclusive range, None when unbounded."""
        if year_from is None and year_to is None:
            return None
        mask = self.year != NO_YEAR
        if year_from is not None:
            mask &= self.year >= year_from
        if year_to is not None:
            mask &= self.year <= year_to
        return mask

    def order(self, documents: np.ndarray, sort: str) -> np.ndarray:
        """Document numbers of a mask in `newest`, `oldest` or `title` order."""
        docnums = np.flatnonzero(documents)
        if sort == "title":
            return docnums[np.argsort(self.title_rank[docnums], kind="stable")]
        years = self.year[docnums].astype(np.int64)
        # Records without a year go last either way; ties are in title order.
        if sort == "oldest":
            key = np.where(years == NO_YEAR, np.iinfo(np.int64).max, years)
        else:
            key = np.where(years == NO_YEAR, np.iinfo(np.int64).max, -years)
        return docnums[np.lexsort((self.title_rank[docnums], key))]


def _facet_values(
    reader: IndexReader,
) -> Iterator[tuple[np.ndarray, list[dict[str, tuple[str, ...]]]]]:
    """Per segment, in order: its live documents' numbers, and each one's values of every
    facet."""
    if FACET_COLUMN in reader.schema and reader.has_column(FACET_COLUMN):
        # One sequential read of the packed column a segment (schema version 2 and later).
        for leaf, offset in reader.leaf_readers():
            if not leaf.doc_count_all():
                continue
            live = np.fromiter(leaf.all_doc_ids(), dtype=np.int32)
            packed = leaf_column_bytes(leaf, FACET_COLUMN)
            release_mapped_pages(leaf)
            yield live + offset, [unpack_facets(packed[docnum]) for docnum in live.tolist()]
        return
    # Indexes built before the column existed: unpickle every document's stored fields.
    docnums, values = [], []
    for docnum, stored in reader.iter_docs():
        docnums.append(docnum)
        values.append(stored_facets(stored))
    yield np.asarray(docnums, dtype=np.int32), values


def _live_documents(reader: IndexReader, doc_count: int) -> np.ndarray:
    """Mask of the documents not deleted, from each segment's set of deleted ones."""
    live = np.ones(doc_count, dtype=bool)
    for leaf, offset in reader.leaf_readers():
        segment = leaf.segment() if hasattr(leaf, "segment") else None
        if segment is None:  # not a segment reader: ask document by document
            for local in range(leaf.doc_count_all()):
                live[offset + local] = not leaf.is_deleted(local)
            continue
        deleted = np.fromiter(segment.deleted_docs(), dtype=np.int64)
        live[offset + deleted] = False
    return live


def _segment_id(leaf: IndexReader) -> Hashable:
    segment = leaf.segment() if hasattr(leaf, "segment") else None
    return segment.segment_id() if segment is not None else id(leaf)


def disjunctive_counts(
    table: FacetTable,
    matched: np.ndarray,
    filters: dict[str, np.ndarray],
    facets: Iterable[str],
    size: int,
    selected: dict[str, Sequence[str]],
    primary_only: bool = False,
) -> dict[str, tuple[FacetValue, ...]]:
    """Counts of each facet over the matches, with the filters of the *other* facets only: the
    top `size` values, then the selected values they leave out (query.with_selected).

    `matched` already holds every filter that is not a facet selection (e.g. a year range);
    `filters` maps a facet name to the mask of its selected values.
    """
    result = {}
    for facet in facets:
        documents = matched.copy()
        for other, mask in filters.items():
            if other != facet:
                documents &= mask
        chosen = tuple(selected.get(facet, ()))
        top = table.column(facet, primary_only).top_values(documents, size, chosen)
        # One value selected: its mask is the facet's filter, already made.
        only = filters.get(facet) if len(chosen) == 1 else None
        count = _selection_counter(table, facet, documents, primary_only, only)
        result[facet] = with_selected(top, chosen, count)
    return result


def _selection_counter(
    table: FacetTable,
    facet: str,
    documents: np.ndarray,
    primary_only: bool,
    mask: np.ndarray | None,
) -> Callable[[str], int]:
    """How many of `documents` a selected value of `facet` selects (`mask`, when given, is the
    value's own filter): what its filter selects, so that a subject of any level (an archive
    in the category facet, a group) counts the records under it."""

    def count(value: str) -> int:
        selects = table.filter_mask(facet, (value,), primary_only) if mask is None else mask
        return int(np.count_nonzero(documents & selects))

    return count
