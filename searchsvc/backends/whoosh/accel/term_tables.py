"""A field's terms read from Whoosh's term tables in bulk, for the in-memory lexicons.

`IndexReader.lexicon(field)` steps through a segment's term table (an `OrderedHashReader`) one
record at a time through several generators, and merges segments with a heap: Python work for
every term, and the first did-you-mean of a new worker waited for every spelling word of the
index. Each table also keeps an array of every record's position, in key order; a field's keys
are one contiguous run of it (keys begin with the field's number), so its terms are sliced out
of one read of that run.
"""

from __future__ import annotations

import struct

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.segment_columns import release_mapped_pages

# OrderedHashWriter's position array typecodes (big-endian, as StructFile writes arrays).
_POSITION_TYPES = {"B": ">u1", "H": ">u2", "i": ">i4", "I": ">u4", "q": ">i8"}
_FIELD_NUMBER = struct.Struct("!H")  # W3TermsReader._keycoder: the key's first two bytes
_RECORD_HEAD = 8  # filetables._lengths: key length and value length, two big-endian int32
_SEPARATOR = 0  # joins a table's terms for one decode; text terms never hold a NUL


def field_terms(reader: IndexReader, field: str) -> list[str]:
    """The field's distinct terms in order, decoded: `reader.lexicon(field)`, read faster."""
    segments = [segment for segment, _ in reader.leaf_readers()]
    try:
        if len(segments) == 1:
            return _segment_terms(segments[0], field)
        # One segment's terms at a time into the set of distinct ones: every segment's list
        # held until a merge took several times the vocabulary (600 MB at 110 segments).
        distinct: set[str] = set()
        for segment in segments:
            distinct.update(_segment_terms(segment, field))
            release_mapped_pages(segment)
    except (_BinaryTerms, AttributeError, KeyError, TypeError, ValueError):
        # Binary (numeric) terms, which decoded with replacement characters would no longer
        # sort, nor stay distinct, as their bytes do; or not the W3 term table this reads
        # (another codec, a Whoosh that changed it). Whoosh's own reader handles both.
        return _whoosh_lexicon(reader, field)
    return sorted(distinct)


def _whoosh_lexicon(reader: IndexReader, field: str) -> list[str]:
    return [term.decode("utf-8", "replace") for term in reader.lexicon(field)]


class _BinaryTerms(Exception):
    """A term holds a NUL byte: not text (a numeric field's terms)."""


def _segment_terms(segment, field: str) -> list[str]:
    terms = segment._terms  # W3TermsReader
    number = terms._fieldmap.get(field)
    if number is None:
        return []
    table = terms._tindex  # OrderedHashReader
    first = table.closest_key_pos(_FIELD_NUMBER.pack(number))
    if first is None:
        return []
    after = None if number == 0xFFFF else table.closest_key_pos(_FIELD_NUMBER.pack(number + 1))
    end = table.endofdata if after is None else after
    width = table.indexsize
    every = np.frombuffer(
        table.dbfile.get(table.indexbase, table.indexlen * width),
        dtype=_POSITION_TYPES[table.extras["indextype"]],
    ).astype(np.int64)
    positions = every[np.searchsorted(every, first) : np.searchsorted(every, end)] - first
    run = table.dbfile.get(first, end - first)
    data = np.frombuffer(run, dtype=np.uint8)
    key_lengths = np.frombuffer(
        data[(positions[:, None] + np.arange(4)).ravel()].tobytes(), dtype=">i4"
    )
    starts = positions + _RECORD_HEAD + _FIELD_NUMBER.size
    stops = positions + _RECORD_HEAD + key_lengths
    return _decode_all(data, starts, stops)


def _decode_all(data: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> list[str]:
    """data[start:stop] decoded for each pair, by one decode of the terms joined with NULs
    (a Python slice and decode per term was most of a table's reading); raises
    _BinaryTerms when a term holds a NUL itself, UnicodeDecodeError (a ValueError) when one
    is not UTF-8."""
    lengths = stops - starts
    if not len(lengths):
        return []
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    joined = data[np.repeat(starts, lengths) + within]
    if np.any(joined == _SEPARATOR):
        raise _BinaryTerms
    with_separators = np.full(len(joined) + len(lengths) - 1, _SEPARATOR, dtype=np.uint8)
    out_starts = np.cumsum(lengths + 1) - (lengths + 1)
    with_separators[np.repeat(out_starts, lengths) + within] = joined
    # Strict: valid UTF-8 sorts as its bytes do, which merging segments relies on.
    return with_separators.tobytes().decode("utf-8").split(chr(_SEPARATOR))
