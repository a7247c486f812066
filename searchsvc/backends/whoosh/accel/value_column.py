"""One facet's values of every document as arrays (a ValueColumn): each document's entries are
value ordinals, and a count over matched documents is one `np.bincount`; with a value-major
copy (ValueMajor) that bounds a top N without counting every value.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from searchsvc.domain.query import FacetValue
from searchsvc.domain.texts import fold

# Entries of one document compared with each other rather than sorted (_first_of_each_pair).
_SHORT_RUN = 16
# Where a facet value may be entered by a word prefix ("venkat" finds "Shivaram Venkataraman").
_WORD_START = re.compile(r"(?:^|(?<=[\s.\-_']))(?=\w)")
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
