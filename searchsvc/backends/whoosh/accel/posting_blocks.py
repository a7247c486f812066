"""Whoosh's posting blocks of one segment decoded into numpy arrays (document numbers, weights).

This is the slow path of posting access: each block is a pickled header read through a Python
file object, then zlib, then a pickle. `snapshot_postings.SnapshotArrays` uses it for segments
without a posting-arrays file (posting_arrays_file.py), and that file is written from it for
segments Whoosh's own writer made (updates, merges, indexes built before the file existed).
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator

import numpy as np
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import TermNotFound

# Posting lists shorter than this (one block) decode faster posting by posting than with numpy.
SHORT_LIST = 32


def leaf_postings(leaf, field: str, btext: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Segment-local document numbers (int64) and weights (float64) of a term, deleted
    documents included; None when the segment does not have the term."""
    try:
        matcher = leaf.postings(field, btext)
    except TermNotFound:
        return None
    # The caller takes deleted documents out with its live mask, in one numpy step.
    while isinstance(matcher, FilterMatcher):
        matcher = matcher.child
    return matcher_postings(matcher)


def matcher_postings(matcher) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights of a fresh matcher, by blocks when it reads blocks."""
    if isinstance(matcher, W3LeafMatcher) and not (
        matcher._lastblock and matcher._blocklength < SHORT_LIST
    ):
        return decode_blocks(matcher)
    return decode_matcher(matcher)


def field_postings(leaf, field: str) -> Iterator[tuple[bytes, np.ndarray, np.ndarray]]:
    """(term, docs, weights) of every term of `field` in a segment reader, in term order.

    Deleted documents are included. Walks the segment's term table once instead of looking
    each term up. A term in one document (most terms) is read from its term info alone, which
    holds that document and the total weight, when weights are whole frequencies (a float
    field boost could make the term info's float32 total inexact).
    """
    terms = leaf._terms
    if field not in terms.indexed_field_names():
        return  # no document of the segment has the field
    fieldobj = leaf.schema[field]
    exact_totals = getattr(fieldobj.format, "field_boost", 1.0) == 1.0
    for (name, term), info in terms.items_from(field, b""):
        if name != field:
            break
        if exact_totals and not info.is_inlined() and info.doc_frequency() == 1:
            weight = info.weight()
            if weight == int(weight):
                yield term, np.array([info.min_id()], np.int64), np.array([weight])
                continue
        matcher = terms._codec.postings_reader(terms._postfile, info, fieldobj.format)
        yield (term, *matcher_postings(matcher))


def decode_blocks(matcher: W3LeafMatcher) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights of a fresh on-disk posting list, block by block.

    A block holds a pickled (delta-encoded ids, weights, values) tuple. Unpickling it builds
    every posting's value as well (under Whoosh's pickle protocol 2, one `_codecs.encode` call
    each), which is most of Whoosh's decoding time; `_parse_block` reads the ids and weights
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


# Pickle opcodes of a block's (ids, weights, values) tuple: protocol 2 (Whoosh's writer) or 3
# (segment_postings.py), then MARK: the ids tuple (4 ids or more) starts.
_PROTO_MARKS = (b"\x80\x02(", b"\x80\x03(")
_BININT1, _BININT2, _BININT = ord("K"), ord("M"), ord("J")
_TUPLE, _BINPUT, _LONG_BINPUT = ord("t"), ord("q"), ord("r")
_NONE, _BINFLOAT, _MARK = ord("N"), ord("G"), ord("(")
_FLOAT_OPS = np.dtype([("op", "u1"), ("value", ">f8")])
_FIRST_ID = {_BININT1: ("<u1", 2), _BININT2: ("<u2", 3), _BININT: ("<i4", 5)}


def _parse_block(data: bytes, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(id deltas, weights) of a block whose ids after the first are one-byte ints, else None.

    The layout: PROTO 2 or 3, MARK, the first id (the block's first document number, any int
    opcode), `count - 1` x (BININT1 delta), TUPLE, BINPUT; then the weights as NONE (all 1.0),
    one BINFLOAT (all equal) or MARK, `count` x (BINFLOAT w), TUPLE. Dense posting lists,
    which cost the most, have every delta below 256 in almost every block.
    """
    if count < 4 or not data.startswith(_PROTO_MARKS):
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


def decode_matcher(matcher) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights through the plain Matcher interface (inlined postings)."""
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float64)
