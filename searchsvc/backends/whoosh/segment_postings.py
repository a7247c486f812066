"""A segment's term index (.trm) and posting lists (.pst), written a whole term at a time.

The bytes are those of Whoosh's own `W3FieldWriter` / `W3PostingsWriter` (codec/whoosh3.py) for
the same postings: blocks of `BLOCK_LIMIT` postings, each a pickled (id deltas, weights, values)
tuple compressed with zlib level 3 behind a pickled block-info tuple, and a `W3TermInfo` per
term in an `OrderedHashWriter`. Whoosh builds each block one posting at a time through several
method calls; here a term's postings arrive as one list and each block is encoded with a few
C-level calls. tests/test_fast_writer.py compares the files and the reader's view with Whoosh's.
"""

from __future__ import annotations

import hashlib
import pickle
import struct
from collections.abc import Iterable, Sequence
from itertools import pairwise

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec
from whoosh.filedb.filetables import OrderedHashWriter

from searchsvc.backends.whoosh.deflate import compressor

BLOCK_LIMIT = 128  # W3Codec's default blocklimit
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

# How a format's posting values are packed in a block (W3PostingsWriter._mini_values).
VALUES_TUPLE, VALUES_NONE, VALUES_JOINED = "tuple", "none", "joined"

# (docnum, weight, value) of one posting.
Posting = tuple[int, float | int, bytes]


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

    def __init__(self, storage, segment) -> None:
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
        prefix = _FIELD_ID.pack(field_id)
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
                    dumps(((docnum,), None if weight == 1 else float(weight), mini_values), 2)
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
                data = compress(dumps((ids, None, b"".join(block)), 2))
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
            data = self._compress(pickle.dumps((deltas, mini_weights, mini_values), 2))
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
