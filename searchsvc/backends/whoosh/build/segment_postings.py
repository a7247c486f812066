"""A segment's term index (.trm) and posting lists (.pst), written a whole term at a time.

The layout is that of Whoosh's own `W3FieldWriter` / `W3PostingsWriter` (codec/whoosh3.py):
blocks of `BLOCK_LIMIT` postings, each a pickled (id deltas, weights, values) tuple compressed
in zlib's format behind a pickled block-info tuple, and a `W3TermInfo` per term in an
`OrderedHashWriter`. Two things differ from Whoosh's own writer, to write faster and smaller:
the block tuples are pickled at a newer protocol (`BLOCK_PROTOCOL`), and compressed by ISA-L
rather than zlib (`_COMPRESSION`); Whoosh reads both.
Whoosh builds each block one posting at a time through several method calls; here a term's
postings arrive as one list and each block is encoded with a few C-level calls. Where the C
extension `_w3postings` was built, it encodes every field (positions, spelling, ID, keyword and
numeric fields) and the term index's hash tables, and the build runs much faster; else
the Python code here does; tests/whoosh/test_native_postings.py holds the two to the same bytes.
tests/whoosh/test_fast_writer.py compares what Whoosh reads from these files with what it reads from
its own writer's.
"""

from __future__ import annotations

import hashlib
import pickle
import struct
from array import array
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import NamedTuple

import numpy as np
from isal import isal_zlib
from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec
from whoosh.filedb.filetables import OrderedHashWriter
from whoosh.system import pack_uint

try:
    from searchsvc.backends.whoosh.build import _w3postings  # type: ignore[attr-defined]
except ImportError:  # installed without a C compiler: the Python encoder below does the work
    _w3postings = None

BLOCK_LIMIT = 128  # W3Codec's default blocklimit
# Pickle protocol of a block's (ids, weights, values) tuple. Whoosh's writer uses 2, where each
# bytes value is pickled as a `_codecs.encode` call on its Latin-1 text; at 3 bytes are raw, so
# positions blocks come out smaller compressed and unpickle without a call per value. Whoosh's
# reader unpickles any protocol. Block infos stay at Whoosh's protocol 2.
BLOCK_PROTOCOL = 3
# Posting blocks are compressed by ISA-L (python-isal) at this level, in zlib's format, which
# Whoosh's reader decompresses with zlib (it records the level in each block's info and reads
# any non-zero one as "compressed"). Against zlib at Whoosh's level 3 it takes much less time
# for slightly larger blocks.
_COMPRESSION = 2
_compress_block = isal_zlib.compress
_TERM_INFO = struct.Struct("!BfIBBfII")  # W3TermInfo._struct
_BLOCK_LENGTH = struct.Struct("!i")
_EXTENT = struct.Struct("!qi")  # W3TermInfo.to_bytes: offset (long), length (int)
_FIELD_ID = struct.Struct("!H")
_HASH_ENTRY = struct.Struct("!ii")  # filetables._lengths: key length, value length
_FLUSH_BYTES = 1 << 20
# Compressed small blocks kept for reuse: at most this many, of at most this many bytes.
_CACHED_BLOCKS = 200_000
_CACHED_BLOCK_BYTES = 64
_TERM_INFO_SIZE = _TERM_INFO.size + _EXTENT.size

# How a format's posting values are packed in a block (W3PostingsWriter._mini_values).
VALUES_TUPLE, VALUES_NONE, VALUES_JOINED = "tuple", "none", "joined"

# (docnum, weight, value) of one posting.
Posting = tuple[int, float | int, bytes]


class FieldTokens(NamedTuple):
    """A field's tokens, in document order: each one's term (as its rank in the field's terms
    in byte order), document and position (int32 arrays; a document's positions ascend)."""

    ranks: np.ndarray
    docs: np.ndarray
    positions: np.ndarray


class FieldItems(NamedTuple):
    """Another field's postings, in document order: each one's term (as its rank in the
    field's terms in byte order), document (int32), weight (float64) and value."""

    ranks: np.ndarray
    docs: np.ndarray
    weights: np.ndarray
    values: list[bytes]


class DocValues(NamedTuple):
    """One bytes value per document: the values joined, and each one's end (int64)."""

    joined: bytes
    ends: np.ndarray

    @classmethod
    def of(cls, values: Sequence[bytes]) -> DocValues:
        ends = np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)))
        return cls(b"".join(values), ends.astype("<i8"))

    @classmethod
    def read(cls, joined: bytes, ends: bytes) -> DocValues:
        """From a C encoder's output: the joined values and their ends (little-endian int64)."""
        return cls(joined, np.frombuffer(ends, dtype="<i8"))

    def split(self) -> list[bytes]:
        starts = [0, *self.ends.tolist()]
        return [self.joined[a:b] for a, b in pairwise(starts)]


class FieldPostings(NamedTuple):
    """A written field's postings as flat arrays, term by term (accel/posting_arrays_file.py)."""

    docs: np.ndarray  # int32
    weights: np.ndarray  # frequencies (int32) of positions fields, float64 weights of others
    ends: np.ndarray  # int64: each term's end in `docs` and `weights`
    last_values: DocValues | None  # see SegmentPostingsWriter.add_positions_field

    @classmethod
    def read(
        cls, docs: bytes, weights: bytes, weight_type: str, ends: bytes, last_values=None
    ) -> FieldPostings:
        """From a C encoder's output: little-endian int32 documents, `weight_type` weights and
        int64 ends."""
        return cls(
            np.frombuffer(docs, dtype="<i4"),
            np.frombuffer(weights, dtype=weight_type),
            np.frombuffer(ends, dtype="<i8"),
            last_values,
        )


def _int32(values) -> np.ndarray:
    # The C encoders read their arrays' bytes as they are: give them the types they expect.
    return np.ascontiguousarray(values, dtype=np.int32)


def values_packing(fixed_value_size: int | None) -> str:
    if fixed_value_size is None or fixed_value_size < 0:
        return VALUES_TUPLE
    return VALUES_NONE if fixed_value_size == 0 else VALUES_JOINED


def _distinct_objects(values: Sequence[bytes]) -> tuple[bytes, ...]:
    # Callers share one bytes object between equal values (caches); pickle would write the
    # repeats as back-references, where Whoosh, which makes each value anew, writes them out.
    if len(set(map(id, values))) == len(values):
        return tuple(values)
    return tuple(map(bytes, map(bytearray, values)))  # equal values, all new objects


class _BufferedFile:
    """Appends to a Whoosh StructFile in large writes, knowing its position without asking."""

    def __init__(self, structfile) -> None:
        self.file = structfile
        self.position = structfile.tell()
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, parts: list[bytes], size: int) -> None:
        self._parts += parts
        self._size += size
        self.position += size
        if self._size >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        self.file.write(b"".join(self._parts))
        self._parts.clear()
        self._size = 0


class SegmentPostingsWriter:
    """Writes the terms of one segment, field by field in name order, terms in byte order."""

    def __init__(self, storage, segment, native: bool = True) -> None:
        # `native` False writes with the Python encoder even where the C one is built (tests).
        self._native = native and _w3postings is not None
        self._hash = _TermIndexWriter(
            segment.create_file(storage, W3Codec.TERMS_EXT), native=self._native
        )
        self._field_ids: dict[str, int] = {}
        self._hash.extras["fieldmap"] = self._field_ids
        self._terms = _BufferedFile(self._hash.dbfile)
        self._postings = _BufferedFile(segment.create_file(storage, W3Codec.POSTS_EXT))
        self._compressed: dict[bytes, bytes] = {}

    def _write_terms(self, prefix: bytes, terms, packing: str, length_bytes) -> None:
        """Write terms given in byte order with their postings in document order.

        `length_bytes[docnum]` is a document's field length byte (the length as Whoosh's
        writer reads it back, encoded again, which gives the same byte), or None for fields
        without lengths.
        """
        postings_file = self._postings
        encode_blocks = self._encode_blocks
        compress = self._compress
        dumps = pickle.dumps
        pack_info = _TERM_INFO.pack
        pack_extent = _EXTENT.pack
        pack_block_length = _BLOCK_LENGTH.pack
        keys: list[bytes] = []
        term_infos: list[bytes] = []
        for term, postings in terms:
            start = postings_file.position
            if len(postings) == 1:
                # Most terms have one posting: one block, written without the general loop.
                docnum, weight, value = postings[0]
                length_byte = length_bytes[docnum] if length_bytes is not None else 0
                max_weight = float(weight)
                if packing == VALUES_TUPLE:
                    mini_values = (value,)
                elif packing == VALUES_NONE:
                    mini_values = None
                else:
                    mini_values = value
                data = compress(
                    dumps(
                        ((docnum,), None if weight == 1 else float(weight), mini_values),
                        BLOCK_PROTOCOL,
                    )
                )
                info = dumps((1, docnum, max_weight, _COMPRESSION, length_byte, length_byte), 2)
                size = len(info) + len(data)
                parts = [WHOOSH3_HEADER_MAGIC, pack_block_length(-size), info, data]
                written = 8 + size
                postings_file.write(parts, written)
                term_info = pack_info(
                    0, weight, 1, length_byte, length_byte, max_weight, docnum, docnum
                ) + pack_extent(start, written)
            else:
                term_info = encode_blocks(postings, packing, length_bytes, start)
            keys.append(prefix + term)
            term_infos.append(term_info)
        self._add_terms(keys, b"".join(term_infos))

    def add_positions_field(
        self,
        fieldname: str,
        terms: Sequence[bytes],
        tokens: FieldTokens,
        doc_count: int,
        length_bytes: Sequence[int] | None,
        last_values: bool = False,
    ) -> FieldPostings:
        """Write a positions field from its tokens; return its postings as flat arrays.

        The field's terms are given in byte order. `length_bytes[docnum]` is a document's
        length byte (None for fields without lengths). With `last_values`, the result also has
        each document's value of the term that occurs first last: Whoosh posts the spelling
        words of a text with that value (see `add_spelling_words`).
        """
        field_id = self._field_ids.setdefault(fieldname, len(self._field_ids))
        prefix = _FIELD_ID.pack(field_id)
        if self._native:
            data, infos, docs, freqs, ends, values, value_ends = _w3postings.encode_positions_field(
                _int32(tokens.ranks),
                _int32(tokens.docs),
                _int32(tokens.positions),
                len(terms),
                doc_count,
                length_bytes,
                self._postings.position,
                WHOOSH3_HEADER_MAGIC,
                _compress_block,
                _COMPRESSION,
                last_values,
            )
            self._take_encoded(prefix, terms, data, infos)
            last = DocValues.read(values, value_ends) if last_values else None
            return FieldPostings.read(docs, freqs, "<i4", ends, last)
        postings, last_new = _postings_of_tokens(len(terms), tokens, doc_count)
        self._write_terms(prefix, zip(terms, postings, strict=True), VALUES_TUPLE, length_bytes)
        every = [posting for term_postings in postings for posting in term_postings]
        return FieldPostings(
            np.fromiter((posting[0] for posting in every), dtype=np.int32, count=len(every)),
            np.fromiter((posting[1] for posting in every), dtype=np.int32, count=len(every)),
            np.cumsum([len(term_postings) for term_postings in postings], dtype=np.int64),
            DocValues.of(last_new) if last_values else None,
        )

    def add_items_field(
        self,
        fieldname: str,
        terms: Sequence[bytes],
        items: FieldItems,
        packing: str,
        doc_count: int,
        length_bytes: Sequence[int] | None,
    ) -> FieldPostings:
        """Write a field from its postings (one a term and document); return them as arrays."""
        field_id = self._field_ids.setdefault(fieldname, len(self._field_ids))
        prefix = _FIELD_ID.pack(field_id)
        value_size = len(items.values[0]) if items.values else 0
        if (
            self._native
            and packing in (VALUES_NONE, VALUES_JOINED)
            and all(len(value) == value_size for value in items.values)
        ):
            data, infos, docs, weights, ends = _w3postings.encode_plain_field(
                _int32(items.ranks),
                _int32(items.docs),
                np.ascontiguousarray(items.weights, dtype=np.float64),
                b"".join(items.values) if packing == VALUES_JOINED else b"",
                value_size,
                packing == VALUES_JOINED,
                len(terms),
                doc_count,
                length_bytes,
                self._postings.position,
                WHOOSH3_HEADER_MAGIC,
                _compress_block,
                _COMPRESSION,
            )
            self._take_encoded(prefix, terms, data, infos)
            return FieldPostings.read(docs, weights, "<f8", ends)
        postings: list[list[Posting]] = [[] for _ in terms]
        for rank, doc, weight, value in zip(
            items.ranks.tolist(),
            items.docs.tolist(),
            items.weights.tolist(),
            items.values,
            strict=True,
        ):
            postings[rank].append((doc, weight, value))
        self._write_terms(prefix, zip(terms, postings, strict=True), packing, length_bytes)
        order = np.argsort(items.ranks, kind="stable")
        return FieldPostings(
            items.docs[order],
            items.weights[order],
            np.cumsum([len(term_postings) for term_postings in postings], dtype=np.int64),
            None,
        )

    def add_spelling_words(
        self, fieldname: str, words: Sequence[bytes], tokens: FieldTokens, values: DocValues
    ) -> None:
        """Write a spelling field from its words' occurrences (`tokens`, positions unused).

        Whoosh posts each spelling word of a document once, as (document 0, weight 1, the
        document's value in `values`), so a word's postings are the values of the documents
        it occurs in, sorted.
        """
        if self._native:
            field_id = self._field_ids.setdefault(fieldname, len(self._field_ids))
            prefix = _FIELD_ID.pack(field_id)
            data, infos = _w3postings.encode_spelling_field(
                _int32(tokens.ranks),
                _int32(tokens.docs),
                len(words),
                values.joined,
                np.ascontiguousarray(values.ends, dtype="<i8"),
                self._postings.position,
                WHOOSH3_HEADER_MAGIC,
                _compress_block,
                _COMPRESSION,
            )
            self._take_encoded(prefix, words, data, infos)
            return
        documents: list[set[int]] = [set() for _ in words]
        for rank, doc in zip(tokens.ranks.tolist(), tokens.docs.tolist(), strict=True):
            documents[rank].add(doc)
        value_of = values.split()
        self.add_spelling_field(
            fieldname,
            (
                (word, sorted(value_of[doc] for doc in docs))
                for word, docs in zip(words, documents, strict=True)
            ),
        )

    def add_spelling_field(self, fieldname: str, words: Iterable[tuple[bytes, list[bytes]]]):
        """Write a spelling field: each word with the sorted values of its postings.

        Whoosh posts every spelling word as (document 0, weight 1, value), so a block's ids
        are all 0 and its weights all 1; this is `_write_terms` for those postings, without
        building them.
        """
        field_id = self._field_ids.setdefault(fieldname, len(self._field_ids))
        prefix = _FIELD_ID.pack(field_id)
        postings_file = self._postings
        compress = self._compress
        dumps = pickle.dumps
        zeros = (0,) * BLOCK_LIMIT
        keys: list[bytes] = []
        term_infos: list[bytes] = []
        for word, values in words:
            start = postings_file.position
            count = len(values)
            parts = [WHOOSH3_HEADER_MAGIC]
            for begin in range(0, count, BLOCK_LIMIT):
                end = begin + BLOCK_LIMIT
                block = values[begin:end]
                ids = zeros if len(block) == BLOCK_LIMIT else (0,) * len(block)
                data = compress(dumps((ids, None, b"".join(block)), BLOCK_PROTOCOL))
                info = dumps((len(block), 0, 1, _COMPRESSION, 0, 0), 2)
                size = len(info) + len(data)
                parts += (_BLOCK_LENGTH.pack(size if end < count else -size), info, data)
            written = sum(map(len, parts))
            postings_file.write(parts, written)
            keys.append(prefix + word)
            term_infos.append(
                _TERM_INFO.pack(0, count, count, 0, 0, 1, 0, 0) + _EXTENT.pack(start, written)
            )
        self._add_terms(keys, b"".join(term_infos))

    def _take_encoded(
        self, prefix: bytes, terms: Sequence[bytes], data: bytes, term_infos: bytes
    ) -> None:
        """Write what a C encoder made of a field: its posting blocks and its terms' records."""
        self._postings.write([data], len(data))
        self._add_terms([prefix + term for term in terms], term_infos)

    def _add_terms(self, keys: Sequence[bytes], term_infos: bytes) -> None:
        """Term index records (OrderedHashWriter.add's) of `keys`, in order, with their
        `_TERM_INFO_SIZE`-byte infos joined in `term_infos`."""
        if not keys:
            return
        size = _TERM_INFO_SIZE
        pack = _HASH_ENTRY.pack
        parts = [
            part
            for number, key in enumerate(keys)
            for part in (pack(len(key), size), key, term_infos[number * size : (number + 1) * size])
        ]
        lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys)) + (8 + size)
        ends = np.cumsum(lengths)
        self._hash.add_records(self._terms.position + ends - lengths, keys)
        self._terms.write(parts, int(ends[-1]))

    def _compress(self, data: bytes) -> bytes:
        # (The Python encoder's.) Small blocks repeat (one document's single posting in several
        # fields and terms), and each call costs far more than compressing their few bytes.
        cache = self._compressed
        compressed = cache.get(data)
        if compressed is None:
            compressed = _compress_block(data, _COMPRESSION)
            if len(data) <= _CACHED_BLOCK_BYTES:
                if len(cache) >= _CACHED_BLOCKS:
                    cache.clear()
                cache[data] = compressed
        return compressed

    def _encode_blocks(self, postings, packing, length_bytes, start) -> bytes:
        """Write the posting blocks of a term; return its W3TermInfo bytes."""
        count = len(postings)
        parts = [WHOOSH3_HEADER_MAGIC]
        total_weight = 0.0
        max_weight = 0.0
        min_length = 255
        max_length = 0
        mini_weights: float | tuple[float, ...] | None
        mini_values: tuple[bytes, ...] | bytes | None
        for begin in range(0, count, BLOCK_LIMIT):
            end = begin + BLOCK_LIMIT
            ids, weights, values = zip(*postings[begin:end], strict=True)
            block_max_weight = float(max(weights))
            if block_max_weight > max_weight:
                max_weight = block_max_weight
            for weight in weights:  # as the C encoder adds (sum() compensates from 3.12)
                total_weight += weight
            if length_bytes is None:
                block_min_length = block_max_length = 0
            else:
                lengths = list(map(length_bytes.__getitem__, ids))
                block_min_length, block_max_length = min(lengths), max(lengths)
            min_length = min(min_length, block_min_length)
            max_length = max(max_length, block_max_length)
            # _mini_weights: None when all are 1, one float when all are equal, else a tuple.
            first = weights[0]
            if weights.count(first) == len(weights):
                mini_weights = None if first == 1 else float(first)
            else:
                mini_weights = tuple(map(float, weights))
            if packing == VALUES_TUPLE:
                mini_values = _distinct_objects(values)
            elif packing == VALUES_NONE:
                mini_values = None
            else:
                mini_values = b"".join(values)
            # _mini_ids: the differences between consecutive ids, the first minus 0.
            deltas = (ids[0], *[b - a for a, b in pairwise(ids)])
            data = self._compress(pickle.dumps((deltas, mini_weights, mini_values), BLOCK_PROTOCOL))
            info = pickle.dumps(
                (
                    len(ids),
                    ids[-1],
                    block_max_weight,
                    _COMPRESSION,
                    block_min_length,
                    block_max_length,
                ),
                2,
            )
            size = len(info) + len(data)
            parts += (_BLOCK_LENGTH.pack(size if end < count else -size), info, data)
        written = sum(map(len, parts))
        self._postings.write(parts, written)
        return _TERM_INFO.pack(
            0,
            total_weight,
            count,
            min_length,
            max_length,
            max_weight,
            postings[0][0],
            postings[-1][0],
        ) + _EXTENT.pack(start, written)

    def close(self) -> None:
        self._terms.flush()
        self._postings.flush()
        self._hash.close()
        self._postings.file.close()


# GrowableArray's types by the largest value they hold (util/numlists.py, `_retype`).
_INDEX_TYPES = (("H", 2**16), ("i", 2**31), ("I", 2**32), ("q", 2**63))


class _TermIndexWriter(OrderedHashWriter):
    lastkey: bytes  # set by OrderedHashWriter
    """Whoosh's term index file, its records added in batches (`add_records`).

    OrderedHashWriter hashes and files each key as it is added and writes the hash tables at
    close one slot at a time, in Python; here the keys' hashes are computed a batch at a time
    and the tables are written by the C extension when it is built.
    """

    def __init__(self, dbfile, native: bool) -> None:
        super().__init__(dbfile)
        self._native = native
        self._hashes = array("I")  # md5_hash of each key, in order
        self._positions = array("q")  # each record's position in the file
        self._directory: bytes | None = None

    def add_records(self, positions: np.ndarray, keys: Sequence[bytes]) -> None:
        """Note records written (by the caller) at `positions` for `keys`, keys ascending."""
        if keys[0] <= self.lastkey:
            raise ValueError(f"keys must increase: {self.lastkey!r}..{keys[0]!r}")
        self.lastkey = keys[-1]
        digests = b"".join([hashlib.md5(key).digest() for key in keys])
        # filetables.md5_hash: the digest as a number, its low 32 bits: the last 4 bytes.
        hashes = np.frombuffer(digests, dtype=">u4").reshape(-1, 4)[:, 3]
        self._hashes.frombytes(hashes.astype(np.uint32).tobytes())
        self._positions.frombytes(np.asarray(positions, dtype=np.int64).tobytes())

    def _write_hashes(self) -> None:
        hashes = np.frombuffer(self._hashes, dtype=np.uint32)
        positions = np.frombuffer(self._positions, dtype=np.int64)
        if self._native:
            tables, self._directory = _w3postings.hash_tables(hashes, positions, self.dbfile.tell())
            self.dbfile.write(tables)
            return
        for hashed, position in zip(hashes.tolist(), positions.tolist(), strict=True):
            self.buckets[hashed & 255].append((hashed, position))
        super()._write_hashes()

    def _write_directory(self) -> None:
        if self._directory is None:
            super()._write_directory()
        else:
            self.dbfile.write(self._directory)

    def _write_extras(self) -> None:
        # OrderedHashWriter's `index`: a GrowableArray of the record positions, whose type grows
        # from "H" as far as its largest value needs.
        largest = self._positions[-1] if self._positions else 0
        typecode = next(code for code, end in _INDEX_TYPES if largest < end)
        self.index.array = array(typecode, self._positions)
        super()._write_extras()


def _postings_of_tokens(
    term_count: int, tokens: FieldTokens, doc_count: int
) -> tuple[list[list[Posting]], list[bytes]]:
    """Each term's postings (document, frequency, Positions value) from a field's tokens, and
    each document's value of its last new term (b"" for a document without tokens)."""
    ranks = tokens.ranks.tolist()
    order = np.argsort(tokens.ranks, kind="stable").tolist()
    docs, positions = tokens.docs.tolist(), tokens.positions.tolist()
    postings: list[list[Posting]] = [[] for _ in range(term_count)]
    # Per document: (first position, value) of the term whose first position is the largest.
    last_new: list[tuple[int, bytes]] = [(-1, b"")] * doc_count
    group: list[int] = []
    for index, token in enumerate(order):
        group.append(positions[token])
        following = order[index + 1] if index + 1 < len(order) else None
        if following is None or ranks[following] != ranks[token] or docs[following] != docs[token]:
            deltas = [group[0], *[b - a for a, b in pairwise(group)]]
            value = pack_uint(len(deltas)) + pickle.dumps(deltas, 2)
            postings[ranks[token]].append((docs[token], len(group), value))
            if group[0] > last_new[docs[token]][0]:
                last_new[docs[token]] = (group[0], value)
            group = []
    return postings, [value for _, value in last_new]
