"""Posting lists and field lengths of one index snapshot as numpy arrays, decoded once.

`SnapshotArrays` belongs to one committed state of the index (the segments a reader sees, with
their deletions). It gives, for a (field, term), the global document numbers and term weights of
the live documents containing it (`Postings`), sliced from each segment's memory-mapped
posting-arrays file (posting_arrays_file.py) or, for a segment without a sound one, decoded
from Whoosh's posting blocks (posting_blocks.py) and then kept in a byte-bounded LRU; and for a
field, every document's length as the byte Whoosh stores (`length_bytes`, decoded with
`LENGTH_OF_BYTE`) plus the collection statistics the ranking needs. `array_scoring.rank` scores
queries over these arrays.

A reader of another state of the index (a rebuild, an update, a merge) has another
`signature`: `arrays_for(reader)` then gives fresh arrays, so numbers never mix.

Whoosh readers are not thread-safe (their files keep a read position) and are closed with
their searcher, so the arrays keep none: methods that may read the index take the caller's
`reader`, one of the same snapshot (e.g. that of the searcher checked out for the call).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
from whoosh.reading import IndexReader
from whoosh.util.numeric import byte_to_length, length_to_byte

from searchsvc.backends.whoosh.accel.posting_arrays_file import (
    PostingArrays,
    SidecarDamaged,
    segment_folder,
    sidecar_path,
)
from searchsvc.backends.whoosh.accel.posting_blocks import leaf_postings

# Posting lists decoded from Whoosh's blocks kept per snapshot, in bytes (docs int32 + weights
# float32: 8 bytes a posting). Sized to hold every posting list of `content` of a mid-sized index.
DEFAULT_POSTINGS_BUDGET = 64 * 1024 * 1024
# Snapshots `arrays_for` keeps: the live one and the one searchers may still be finishing with.
KEEP_SNAPSHOTS = 2

# Whoosh stores a document's field length as one byte (a logarithmic approximation) and scores
# with the length that byte decodes to; index i holds the length byte i stands for.
LENGTH_OF_BYTE = np.asarray([byte_to_length(b) for b in range(256)], dtype=np.float64)

_EMPTY_DOCS = np.zeros(0, dtype=np.int32)
_EMPTY_WEIGHTS = np.zeros(0, dtype=np.float32)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Postings:
    """The live documents containing one term of one field, in document order."""

    docs: np.ndarray  # int32 global document numbers, ascending
    # Term weight (the frequency, for text fields), exact: uint16 from posting-arrays files
    # (frequencies), else float32 when it holds every weight, else float64.
    weights: np.ndarray
    doc_frequency: int  # Whoosh's document frequency: deleted documents included, as idf uses
    frequency: float  # Whoosh's total weight of the term (its occurrences), likewise

    @property
    def nbytes(self) -> int:
        return self.docs.nbytes + self.weights.nbytes


def reader_signature(reader: IndexReader) -> tuple[Hashable, ...]:
    """What identifies the documents a reader sees: its segments, their sizes and deletions."""
    parts: list[Hashable] = []
    for leaf, offset in reader.leaf_readers():
        segment = leaf.segment() if hasattr(leaf, "segment") else None
        segment_id = segment.segment_id() if segment is not None else id(leaf)
        parts.append((segment_id, offset, leaf.doc_count_all(), leaf.doc_count()))
    return tuple(parts)


class _ByteBudgetCache:
    """A least-recently-used mapping bounded by the bytes of its values (`.nbytes`)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[Hashable, Postings] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Postings | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Postings) -> None:
        size = value.nbytes
        if size > self.max_bytes:
            return  # larger than the whole budget: decoded for this call only
        with self._lock:
            previous = self._items.pop(key, None)
            if previous is not None:
                self.nbytes -= previous.nbytes
            self._items[key] = value
            self.nbytes += size
            while self.nbytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self.nbytes -= evicted.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0

    def __len__(self) -> int:
        return len(self._items)


class SnapshotArrays:
    """Per-document arrays and cached posting lists of one index snapshot."""

    def __init__(self, reader: IndexReader, postings_budget: int = DEFAULT_POSTINGS_BUDGET):
        self.signature = reader_signature(reader)
        self.doc_count = reader.doc_count_all()  # deleted documents included, as Whoosh counts
        self.schema = reader.schema
        self.live = np.ones(self.doc_count, dtype=bool)
        self._leaves_with_deletions: set[int] = set()
        for number, (leaf, offset) in enumerate(reader.leaf_readers()):
            if leaf.has_deletions():
                deleted = np.fromiter(_deleted_docs(leaf), dtype=np.int64)
                self.live[deleted + offset] = False
                self._leaves_with_deletions.add(number)
        # Each segment's posting-arrays file, when it has a sound one (else its blocks are read).
        self._sidecars: list[PostingArrays | None] = [
            _open_sidecar(leaf) for leaf, _ in reader.leaf_readers()
        ]
        self._postings = _ByteBudgetCache(postings_budget)
        self._lengths: dict[str, np.ndarray] = {}
        self._field_lengths: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- identity ----------------------------------------------------------------------------
    def belongs_to(self, reader: IndexReader) -> bool:
        """Whether `reader` sees the same documents under the same numbers."""
        return reader_signature(reader) == self.signature

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (posting lists, lengths, live mask)."""
        lengths = sum(column.nbytes for column in self._lengths.values())
        return self._postings.nbytes + lengths + self.live.nbytes

    @property
    def postings_nbytes(self) -> int:
        return self._postings.nbytes

    def clear_postings(self) -> None:
        """Forget the cached posting lists (field lengths stay)."""
        self._postings.clear()

    # -- posting lists -----------------------------------------------------------------------
    def postings(self, reader: IndexReader, field: str, text: str | bytes) -> Postings:
        """The live documents with `text` in `field` (none for an unknown field or value)."""
        btext = self._term_bytes(field, text)
        if btext is None:
            return Postings(_EMPTY_DOCS, _EMPTY_WEIGHTS, 0, 0.0)
        key = (field, btext)
        cached = self._postings.get(key)
        if cached is not None:
            return cached
        postings, every_leaf_mapped = self._decode(reader, field, btext)
        if not every_leaf_mapped:
            # Only decoded lists are kept: slicing the mapped files again costs about as much as
            # a cache hit and holds no memory.
            self._postings.put(key, postings)
        return postings

    def _term_bytes(self, field: str, text: str | bytes) -> bytes | None:
        if field not in self.schema:
            return None
        if isinstance(text, bytes):
            return text
        try:
            # The same conversion `query.Term.matcher` makes (a bad numeric value matches none).
            return self.schema[field].to_bytes(text)
        except ValueError:
            return None

    def _decode(self, reader: IndexReader, field: str, btext: bytes) -> tuple[Postings, bool]:
        """The term's postings, and whether every segment gave them from its mapped file."""
        docs: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        sidecar_frequency = 0
        sidecar_weight = 0  # occurrences: the mapped weights are frequencies (uint16)
        every_leaf_mapped = True
        for number, (leaf, offset) in enumerate(reader.leaf_readers()):
            found = self._mapped_postings(number, field, btext)
            if found is None:
                every_leaf_mapped = False
                found = leaf_postings(leaf, field, btext)
                if found is None:
                    continue
            else:
                sidecar_frequency += len(found[0])
                sidecar_weight += int(found[1].sum(dtype=np.int64))
            leaf_docs, leaf_weights = found
            if number in self._leaves_with_deletions:
                alive = self.live[leaf_docs + offset]
                leaf_docs, leaf_weights = leaf_docs[alive], leaf_weights[alive]
            if len(leaf_docs):
                # int32 global numbers, made in one step (the mapped docs are read-only views).
                docs.append(np.add(leaf_docs, offset, dtype=np.int32))
                weights.append(leaf_weights)
        # Whoosh's document frequency and total weight count every posting, deleted documents
        # too: the mapped lists' when every segment has its file, else Whoosh's term table.
        if every_leaf_mapped:
            doc_frequency, frequency = sidecar_frequency, float(sidecar_weight)
        else:
            doc_frequency = reader.doc_frequency(field, btext)
            frequency = reader.frequency(field, btext)
        if not docs:
            return (
                Postings(_EMPTY_DOCS, _EMPTY_WEIGHTS, doc_frequency, frequency),
                every_leaf_mapped,
            )
        all_docs = docs[0] if len(docs) == 1 else np.concatenate(docs)
        all_weights = weights[0] if len(weights) == 1 else np.concatenate(weights)
        if all_weights.dtype == np.float64:
            narrow = all_weights.astype(np.float32)
            if np.array_equal(narrow, all_weights):
                all_weights = narrow  # frequencies: float32 holds them exactly, in half the bytes
        return Postings(all_docs, all_weights, doc_frequency, frequency), every_leaf_mapped

    def _mapped_postings(
        self, number: int, field: str, btext: bytes
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """A term's postings in leaf `number` from its posting-arrays file; None without one."""
        sidecar = self._sidecars[number]
        if sidecar is None or not sidecar.has_field(field):
            return None
        try:
            return sidecar.postings(field, btext)
        except (SidecarDamaged, ValueError, IndexError) as exc:
            log.warning("not using posting arrays of %s any more: %r", sidecar.segment_id, exc)
            self._sidecars[number] = None
            return None

    # -- field statistics --------------------------------------------------------------------
    def length_bytes(self, reader: IndexReader, field: str) -> np.ndarray:
        """Every document's length in `field` as the byte Whoosh stores (0: empty or none)."""
        column = self._lengths.get(field)
        if column is not None:
            return column
        column = self._load_lengths(reader, field)
        with self._lock:
            return self._lengths.setdefault(field, column)

    def _load_lengths(self, reader: IndexReader, field: str) -> np.ndarray:
        column = np.zeros(self.doc_count, dtype=np.uint8)
        for leaf, offset in reader.leaf_readers():
            count = leaf.doc_count_all()
            column[offset : offset + count] = _segment_length_bytes(leaf, field, count)
        return column

    def field_length(self, reader: IndexReader, field: str) -> int:
        """Total length of `field` over the index (deleted documents included, as Whoosh has it)."""
        total = self._field_lengths.get(field)
        if total is None:
            total = self._field_lengths.setdefault(field, reader.field_length(field))
        return total

    def avg_field_length(self, reader: IndexReader, field: str) -> float:
        """The average length BM25F divides by: `Searcher.avg_field_length(field) or 1`."""
        return (self.field_length(reader, field) / (self.doc_count or 1)) or 1


def _open_sidecar(leaf) -> PostingArrays | None:
    folder = segment_folder(leaf)
    if folder is None or not hasattr(leaf, "segment"):
        return None
    segment_id = leaf.segment().segment_id()
    return PostingArrays.open(sidecar_path(folder, segment_id), segment_id, leaf.doc_count_all())


def _deleted_docs(leaf) -> Iterable[int]:
    """Segment-local numbers of a segment reader's deleted documents."""
    segment = leaf.segment() if hasattr(leaf, "segment") else None
    if segment is not None and hasattr(segment, "deleted_docs"):
        return segment.deleted_docs()
    return (docnum for docnum in range(leaf.doc_count_all()) if leaf.is_deleted(docnum))


def _segment_length_bytes(leaf, field: str, count: int) -> np.ndarray:
    """A segment's length bytes of `field`: the whole column in one read when possible."""
    perdoc = getattr(leaf, "_perdoc", None)
    column = None
    if perdoc is not None and hasattr(perdoc, "_cached_reader"):
        column = perdoc._cached_reader(_lenfield(field), LENGTHS_COLUMN)
    if column is None and perdoc is not None and hasattr(perdoc, "_cached_reader"):
        return np.zeros(count, dtype=np.uint8)  # the field stores no lengths
    stored = getattr(column, "_count", None)
    dbfile = getattr(column, "_dbfile", None)
    if column is not None and stored is not None and dbfile is not None:
        raw = np.frombuffer(dbfile.get(column._basepos, min(stored, count)), dtype=np.uint8)
        result = np.zeros(count, dtype=np.uint8)
        result[: len(raw)] = raw  # documents past the column's end have the default, 0
        return result
    # Any other codec: per document, through the public API.
    return np.fromiter(
        (length_to_byte(leaf.doc_field_length(docnum, field) or 0) for docnum in range(count)),
        dtype=np.uint8,
        count=count,
    )


# -- one SnapshotArrays per snapshot, for callers that do not keep their own -------------------
_registry: OrderedDict[tuple[Hashable, ...], SnapshotArrays] = OrderedDict()
_registry_lock = threading.Lock()


def arrays_for(reader: IndexReader) -> SnapshotArrays:
    """The arrays of the snapshot `reader` sees, built on first use; the newest few are kept."""
    signature = reader_signature(reader)
    with _registry_lock:
        arrays = _registry.get(signature)
        if arrays is not None:
            _registry.move_to_end(signature)
            return arrays
    built = SnapshotArrays(reader)
    with _registry_lock:
        arrays = _registry.setdefault(signature, built)
        _registry.move_to_end(signature)
        while len(_registry) > KEEP_SNAPSHOTS:
            _registry.popitem(last=False)
    return arrays
