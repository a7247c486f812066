"""Posting lists and field lengths of one index snapshot as numpy arrays, decoded once.

`SnapshotArrays` belongs to one committed state of the index (the segments a reader sees, with
their deletions). It gives, for a (field, term), the global document numbers and term weights of
the live documents containing it (`Postings`), decoded from Whoosh's posting blocks the first
time and then kept in a byte-bounded LRU; and for a field, every document's length as the byte
Whoosh stores (`length_bytes`, decoded with `LENGTH_OF_BYTE`) plus the collection statistics
BM25F needs. `scoring.rank` scores queries over these arrays.

A reader of another state of the index (a rebuild, an update, a merge) has another
`signature`: `arrays_for(reader)` then gives fresh arrays, so numbers never mix.

Whoosh readers are not thread-safe (their files keep a read position) and are closed with
their searcher, so the arrays keep none: methods that may read the index take the caller's
`reader`, one of the same snapshot (e.g. that of the searcher checked out for the call).
"""

from __future__ import annotations

import pickle
import threading
import zlib
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher, _lenfield
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import IndexReader, TermNotFound
from whoosh.util.numeric import byte_to_length, length_to_byte

# Decoded posting lists kept per snapshot, in bytes (docs int32 + weights float32: 8 bytes a
# posting). At 40k records every posting list of `content` together is about 30 MB.
DEFAULT_POSTINGS_BUDGET = 64 * 1024 * 1024
# Posting lists shorter than this (one block) decode faster posting by posting than with numpy.
SHORT_LIST = 32
# Snapshots `arrays_for` keeps: the live one and the one searchers may still be finishing with.
KEEP_SNAPSHOTS = 2

# Whoosh stores a document's field length as one byte (a logarithmic approximation) and scores
# with the length that byte decodes to; index i holds the length byte i stands for.
LENGTH_OF_BYTE = np.asarray([byte_to_length(b) for b in range(256)], dtype=np.float64)

_EMPTY_DOCS = np.zeros(0, dtype=np.int32)
_EMPTY_WEIGHTS = np.zeros(0, dtype=np.float32)


@dataclass(frozen=True)
class Postings:
    """The live documents containing one term of one field, in document order."""

    docs: np.ndarray  # int32 global document numbers, ascending
    weights: np.ndarray  # term weight (the frequency, for text fields): float32 when exact
    doc_frequency: int  # Whoosh's document frequency: deleted documents included, as idf uses

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
        for leaf, offset in reader.leaf_readers():
            if leaf.has_deletions():
                deleted = np.fromiter(_deleted_docs(leaf), dtype=np.int64)
                self.live[deleted + offset] = False
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
            return Postings(_EMPTY_DOCS, _EMPTY_WEIGHTS, 0)
        key = (field, btext)
        cached = self._postings.get(key)
        if cached is not None:
            return cached
        postings = self._decode(reader, field, btext)
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

    def _decode(self, reader: IndexReader, field: str, btext: bytes) -> Postings:
        docs: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for leaf, offset in reader.leaf_readers():
            try:
                matcher = leaf.postings(field, btext)
            except TermNotFound:
                continue
            # Deleted documents are taken out below with the live mask, in one numpy step.
            while isinstance(matcher, FilterMatcher):
                matcher = matcher.child
            if isinstance(matcher, W3LeafMatcher) and not (
                matcher._lastblock and matcher._blocklength < SHORT_LIST
            ):
                leaf_docs, leaf_weights = _decode_blocks(matcher)
            else:
                leaf_docs, leaf_weights = _decode_matcher(matcher)
            docs.append(leaf_docs + offset)
            weights.append(leaf_weights)
        if not docs:
            return Postings(_EMPTY_DOCS, _EMPTY_WEIGHTS, 0)
        all_docs = np.concatenate(docs).astype(np.int32, copy=False)
        all_weights = np.concatenate(weights).astype(np.float64, copy=False)
        narrow = all_weights.astype(np.float32)
        if np.array_equal(narrow, all_weights):
            all_weights = narrow  # frequencies: float32 holds them exactly, in half the bytes
        alive = self.live[all_docs]
        if not alive.all():
            all_docs, all_weights = all_docs[alive], all_weights[alive]
        return Postings(all_docs, all_weights, reader.doc_frequency(field, btext))

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


def _deleted_docs(leaf) -> Iterable[int]:
    """Segment-local numbers of a segment reader's deleted documents."""
    segment = leaf.segment() if hasattr(leaf, "segment") else None
    if segment is not None and hasattr(segment, "deleted_docs"):
        return segment.deleted_docs()
    return (docnum for docnum in range(leaf.doc_count_all()) if leaf.is_deleted(docnum))


def _decode_blocks(matcher: W3LeafMatcher) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights of a fresh on-disk posting list, block by block.

    A block holds a pickled (delta-encoded ids, weights, values) tuple. Unpickling it builds
    every posting's positions as well (one `_codecs.encode` call each, under pickle protocol
    2), which is most of Whoosh's decoding time; `_parse_block` reads the ids and weights
    straight from the pickle bytes instead when the block has the usual layout.
    """
    deltas: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    postfile = matcher._postfile
    while True:
        count = matcher._blocklength
        data = postfile.get(matcher._dataoffset, matcher._nextoffset - matcher._dataoffset)
        if matcher._compression:
            data = zlib.decompress(data)
        parsed = _parse_block(data, count)
        if parsed is None:
            block_ids, block_weights = pickle.loads(data)[:2]
            parsed = np.asarray(block_ids, dtype=np.int64), _block_weights(block_weights, count)
        deltas.append(parsed[0])
        weights.append(parsed[1])
        if matcher._lastblock:
            break
        matcher._goto(matcher._nextoffset)
    # Ids are delta-encoded within each block (the first one from 0): a cumulative sum over all
    # blocks, minus the running total at each block's start, decodes them all at once.
    sizes = np.fromiter((len(block) for block in deltas), dtype=np.int64, count=len(deltas))
    total = np.cumsum(np.concatenate(deltas).astype(np.int64, copy=False))
    starts = np.cumsum(sizes) - sizes
    before = np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0)
    ids = total - np.repeat(before, sizes)
    return ids, np.concatenate(weights)


# Pickle protocol 2 opcodes of a block's (ids, weights, values) tuple.
_PROTO_MARK = b"\x80\x02("  # protocol 2, then MARK: the ids tuple (4 ids or more) starts
_BININT1, _BININT2, _BININT = ord("K"), ord("M"), ord("J")
_TUPLE, _BINPUT, _LONG_BINPUT = ord("t"), ord("q"), ord("r")
_NONE, _BINFLOAT, _MARK = ord("N"), ord("G"), ord("(")
_FLOAT_OPS = np.dtype([("op", "u1"), ("value", ">f8")])
_FIRST_ID = {_BININT1: ("<u1", 2), _BININT2: ("<u2", 3), _BININT: ("<i4", 5)}


def _parse_block(data: bytes, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(id deltas, weights) of a block whose ids after the first are one-byte ints, else None.

    The layout: PROTO 2, MARK, the first id (the block's first document number, any int
    opcode), `count - 1` x (BININT1 delta), TUPLE, BINPUT; then the weights as NONE (all 1.0),
    one BINFLOAT (all equal) or MARK, `count` x (BINFLOAT w), TUPLE. Dense posting lists,
    which cost the most, have every delta below 256 in almost every block.
    """
    if count < 4 or not data.startswith(_PROTO_MARK):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    first = _FIRST_ID.get(int(raw[3]))
    if first is None:
        return None
    first_type, first_size = first
    start = 3 + first_size  # the second id's opcode
    end = start + 2 * (count - 1)  # the TUPLE closing the ids
    if len(raw) < end + 3 or raw[end] != _TUPLE or not (raw[start:end:2] == _BININT1).all():
        return None
    deltas = np.empty(count, dtype=np.int64)
    deltas[0] = np.frombuffer(data, dtype=first_type, count=1, offset=4)[0]
    deltas[1:] = raw[start + 1 : end : 2]
    position = end + 1
    if raw[position] == _BINPUT:
        position += 2
    elif raw[position] == _LONG_BINPUT:
        position += 5
    else:
        return None
    op = raw[position]
    if op == _NONE:
        return deltas, np.ones(count)
    if op == _BINFLOAT:
        value = np.frombuffer(data, dtype=">f8", count=1, offset=position + 1)[0]
        return deltas, np.full(count, value)
    closing = position + 1 + 9 * count
    if op != _MARK or len(raw) <= closing or raw[closing] != _TUPLE:
        return None
    floats = np.frombuffer(data, dtype=_FLOAT_OPS, count=count, offset=position + 1)
    if not (floats["op"] == _BINFLOAT).all():
        return None
    return deltas, floats["value"].astype(np.float64)


def _block_weights(block_weights, count: int) -> np.ndarray:
    # As W3LeafMatcher._read_weights: None means all 1.0, a float means all that value.
    if block_weights is None:
        return np.ones(count)
    if isinstance(block_weights, float):
        return np.full(count, block_weights)
    return np.asarray(block_weights, dtype=np.float64)


def _decode_matcher(matcher) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights through the plain Matcher interface (inlined postings)."""
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float64)


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
