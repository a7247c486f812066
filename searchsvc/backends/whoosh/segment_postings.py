"""A segment's term index (.trm) and posting lists (.pst), written a whole term at a time.

The layout is that of Whoosh's own `W3FieldWriter` / `W3PostingsWriter` (codec/whoosh3.py):
blocks of `BLOCK_LIMIT` postings, each a pickled (id deltas, weights, values) tuple compressed
with zlib level 3 behind a pickled block-info tuple, and a `W3TermInfo` per term in an
`OrderedHashWriter`; only the block tuples are pickled at a newer protocol (`BLOCK_PROTOCOL`).
Whoosh builds each block one posting at a time through several method calls; here a term's
postings arrive as one list and each block is encoded with a few C-level calls. The positions
and spelling fields, which hold most postings, are encoded by the C extension `_w3postings`
when it was built (the build then runs about twice as fast), else by the Python code here;
tests/test_native_postings.py holds the two to the same bytes. tests/test_fast_writer.py
compares what Whoosh reads from these files with what it reads from its own writer's.
"""

from __future__ import annotations

import hashlib
import pickle
import struct
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import NamedTuple

import numpy as np
from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec
from whoosh.filedb.filetables import OrderedHashWriter
from whoosh.system import pack_uint

from searchsvc.backends.whoosh.deflate import compressor

try:
    from searchsvc.backends.whoosh import _w3postings
except ImportError:  # installed without a C compiler: the Python encoder below does the work
    _w3postings = None

BLOCK_LIMIT = 128  # W3Codec's default blocklimit
# Pickle protocol of a block's (ids, weights, values) tuple. Whoosh's writer uses 2, where each
# bytes value is pickled as a `_codecs.encode` call on its Latin-1 text; at 3 bytes are raw:
# positions blocks come out 40% smaller compressed and unpickle twice as fast. Whoosh's reader
# unpickles any protocol. Block infos stay at Whoosh's protocol 2.
BLOCK_PROTOCOL = 3
_COMPRESSION = 3  # W3Codec's default compression level
_deflate = compressor(_COMPRESSION)
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


class DocValues(NamedTuple):
    """One bytes value per document: the values joined, and each one's end (int64)."""

    joined: bytes
    ends: np.ndarray

    @classmethod
    def of(cls, values: Sequence[bytes]) -> DocValues:
        ends = np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)))
        return cls(b"".join(values), ends.astype("<i8"))

    def split(self) -> list[bytes]:
        starts = [0, *self.ends.tolist()]
        return [self.joined[a:b] for a, b in pairwise(starts)]


class FieldPostings(NamedTuple):
    """A written field's postings as flat arrays, term by term (for posting_arrays.py)."""

    docs: np.ndarray  # int32
    weights: np.ndarray  # int32 frequencies
    ends: np.ndarray  # int64: each term's end in `docs` and `weights`
    last_values: DocValues | None  # see SegmentPostingsWriter.add_positions_field


def values_packing(fixed_value_size: int | None) -> str:
    if fixed_value_size is None or fixed_value_size < 0:
        return VALUES_TUPLE
    return VALUES_NONE if fixed_value_size == 0 else VALUES_JOINED


def _md5_hash(key: bytes) -> int:
    # filetables.md5_hash, int(md5(key).hexdigest(), 16) & 0xffffffff, without the hex string.
    return int.from_bytes(hashlib.md5(key).digest()[12:], "big")


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
        self._hash = OrderedHashWriter(segment.create_file(storage, W3Codec.TERMS_EXT))
        self._field_ids: dict[str, int] = {}
        self._hash.extras["fieldmap"] = self._field_ids
        self._terms = _BufferedFile(self._hash.dbfile)
        self._postings = _BufferedFile(segment.create_file(storage, W3Codec.POSTS_EXT))
        self._compressed: dict[bytes, bytes] = {}

    def add_field(
        self,
        fieldname: str,
        terms: Iterable[tuple[bytes, Sequence[Posting]]],
        packing: str,
        length_bytes: Sequence[int] | None,
    ) -> None:
        """Write a field's terms, given in byte order with their postings in document order.

        `length_bytes[docnum]` is a document's field length byte (the length as Whoosh's
        writer reads it back, encoded again, which gives the same byte), or None for fields
        without lengths.
        """
        field_id = self._field_ids.setdefault(fieldname, len(self._field_ids))
        self._write_terms(_FIELD_ID.pack(field_id), terms, packing, length_bytes)

    def _write_terms(self, prefix: bytes, terms, packing: str, length_bytes) -> None:
        postings_file = self._postings
        encode_blocks = self._encode_blocks
        compress = self._compress
        dumps = pickle.dumps
        pack_info = _TERM_INFO.pack
        pack_extent = _EXTENT.pack
        pack_block_length = _BLOCK_LENGTH.pack
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
            self._add_term(prefix + term, term_info)

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
                tokens.ranks,
                tokens.docs,
                tokens.positions,
                len(terms),
                doc_count,
                length_bytes,
                self._postings.position,
                WHOOSH3_HEADER_MAGIC,
                _COMPRESSION,
                last_values,
            )
            self._postings.write([data], len(data))
            size = _TERM_INFO_SIZE
            for number, term in enumerate(terms):
                self._add_term(prefix + term, infos[number * size : (number + 1) * size])
            return FieldPostings(
                np.frombuffer(docs, dtype="<i4"),
                np.frombuffer(freqs, dtype="<i4"),
                np.frombuffer(ends, dtype="<i8"),
                DocValues(values, np.frombuffer(value_ends, dtype="<i8")) if last_values else None,
            )
        postings, last_new = _postings_of_tokens(len(terms), tokens, doc_count)
        self._write_terms(prefix, zip(terms, postings, strict=True), VALUES_TUPLE, length_bytes)
        every = [posting for term_postings in postings for posting in term_postings]
        return FieldPostings(
            np.fromiter((posting[0] for posting in every), dtype=np.int32, count=len(every)),
            np.fromiter((posting[1] for posting in every), dtype=np.int32, count=len(every)),
            np.cumsum([len(term_postings) for term_postings in postings], dtype=np.int64),
            DocValues.of(last_new) if last_values else None,
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
                tokens.ranks,
                tokens.docs,
                len(words),
                values.joined,
                values.ends,
                self._postings.position,
                WHOOSH3_HEADER_MAGIC,
                _COMPRESSION,
            )
            self._postings.write([data], len(data))
            size = _TERM_INFO_SIZE
            for number, word in enumerate(words):
                self._add_term(prefix + word, infos[number * size : (number + 1) * size])
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
        are all 0 and its weights all 1; this is `add_field` for those postings, without
        building them.
        """
        field_id = self._field_ids.setdefault(fieldname, len(self._field_ids))
        prefix = _FIELD_ID.pack(field_id)
        postings_file = self._postings
        compress = self._compress
        dumps = pickle.dumps
        zeros = (0,) * BLOCK_LIMIT
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
            term_info = _TERM_INFO.pack(0, count, count, 0, 0, 1, 0, 0)
            self._add_term(prefix + word, term_info + _EXTENT.pack(start, written))

    def _add_term(self, key: bytes, term_info: bytes) -> None:
        # OrderedHashWriter.add, with the record appended to a buffer.
        position = self._terms.position
        self._hash.index.append(position)
        hashed = _md5_hash(key)
        self._hash.buckets[hashed & 255].append((hashed, position))
        self._terms.write(
            [_HASH_ENTRY.pack(len(key), len(term_info)), key, term_info],
            8 + len(key) + len(term_info),
        )
        self._hash.lastkey = key

    def _compress(self, data: bytes) -> bytes:
        # Small blocks repeat (one document's single posting in several fields and terms), and
        # each compression costs far more than its few bytes (a stream's tables are ~256 KiB).
        cache = self._compressed
        compressed = cache.get(data)
        if compressed is None:
            compressed = _deflate(data)
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
        for begin in range(0, count, BLOCK_LIMIT):
            end = begin + BLOCK_LIMIT
            ids, weights, values = zip(*postings[begin:end], strict=True)
            block_max_weight = float(max(weights))
            if block_max_weight > max_weight:
                max_weight = block_max_weight
            total_weight += sum(weights)
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
