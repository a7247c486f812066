"""A segment's posting lists as flat arrays in a file beside it, memory-mapped and read zero-copy.

Decoding Whoosh's posting blocks (posting_blocks.py) costs a Python file read, a zlib call and a
pickle parse per 128 postings, and a search reads every posting of its terms: on a large index,
most of a faceted search. This file holds the same postings as raw arrays, so a term's postings
in a segment are two slices of a memory map.

One file per segment, `<segment id>.postarrays` in the index directory. Whoosh stays the store of
record; the file is derived data and is named so that Whoosh's `clean_files` deletes it with its
segment (after a merge it matches `MAIN_<id>.<ext>` of a segment that is gone). Layout, all
little-endian, each section aligned to 8 bytes::

    MAGIC, uint32 format version, uint32 header length, header (JSON: segment id, doc_count_all,
    weight dtype, counts, each field's term range)
    key_ends    int64[terms]   end of each term's bytes in `keys`
    prefixes    uint64[terms]  each term's first 8 bytes (zero-padded) as a big-endian number
    post_ends   int64[terms]   end of each term's postings in `docs` / `weights`
    keys        uint8[key bytes]  the terms, field by field, each field's terms in byte order
    docs        int32[postings]  segment-local document numbers, ascending per term, deleted too
    weights     uint16 | float32 | float64 [postings]  the narrowest type holding every weight

Opening reads the header only: a term is found by `searchsorted` over its field's prefixes,
then by comparing whole keys among the few terms sharing its prefix (no table of all terms is
built). A file whose size, magic, version, segment id or document count does not match is not
used: the caller decodes Whoosh's blocks as before. Files are written to a temporary name and
renamed, so a crash never leaves a partial file under the real name.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from searchsvc.backends.whoosh.accel.posting_blocks import field_postings
from searchsvc.backends.whoosh.schema import QUERY_FIELDS

EXTENSION = ".postarrays"
MAGIC = b"SSVCPOST"
FORMAT_VERSION = 1
_PREAMBLE = len(MAGIC) + 8  # magic, version, header length
_ALIGN = 8
_WEIGHT_TYPES = ("<u2", "<f4", "<f8")
_UINT16_MAX = np.iinfo(np.uint16).max

log = logging.getLogger(__name__)


def array_fields(schema) -> list[str]:
    """The fields whose postings the file holds: those a query may search, spelling excluded
    (spelling words are looked up in the lexicon, never scored)."""
    return sorted(name for name in QUERY_FIELDS if name in schema and schema[name].indexed)


def sidecar_path(folder: str | os.PathLike[str], segment_id: str) -> Path:
    return Path(folder) / f"{segment_id}{EXTENSION}"


def segment_folder(leaf) -> Path | None:
    """The directory of a segment reader's files, or None when its storage has no directory."""
    storage = leaf.storage() if hasattr(leaf, "storage") else None
    storage = getattr(storage, "b", storage)  # a compound segment's OverlayStorage(files, dir)
    folder = getattr(storage, "folder", None)
    return Path(folder) if folder else None


# -- writing ---------------------------------------------------------------------------------
class PostingArraysWriter:
    """Collects a segment's terms (field by field, terms in byte order), then writes the file."""

    def __init__(self) -> None:
        self._fields: dict[str, list[int]] = {}  # name -> [first term, end term]
        self._keys = bytearray()
        self._key_ends = array("q")
        self._prefixes = array("Q")
        self._post_ends = array("q")
        self._docs = array("i")
        self._weights = array("d")

    def add_term(self, field: str, term: bytes, docs, weights) -> None:
        """One term's postings: numpy arrays, or iterables of ints and numbers."""
        span = self._fields.setdefault(field, [len(self._key_ends), len(self._key_ends)])
        if span[1] != len(self._key_ends):
            raise ValueError(f"the terms of {field!r} must be added together")
        span[1] += 1
        self._keys += term
        self._key_ends.append(len(self._keys))
        self._prefixes.append(_prefix(term))
        if isinstance(docs, np.ndarray):
            # frombytes copies in C; extending an array from a numpy array goes element by element.
            self._docs.frombytes(docs.astype(np.int32, copy=False).tobytes())
            self._weights.frombytes(np.asarray(weights, dtype=np.float64).tobytes())
        else:
            self._docs.extend(docs)
            self._weights.extend(weights)
        if len(self._docs) != len(self._weights):
            raise ValueError(f"{field}:{term!r} has not one weight per document")
        self._post_ends.append(len(self._docs))

    def add_field(
        self,
        field: str,
        terms: Sequence[bytes],
        ends: np.ndarray,
        docs: np.ndarray,
        weights: np.ndarray,
    ) -> None:
        """A whole field: its terms in byte order, each term's end in `docs` and `weights`."""
        if field in self._fields:
            raise ValueError(f"the terms of {field!r} must be added together")
        if (
            len(ends) != len(terms)
            or (len(ends) and ends[-1] != len(docs))
            or len(docs) != len(weights)
        ):
            raise ValueError(f"{field!r}: term ends do not match the postings")
        first = len(self._key_ends)
        self._fields[field] = [first, first + len(terms)]
        base_keys, base_posts = len(self._keys), len(self._docs)
        lengths = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
        self._key_ends.frombytes((np.cumsum(lengths) + base_keys).astype(np.int64).tobytes())
        self._keys += b"".join(terms)
        self._prefixes.extend(map(_prefix, terms))
        self._post_ends.frombytes((np.asarray(ends, dtype=np.int64) + base_posts).tobytes())
        self._docs.frombytes(np.asarray(docs, dtype=np.int32).tobytes())
        self._weights.frombytes(np.asarray(weights, dtype=np.float64).tobytes())

    def write(self, path: Path, segment_id: str, doc_count_all: int) -> None:
        """Write the file atomically (a temporary file renamed over `path`)."""
        weights = np.frombuffer(self._weights, dtype=np.float64)
        weight_type = _narrowest(weights)
        header = {
            "segment_id": segment_id,
            "doc_count_all": doc_count_all,
            "weights": weight_type,
            "terms": len(self._key_ends),
            "key_bytes": len(self._keys),
            "postings": len(self._docs),
            "fields": self._fields,
        }
        sections: list[np.ndarray] = [
            np.frombuffer(self._key_ends, dtype=np.int64),
            np.frombuffer(self._prefixes, dtype=np.uint64),
            np.frombuffer(self._post_ends, dtype=np.int64),
            np.frombuffer(self._keys, dtype=np.uint8),
            np.frombuffer(self._docs, dtype=np.int32),
            weights.astype(weight_type),
        ]
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        try:
            with open(temporary, "wb") as handle:
                written = handle.write(_preamble(header))
                for section in sections:
                    written += handle.write(bytes(_padding(written)))
                    little = section.astype(section.dtype.newbyteorder("<"), copy=False)
                    written += handle.write(little.data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def _prefix(term: bytes) -> int:
    # Zero-padding keeps the order: a term's prefix number never exceeds a later term's.
    return int.from_bytes(term[:8].ljust(8, b"\0"), "big")


def _narrowest(weights: np.ndarray) -> str:
    """The smallest weight type holding every weight exactly (frequencies fit in uint16)."""
    if not len(weights) or (
        weights.min() >= 0
        and weights.max() <= _UINT16_MAX
        and np.array_equal(weights, np.floor(weights))
    ):
        return "<u2"
    if np.array_equal(weights.astype(np.float32), weights):
        return "<f4"
    return "<f8"


def _preamble(header: dict[str, Any]) -> bytes:
    encoded = json.dumps(header, sort_keys=True).encode("utf-8")
    version, length = FORMAT_VERSION.to_bytes(4, "little"), len(encoded).to_bytes(4, "little")
    return MAGIC + version + length + encoded


def _padding(position: int) -> int:
    return -position % _ALIGN


def _layout(header: dict[str, Any], start: int) -> tuple[list[tuple[int, np.dtype, int]], int]:
    """(offset, dtype, count) of each section after the preamble, and the file's size."""
    terms, postings = int(header["terms"]), int(header["postings"])
    kinds = [
        (np.dtype("<i8"), terms),
        (np.dtype("<u8"), terms),
        (np.dtype("<i8"), terms),
        (np.dtype("u1"), int(header["key_bytes"])),
        (np.dtype("<i4"), postings),
        (np.dtype(header["weights"]), postings),
    ]
    sections = []
    position = start
    for dtype, count in kinds:
        if count < 0:
            raise ValueError("negative section size")
        position += _padding(position)
        sections.append((position, dtype, count))
        position += dtype.itemsize * count
    return sections, position


# -- reading ---------------------------------------------------------------------------------
class SidecarDamaged(Exception):
    """The file's contents do not make sense: stop using it, decode Whoosh's blocks instead."""


class PostingArrays:
    """One segment's posting-arrays file, opened read-only as a memory map."""

    def __init__(self, buffer: mmap.mmap, header: dict[str, Any], start: int) -> None:
        sections, _ = _layout(header, start)
        (
            self._key_ends,
            self._prefixes,
            self._post_ends,
            _keys,
            self._docs,
            self._weights,
        ) = (np.frombuffer(buffer, dtype=d, count=c, offset=o) for o, d, c in sections)
        self._keys_at = sections[3][0]
        self._buffer = buffer
        self.segment_id: str = header["segment_id"]
        self.doc_count_all: int = header["doc_count_all"]
        self.fields: dict[str, tuple[int, int]] = {
            name: (int(lo), int(hi)) for name, (lo, hi) in header["fields"].items()
        }
        terms = int(header["terms"])
        if any(not 0 <= lo <= hi <= terms for lo, hi in self.fields.values()):
            raise SidecarDamaged("a field's term range is outside the term table")

    @classmethod
    def open(cls, path: Path, segment_id: str, doc_count_all: int) -> PostingArrays | None:
        """The file at `path` if it is sound and describes this segment, else None (logged
        unless it is simply missing)."""
        try:
            with open(path, "rb") as handle:
                buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
            log.warning("ignoring unreadable posting arrays %s: %r", path, exc)
            return None
        try:
            header, start = _read_header(buffer)
            _, size = _layout(header, start)
            if size != len(buffer):
                raise SidecarDamaged(f"{len(buffer)} bytes where the header says {size}")
            if header["segment_id"] != segment_id or header["doc_count_all"] != doc_count_all:
                raise SidecarDamaged("written for another segment")
            return cls(buffer, header, start)
        except Exception as exc:
            # Truncated, overwritten, of another version or another segment: never trusted.
            log.warning("ignoring posting arrays %s: %r", path, exc)
            buffer.close()
            return None

    def has_field(self, field: str) -> bool:
        return field in self.fields

    def postings(self, field: str, term: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Segment-local docs (int32) and weights of `term`; empty when the segment lacks it.

        The arrays are views of the memory map: read-only, no copy.
        """
        lo, hi = self.fields[field]
        position = self._find(lo, hi, term)
        if position is None:
            return self._docs[:0], self._weights[:0]
        start = int(self._post_ends[position - 1]) if position else 0
        end = int(self._post_ends[position])
        if not 0 <= start < end <= len(self._docs):
            raise SidecarDamaged(f"posting range {start}:{end} of {field}:{term!r}")
        docs = self._docs[start:end]
        # Document numbers index the caller's arrays: a damaged one must not reach them.
        if docs.min() < 0 or docs.max() >= self.doc_count_all:
            raise SidecarDamaged(f"document number out of range in {field}:{term!r}")
        return docs, self._weights[start:end]

    def _find(self, lo: int, hi: int, term: bytes) -> int | None:
        prefixes = self._prefixes[lo:hi]
        prefix = np.uint64(_prefix(term))
        first = lo + int(np.searchsorted(prefixes, prefix, side="left"))
        end = lo + int(np.searchsorted(prefixes, prefix, side="right"))
        # Terms sharing the 8-byte prefix are in byte order: bisect them by whole key.
        while first < end:
            middle = (first + end) // 2
            key = self._key(middle)
            if key < term:
                first = middle + 1
            elif key > term:
                end = middle
            else:
                return middle
        return None

    def _key(self, position: int) -> bytes:
        start = int(self._key_ends[position - 1]) if position else 0
        end = int(self._key_ends[position])
        if not 0 <= start <= end:
            raise SidecarDamaged(f"key range {start}:{end}")
        return self._buffer[self._keys_at + start : self._keys_at + end]


def _read_header(buffer: mmap.mmap) -> tuple[dict[str, Any], int]:
    if len(buffer) < _PREAMBLE or buffer[: len(MAGIC)] != MAGIC:
        raise SidecarDamaged("not a posting-arrays file")
    version = int.from_bytes(buffer[len(MAGIC) : len(MAGIC) + 4], "little")
    if version != FORMAT_VERSION:
        raise SidecarDamaged(f"format version {version}, not {FORMAT_VERSION}")
    length = int.from_bytes(buffer[len(MAGIC) + 4 : _PREAMBLE], "little")
    if _PREAMBLE + length > len(buffer):
        raise SidecarDamaged("truncated header")
    header = json.loads(buffer[_PREAMBLE : _PREAMBLE + length].decode("utf-8"))
    if header.get("weights") not in _WEIGHT_TYPES:
        raise SidecarDamaged(f"weight type {header.get('weights')!r}")
    return header, _PREAMBLE + length


# -- segments written by Whoosh's own writer -------------------------------------------------
def write_missing_posting_arrays(index) -> list[str]:
    """Write the file of every segment of `index` lacking a sound one; return their ids.

    For segments Whoosh's stock writer made (updates, merges) and indexes built before the file
    existed: their postings are decoded from Whoosh's blocks once, here.
    """
    written = []
    with index.reader() as reader:
        fields = array_fields(reader.schema)
        for leaf, _ in reader.leaf_readers():
            folder = segment_folder(leaf)
            if folder is None or not hasattr(leaf, "segment"):
                continue  # in memory (RamStorage): nothing to map
            segment_id, count = leaf.segment().segment_id(), leaf.doc_count_all()
            path = sidecar_path(folder, segment_id)
            if PostingArrays.open(path, segment_id, count) is not None:
                continue
            writer = PostingArraysWriter()
            for field in fields:
                for term, docs, weights in field_postings(leaf, field):
                    writer.add_term(field, term, docs, weights)
            writer.write(path, segment_id, count)
            written.append(segment_id)
    return written


def remove_leftover_files(folder: Path) -> None:
    """Delete temporary files of writers that were killed (call only while holding the index's
    write lock, so that no writer is running)."""
    for leftover in folder.glob(f".*{EXTENSION}.*.tmp"):
        leftover.unlink(missing_ok=True)
