"""Facet counts from per-document arrays: exact, disjunctive, and without scoring a single hit.

Whoosh's own `groupedby` scores and collects every match and (for a multi-valued KEYWORD field)
rebuilds doc -> values on every search. Here the values of every document are read once per
index snapshot into numpy arrays, and a facet count is one `np.bincount` over the entries of
the matched documents. Builds and updates save the arrays beside the index
(facet_table_file.py), so a new process loads them instead of reading every document again.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import mmap
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np
from whoosh.columns import VarBytesColumn
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.documents import PACKED_FACETS, stored_facets, unpack_facets
from searchsvc.facets import facet_named
from searchsvc.query import FacetValue, with_selected
from searchsvc.subjects import taxonomy
from searchsvc.texts import fold

# Entries of one document compared with each other rather than sorted (_first_of_each_pair).
_SHORT_RUN = 16
# Bytes of a title's sort key that order documents before titles are compared whole (a
# multiple of 8).
_TITLE_PREFIX = 24
# Where a facet value may be entered by a word prefix ("venkat" finds "Shivaram Venkataraman").
_WORD_START = re.compile(r"(?:^|(?<=[\s.\-_']))(?=\w)")
NO_YEAR = -1
FACET_COLUMN = "facet_values"
# Below one matched document in this many, counting gathers the matched documents' entries;
# above it, one pass over every entry is cheaper.
_SPARSE_FRACTION = 8
# How many values (by total, at least twice the list's size) the bounded top-N counts first.
_FIRST_VALUES = 32
# How many of a facet's most frequent values the bounded top-N holds grouped by value (ranks
# fit in 16 bits); past them it counts every value. Enough that a top N rarely runs past them,
# few enough to group cheaply.
_RANKED_VALUES = 4096


class _ColumnBuilder:
    """A ValueColumn (as `ValueColumn.from_lists` makes it) from documents given a segment at a
    time: each value is kept once, numbered as first met, and the values are sorted once at the
    end. Columns of every segment joined at the end held each segment's copy of its values
    (millions of author names at five million records)."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._docs: list[np.ndarray] = []
        self._values: list[np.ndarray] = []

    def add(self, docs: np.ndarray, value_lists: Sequence[Sequence[str]]) -> None:
        counts = np.fromiter(map(len, value_lists), dtype=np.int64, count=len(value_lists))
        numbers = self._numbers
        number = numbers.setdefault
        flat = itertools.chain.from_iterable(value_lists)
        self._values.append(
            np.fromiter((number(v, len(numbers)) for v in flat), np.int32, int(counts.sum()))
        )
        self._docs.append(np.repeat(np.asarray(docs, dtype=np.int32), counts))

    def column(self) -> ValueColumn:
        first_met = list(self._numbers)
        self._numbers = {}
        order = sorted(range(len(first_met)), key=first_met.__getitem__)
        values = [first_met[i] for i in order]
        del first_met
        ordinal = np.empty(len(values), dtype=np.int32)
        ordinal[order] = np.arange(len(values), dtype=np.int32)
        entry_value = ordinal[np.concatenate([np.empty(0, np.int32), *self._values])]
        entry_doc = np.concatenate([np.empty(0, np.int32), *self._docs])
        self._docs, self._values = [], []
        totals = np.bincount(entry_value, minlength=len(values))
        return ValueColumn(values, entry_doc, entry_value, totals)


@dataclass
class ValueColumn:
    """A (possibly multi-valued) facet as parallel arrays: one entry per (document, value)."""

    values: Sequence[str]  # sorted, so ordinal order is value order (ties break by value)
    entry_doc: np.ndarray  # document number of each entry
    entry_value: np.ndarray  # value ordinal of each entry
    totals: np.ndarray  # documents per value over the whole index
    _by_folded: dict[str, int] | None = None
    _word_starts: list[str] | None = None
    _word_start_values: np.ndarray | None = None
    # entry_offsets[d]:entry_offsets[d + 1] are document d's entries (entries are in doc order).
    _entry_offsets: np.ndarray | None = None
    _by_total: ValueMajor | None = None
    # What a value prefix is looked for in, per value (subjects: code and name); the values.
    search_texts: Sequence[str] | None = None

    @classmethod
    def from_pairs(cls, doc_values: Sequence[tuple[int, Sequence[str]]]) -> ValueColumn:
        docs = np.fromiter(map(itemgetter(0), doc_values), dtype=np.int32, count=len(doc_values))
        return cls.from_lists(docs, [vals for _, vals in doc_values])

    @classmethod
    def from_lists(cls, docs: np.ndarray, value_lists: Sequence[Sequence[str]]) -> ValueColumn:
        """From each document's values (`value_lists[i]` those of document `docs[i]`)."""
        counts = np.fromiter(map(len, value_lists), dtype=np.int64, count=len(value_lists))
        flat = list(itertools.chain.from_iterable(value_lists))
        values = sorted(set(flat))
        ordinal = dict(zip(values, range(len(values)), strict=True))
        entry_value = np.fromiter(map(ordinal.__getitem__, flat), dtype=np.int32, count=len(flat))
        entry_doc = np.repeat(np.asarray(docs, dtype=np.int32), counts)
        totals = np.bincount(entry_value, minlength=len(values))
        return cls(values, entry_doc, entry_value, totals)

    def updated(self, moved_to: np.ndarray, fresh: ValueColumn) -> ValueColumn:
        """This column's entries carried to their documents' new numbers (`moved_to`, -1 for a
        document gone), joined with the entries of `fresh` documents; values renumbered."""
        kept = moved_to[self.entry_doc] if len(self.entry_doc) else np.empty(0, np.int64)
        keep = kept >= 0
        kept_docs, kept_values = kept[keep], self.entry_value[keep]
        used = np.unique(kept_values)
        texts = list(self.values)  # one split of a saved column's text, not a slice per value
        used_texts = [texts[i] for i in used.tolist()]
        values = sorted({*used_texts, *fresh.values})
        ordinal = dict(zip(values, range(len(values)), strict=True))
        renumber = np.zeros(len(self.values), dtype=np.int32)
        renumber[used] = np.fromiter(map(ordinal.__getitem__, used_texts), np.int32, len(used))
        fresh_renumber = np.fromiter(
            map(ordinal.__getitem__, fresh.values), np.int32, len(fresh.values)
        )
        docs = np.concatenate([kept_docs.astype(np.int32), fresh.entry_doc])
        entry_values = np.concatenate([renumber[kept_values], fresh_renumber[fresh.entry_value]])
        # Stable: each document's entries come from one side, in the record's order.
        order = np.argsort(docs, kind="stable")
        entry_value = entry_values[order].astype(np.int32)
        totals = np.bincount(entry_value, minlength=len(values))
        return ValueColumn(values, docs[order], entry_value, totals)

    def derived(
        self,
        mapping: Callable[[str], tuple[str, ...]],
        first_only: bool = False,
        describe: Callable[[str], str] | None = None,
    ) -> ValueColumn:
        """A column of `mapping`'s values of each entry's value, once per document (in the
        order of the document's entries); with `first_only`, of each document's first entry
        (a record's primary category). `describe(value)` is what a prefix is looked for in."""
        entry_doc, entry_value = self.entry_doc, self.entry_value
        if first_only and len(entry_doc):
            first = np.concatenate(([True], entry_doc[1:] != entry_doc[:-1]))
            entry_doc, entry_value = entry_doc[first], entry_value[first]
        mapped = [mapping(value) for value in self.values]
        values = sorted(set(itertools.chain.from_iterable(mapped)))
        ordinal = dict(zip(values, range(len(values)), strict=True))
        lengths = np.fromiter(map(len, mapped), np.int64, len(mapped))
        flat = np.fromiter(
            (ordinal[v] for targets in mapped for v in targets), np.int32, int(lengths.sum())
        )
        starts = np.cumsum(lengths) - lengths
        # Each entry repeated once per value it maps to, then each (document, value) kept once.
        counts = lengths[entry_value]
        ends = np.cumsum(counts)
        within = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - counts, counts)
        docs = np.repeat(entry_doc, counts)
        new_values = flat[np.repeat(starts[entry_value], counts) + within]
        docs, new_values = _first_of_each_pair(docs.astype(np.int32), new_values.astype(np.int32))
        totals = np.bincount(new_values, minlength=len(values))
        texts = [describe(v) for v in values] if describe else None
        return ValueColumn(values, docs, new_values, totals, search_texts=texts)

    def ordinal(self, value: str) -> int | None:
        """The ordinal of a value, matched exactly or else case- and accent-insensitively."""
        position = bisect.bisect_left(self.values, value)
        if position < len(self.values) and self.values[position] == value:
            return position
        if self._by_folded is None:
            folded: dict[str, int] = {}
            for i, candidate in enumerate(self.values):
                folded.setdefault(fold(candidate), i)
            self._by_folded = folded
        return self._by_folded.get(fold(value))

    def documents_with(self, values: Iterable[str], doc_count: int) -> np.ndarray:
        """Boolean mask of the documents having any of `values` (OR within a facet)."""
        ordinals = [o for o in (self.ordinal(v) for v in values) if o is not None]
        mask = np.zeros(doc_count, dtype=bool)
        if ordinals:
            mask[self.entry_doc[np.isin(self.entry_value, ordinals)]] = True
        return mask

    def counts(self, documents: np.ndarray) -> np.ndarray:
        """Matching documents per value ordinal, for a boolean document mask."""
        docs = np.flatnonzero(documents)
        offsets = self._offsets(len(documents))
        if offsets is None or len(docs) * _SPARSE_FRACTION >= len(documents):
            # Many matches: one pass over all entries is cheaper than gathering ranges.
            matched = self.entry_value[documents[self.entry_doc]]
        else:
            starts = offsets[docs]
            lengths = offsets[docs + 1] - starts
            # The entry indexes of the matched documents: each start repeated over its range,
            # plus a running count within the range.
            ends = np.cumsum(lengths)
            within = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(
                ends - lengths, lengths
            )
            matched = self.entry_value[np.repeat(starts, lengths) + within]
        return np.bincount(matched, minlength=len(self.values))

    def _offsets(self, doc_count: int) -> np.ndarray | None:
        """Where each document's entries start (and the last ends); None if not in doc order."""
        if self._entry_offsets is None or len(self._entry_offsets) != doc_count + 1:
            docs = self.entry_doc
            if len(docs) and not bool(np.all(docs[1:] >= docs[:-1])):
                return None
            self._entry_offsets = np.searchsorted(docs, np.arange(doc_count + 1))
        return self._entry_offsets

    def top_values(
        self, documents: np.ndarray, size: int, selected: Iterable[str] = ()
    ) -> tuple[FacetValue, ...]:
        """`top(counts(documents), size, selected)`, counting only the values that can make it.

        With many matches, counting every value costs a pass over every entry (for authors, one
        per author of every record) and a scan of every count. But a value's count cannot exceed
        its total: counting values from the largest total down, once `size` values have a count
        above the largest total left, no value left can enter the list.
        """
        if size <= 0:
            return ()
        if int(np.count_nonzero(documents)) * _SPARSE_FRACTION < len(documents):
            # Few matches: gathering their entries is cheaper than any pass by value.
            return self.top(self.counts(documents), size, selected)
        ranked = self.value_major().counts_that_can_rank(documents, size)
        if ranked is None:
            return self.top(self.counts(documents), size, selected)
        ordinals, counts = ranked
        keep = counts > 0
        ordinals, counts = ordinals[keep], counts[keep]
        order = np.lexsort((ordinals, -counts))[:size]
        chosen = self._ordinals(selected)
        return tuple(
            FacetValue(self.values[i], int(n), i in chosen)
            for i, n in zip(ordinals[order].tolist(), counts[order].tolist(), strict=True)
        )

    def value_major(self) -> ValueMajor:
        """The entries grouped by value, most frequent first (built on first use unless the
        saved table carried them)."""
        if self._by_total is None:
            self._by_total = ValueMajor.of(self)
        return self._by_total

    def top(self, counts: np.ndarray, size: int, selected: Iterable[str] = ()) -> tuple:
        """The `size` values with the highest non-zero counts, ties by value."""
        present = np.flatnonzero(counts)
        if len(present) > size:
            # Sort only what can make the list: the counts above the size-th largest, and of
            # the values tied at it the first ones (`present` is in value order).
            present_counts = counts[present]
            cut = np.partition(present_counts, len(present) - size)[len(present) - size]
            above = present[present_counts > cut]
            tied = present[present_counts == cut][: size - len(above)]
            present = np.concatenate((above, tied))
        order = present[np.lexsort((present, -counts[present]))][:size]
        chosen = self._ordinals(selected)
        return tuple(FacetValue(self.values[i], int(counts[i]), i in chosen) for i in order)

    def _ordinals(self, values: Iterable[str]) -> set[int]:
        """The ordinals of the values a filter selects (matched as `documents_with` matches)."""
        return {o for o in (self.ordinal(v) for v in values) if o is not None}

    def values_matching(self, prefix: str) -> np.ndarray:
        """Ordinals of the values with a word starting with `prefix` (folded); all for ''."""
        wanted = fold(prefix)
        if not wanted:
            return np.arange(len(self.values))
        if self._word_starts is None:
            self._index_word_starts()
        starts, ordinals = self._word_starts, self._word_start_values
        assert starts is not None and ordinals is not None
        low = bisect.bisect_left(starts, wanted)
        high = bisect.bisect_left(starts, wanted + "\U0010ffff", lo=low)
        return np.unique(ordinals[low:high])

    def by_popularity(self, ordinals: np.ndarray, limit: int) -> tuple[FacetValue, ...]:
        """The values of `ordinals` with the most documents in the index, ties by value."""
        order = ordinals[np.lexsort((ordinals, -self.totals[ordinals]))][:limit]
        return tuple(FacetValue(self.values[i], int(self.totals[i])) for i in order)

    def _index_word_starts(self) -> None:
        # Every folded value from each of its word starts ("venkataraman", "shivaram venk..."),
        # sorted: a prefix is then a range found by bisection, whatever the number of values.
        folded = [fold(value) for value in (self.search_texts or self.values)]
        # One regex pass over every value (a call per value was most of the time):
        # joined by newlines, which fold() never leaves inside a value and which start a word
        # as the start of a value does.
        joined = "\n".join(folded)
        ends = np.cumsum(np.fromiter((len(f) + 1 for f in folded), np.int64, len(folded))) - 1
        positions = np.fromiter(
            (match.start() for match in _WORD_START.finditer(joined)), dtype=np.int64
        )
        ordinals = np.searchsorted(ends, positions, side="right")
        starts = [
            joined[start:end]
            for start, end in zip(positions.tolist(), ends[ordinals].tolist(), strict=True)
        ]
        # A stable sort by text alone: equal texts keep their ordinals' order, as sorting the
        # (text, ordinal) pairs would, without comparing a tuple at every step.
        order = sorted(range(len(starts)), key=starts.__getitem__)
        self._word_start_values = ordinals[order]
        self._word_starts = [starts[i] for i in order]


def _first_of_each_pair(docs: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (document, value) entries without repeats, each pair's first kept, in order.

    Entries come grouped by document, a few to a document: a repeat can only follow its first
    within the run, so comparing each entry with the few before it finds every one in linear
    time, where sorting a million records' pairs took most of a first faceted search. Long
    runs, or entries not in document order, are sorted as before.
    """
    if not len(docs):
        return docs, values
    run_starts = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1])))
    longest = int(np.diff(np.append(run_starts, len(docs))).max())
    if longest > _SHORT_RUN or not bool(np.all(docs[1:] >= docs[:-1])):
        pair = docs.astype(np.int64) * (int(values.max()) + 1) + values
        keep = np.sort(np.unique(pair, return_index=True)[1])
        return docs[keep], values[keep]
    repeat = np.zeros(len(docs), dtype=bool)
    for back in range(1, longest):
        repeat[back:] |= (docs[back:] == docs[:-back]) & (values[back:] == values[:-back])
    keep = ~repeat
    return docs[keep], values[keep]


@dataclass(frozen=True)
class ValueMajor:
    """The entries of a column's most frequent values, grouped by value, largest total first.

    Only the `_RANKED_VALUES` values with the most documents: finding a top N goes down from
    the largest total and stops early, and grouping every entry would cost a sort of them all
    when a process first counts, paid by whichever request comes first.
    """

    ordinals: np.ndarray  # value ordinals, most documents first (ties by ordinal)
    rising: np.ndarray  # their totals negated (ascending, for searchsorted); values with entries
    starts: np.ndarray  # ordinals[i]'s documents are docs[starts[i]:starts[i + 1]]
    docs: np.ndarray  # intp: numpy indexes with intp without converting every index first
    complete: bool  # whether every value with entries is here

    @classmethod
    def of(cls, column: ValueColumn) -> ValueMajor:
        totals = np.asarray(column.totals, dtype=np.int64)
        present = np.flatnonzero(totals)
        if len(present) > _RANKED_VALUES:
            # The most frequent values, in no order (ties at the cut taken arbitrarily: every
            # value left out has a total at most that of any value kept, which is what counts).
            cut = len(present) - _RANKED_VALUES
            present = present[np.argpartition(totals[present], cut)[cut:]]
        ordinals = present[np.lexsort((present, -totals[present]))]
        # Ranks fit in 16 bits, so numpy groups the entries with a radix sort, in linear time.
        rank = np.full(len(totals), _RANKED_VALUES, dtype=np.uint16)
        rank[ordinals] = np.arange(len(ordinals), dtype=np.uint16)
        entry_rank = rank[column.entry_value]
        kept = np.flatnonzero(entry_rank < _RANKED_VALUES)
        grouped = kept[np.argsort(entry_rank[kept], kind="stable")]
        docs = np.asarray(column.entry_doc)[grouped].astype(np.intp)
        starts = np.concatenate(([0], np.cumsum(totals[ordinals])))
        complete = len(ordinals) == np.count_nonzero(totals)
        return cls(ordinals, -totals[ordinals], starts, docs, complete)

    def counts_that_can_rank(self, documents: np.ndarray, size: int) -> tuple | None:
        """(ordinals, counts) of a prefix of the values by total that holds the top `size`,
        or None when the values held here cannot tell (the caller then counts every value).

        Every value left out has a total, and so a count, below the size-th largest count
        found; a value whose total equals it is counted, since it could tie and come first.
        """
        held = len(self.ordinals)
        counts = np.zeros(held, dtype=np.int64)
        done, end = 0, min(held, max(2 * size, _FIRST_VALUES))
        while True:
            if end > done:
                first, last = self.starts[done], self.starts[end]
                # Every value held has entries, so no range is empty (reduceat misreads those).
                counts[done:end] = np.add.reduceat(
                    documents[self.docs[first:last]], self.starts[done:end] - first, dtype=np.int64
                )
                done = end
            found = counts[:done][counts[:done] > 0]
            if len(found) >= size:
                kth = np.partition(found, len(found) - size)[len(found) - size]
                # Values are in descending total order: those with a total >= kth come first.
                reach = int(np.searchsorted(self.rising, -kth, side="right"))
                if reach == held and not self.complete:
                    return None  # a value not held may have a total >= kth
                if reach <= done:
                    break
                end = reach
            elif done < held:
                end = min(held, 4 * done)
            elif self.complete:
                break  # fewer than `size` values matched at all
            else:
                return None
        return self.ordinals[:done], counts[:done]


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
        return cls(doc_count, live, year, _title_rank(reader, doc_count), columns)

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
        return cls(doc_count, live, year, _title_rank(reader, doc_count), columns)

    def column(self, facet: str, primary_only: bool = False) -> ValueColumn:
        """The column a facet counts: a stored one, or for a subject facet the canonical
        categories or archives derived from the stored categories (primary ones only with
        `primary_only`). Derived here, not stored, so a new taxonomy needs no rebuild (a saved
        table carries them only for the taxonomy it was saved with, see `seed_derived`)."""
        if not facet_named(facet).hierarchical:
            return self.columns[facet]
        return self._derive(facet, primary_only, *_derivation(facet))

    def held_columns(self) -> list[ValueColumn]:
        """The stored columns and those derived so far."""
        return [*self.columns.values(), *self._derived.values()]

    def derived_mapping(self, facet: str) -> list[list[str]]:
        """What each stored category value maps to in a subject facet's column, under the
        taxonomy of this process."""
        mapping, _ = _derivation(facet)
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
        _, describe = _derivation(facet)
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


def _derivation(facet: str) -> tuple[Callable[[str], tuple[str, ...]], Callable[[str], str]]:
    """How a subject facet's column is derived from stored categories: each value's mapping,
    and what a value prefix is looked for in."""
    searched_text = facet_named(facet).searched_text
    if facet == "category":
        return _canonical_of, searched_text
    return taxonomy().archives_of, searched_text


def _canonical_of(code: str) -> tuple[str, ...]:
    return (taxonomy().canonical(code),)


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


def _title_rank(reader: IndexReader, doc_count: int) -> np.ndarray:
    """Each document's position in title order (the `title_sort` column holds the keys), equal
    titles in document order.

    Every title held at once took more memory than the rest of a million-record table; the
    documents are ordered by the first _TITLE_PREFIX bytes of their keys instead (UTF-8 bytes
    order as str does), and only a run of documents whose prefixes tie reads its titles.
    """
    prefixes = np.zeros((doc_count, _TITLE_PREFIX), dtype=np.uint8)
    columns = []
    for leaf, offset in reader.leaf_readers():
        if not leaf.doc_count_all():
            continue
        keys = leaf_column_bytes(leaf, "title_sort")
        release_mapped_pages(leaf)
        padded = b"".join(key[:_TITLE_PREFIX].ljust(_TITLE_PREFIX, b"\0") for key in keys)
        prefixes[offset : offset + len(keys)] = np.frombuffer(padded, np.uint8).reshape(
            len(keys), _TITLE_PREFIX
        )
        columns.append((offset, leaf.column_reader("title_sort", translate=False)))
    words = prefixes.view(">u8")  # big-endian words compare as the bytes do
    del prefixes
    order = np.lexsort(
        [np.arange(doc_count), *(words[:, i] for i in reversed(range(words.shape[1])))]
    )
    ordered = words[order]
    tied = np.all(ordered[1:] == ordered[:-1], axis=1)
    del words, ordered
    if tied.any():
        starts = [offset for offset, _ in columns]

        def title(docnum: int) -> bytes:
            number = bisect.bisect_right(starts, docnum) - 1
            offset, column = columns[number]
            return column[docnum - offset]

        # Runs of ties: each i with tied[i] joins order[i + 1] to order[i]'s run.
        edges = np.flatnonzero(np.diff(np.concatenate(([0], tied.astype(np.int8), [0]))))
        for first, last in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
            run = order[first : last + 1].tolist()  # in document order already
            order[first : last + 1] = sorted(run, key=title)
    for leaf, _ in reader.leaf_readers():
        release_mapped_pages(leaf)  # the titles of ties, read again
    title_rank = np.empty(doc_count, dtype=np.int32)
    title_rank[order] = np.arange(doc_count, dtype=np.int32)
    return title_rank


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


def release_mapped_pages(leaf: IndexReader) -> None:
    """Drop from this process the pages of a segment's compound file that it has read.

    Whoosh maps a segment's file, and every page a pass over all documents reads (their facet
    values, title keys, term tables) stays in the process's RSS: 1.7 GB at five million
    records, in the build that saves the state's arrays. The pages stay in the page cache, and
    a later read maps them again at the cost of a minor fault.
    """
    storage = getattr(leaf, "_storage", None)
    source = getattr(getattr(storage, "a", storage), "_source", None)  # OverlayStorage's a
    if isinstance(source, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            source.madvise(mmap.MADV_DONTNEED)


def leaf_column_bytes(leaf: IndexReader, name: str) -> list[bytes]:
    """One segment's values of a bytes column, read in one piece where the column is Whoosh's
    VarBytesColumn, else value by value."""
    column = leaf.column_reader(name, translate=False) if leaf.has_column(name) else None
    if column is None or type(column) is not VarBytesColumn.Reader:
        return list(leaf.column_reader(name, translate=False))
    starts = np.asarray(column._offsets, dtype=np.int64)
    ends = starts + np.asarray(column._lengths, dtype=np.int64)
    data = column._dbfile.get(column._basepos, int(ends.max()) if len(ends) else 0)
    return [data[start:end] for start, end in zip(starts.tolist(), ends.tolist(), strict=True)]


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
