"""A build's records kept on disk, not in memory: spilled as they are read, deduplicated,
then read back a share at a time by the index writers.

Holding a million records as Python objects took gigabytes, and every forked writer process
counted them again. A `RecordSpill` keeps per record only two 8-byte hashes while the sources
are read, and a 4-byte position once they are deduplicated: its memory does not grow with the
records' text. The file is unlinked as soon as it is made, so nothing is left on disk after a
crash; forked processes read it through the descriptor they inherit (`os.pread`, no shared
file offset).

Deduplication is exactly that of `Deduplicator` followed by `unique_by_id` (the contract's
rule): records whose identity key and id are both unique in the spill keep their place;
the few that share either are read back and folded by those two rules, in spill order.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import overload

import numpy as np
from isal import isal_zlib

from searchsvc.backends.contract import UniqueRecords
from searchsvc.domain.records import RECORD_FIELDS, Record, fold, identity_key

# Records per compressed block: reading any one record reads its whole block.
BLOCK_RECORDS = 256
# ISA-L level: fast enough not to show beside parsing JSON, and spills a third of the bytes.
_COMPRESSION = 1


def _hash(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def record_fields(record: Record) -> tuple:
    return tuple(getattr(record, name) for name in RECORD_FIELDS)


def record_from_fields(fields: Sequence) -> Record:
    """A record from `record_fields` of a valid one, without validating it again."""
    record = object.__new__(Record)
    for name, value in zip(RECORD_FIELDS, fields, strict=True):
        object.__setattr__(record, name, value)
    return record


class RecordSpill(UniqueRecords):
    """Records appended one by one (`add`), then, once `seal`ed, a deduplicated sequence whose
    slices are views read lazily from disk. Use as a context manager (closes the file)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        handle, path = tempfile.mkstemp(prefix="searchsvc-records-", dir=directory)
        os.unlink(path)
        self._fd = handle
        self._block_ends = array("q", [0])
        self._pending: list[tuple] = []
        self._key_hashes = array("q")
        self._id_hashes = array("q")
        self._positions: np.ndarray | None = None
        self._replaced: dict[int, Record] = {}
        self._unfolded: set[int] = set()
        self.read = 0  # records added
        self.merged = 0  # sightings folded into an earlier one (Deduplicator.merged)
        self.left_out = 0  # records left out by `seal(leave_out=...)`

    # -- writing -----------------------------------------------------------------------------
    def add(self, record: Record, folds: bool = True) -> None:
        """Append a record; `folds` False keeps it out of identity folding (only a later
        record with its id replaces it, as for records written through the API)."""
        if self._positions is not None:
            raise RuntimeError("records cannot be added to a sealed spill")
        if not folds:
            self._unfolded.add(self.read)
        self._key_hashes.append(_hash(self._key(self.read, record)))
        self._id_hashes.append(_hash(record.id))
        self._pending.append(record_fields(record))
        self.read += 1
        if len(self._pending) == BLOCK_RECORDS:
            self._flush()

    def add_all(self, records: Iterable[Record], folds: bool = True) -> None:
        for record in records:
            self.add(record, folds)

    def _flush(self) -> None:
        if self._pending:
            block = isal_zlib.compress(marshal.dumps(self._pending), _COMPRESSION)
            os.pwrite(self._fd, block, self._block_ends[-1])
            self._block_ends.append(self._block_ends[-1] + len(block))
            self._pending = []

    def seal(self, leave_out: Collection[str] = ()) -> RecordSpill:
        """Finish writing and deduplicate, leaving out the records whose id (once folded) is
        in `leave_out` (ids deleted through the API); returns self."""
        self._flush()
        keys = np.frombuffer(self._key_hashes, dtype=np.int64)
        ids = np.frombuffer(self._id_hashes, dtype=np.int64)
        involved = np.flatnonzero(_shared(keys) | _shared(ids))
        dropped = self._resolve(involved.tolist())
        kept = np.ones(self.read, dtype=bool)
        kept[dropped] = False
        if leave_out:
            left_out = self._left_out(ids, kept, set(leave_out))
            kept[left_out] = False
            self.left_out = len(left_out)
        dtype = np.int32 if self.read < 2**31 else np.int64
        self._positions = np.flatnonzero(kept).astype(dtype)
        self._key_hashes = self._id_hashes = array("q")
        return self

    def _resolve(self, involved: list[int]) -> list[int]:
        """Fold the records that share an identity key or an id with another (found by hash,
        checked on the records), as Deduplicator then unique_by_id would; returns the positions
        dropped, and keeps each survivor that changed in `_replaced`."""
        records = dict(zip(involved, self._read_positions(involved), strict=True))
        # Identity folding: each key's result stands at its first sighting.
        folded: dict[str, tuple[int, Record]] = {}
        for position in involved:
            record = records[position]
            key = self._key(position, record)
            seen = folded.get(key)
            if seen is None:
                folded[key] = (position, record)
            else:
                folded[key] = (seen[0], fold(key, seen[1], record))
                self.merged += 1
        # Then one record per id: the last one, at the first one's place.
        by_id: dict[str, tuple[int, Record]] = {}
        for anchor, record in folded.values():
            first = by_id.get(record.id)
            by_id[record.id] = (anchor if first is None else first[0], record)
        survivors = dict(by_id.values())
        for anchor, record in survivors.items():
            if record is not records[anchor]:
                self._replaced[anchor] = record
        return [p for p in involved if p not in survivors]

    def _left_out(self, ids: np.ndarray, kept: np.ndarray, leave_out: set[str]) -> list[int]:
        """The kept positions whose record, as folded, has an id of `leave_out`: found by hash
        (and among the folded ones, whose id may be another's), checked on the records."""
        hashes = np.fromiter((_hash(i) for i in leave_out), dtype=np.int64, count=len(leave_out))
        candidates = np.zeros(self.read, dtype=bool)
        candidates[np.flatnonzero(np.isin(ids, hashes))] = True
        candidates[list(self._replaced)] = True
        positions = np.flatnonzero(candidates & kept)
        return [
            position
            for position, record in zip(positions.tolist(), self._records(positions), strict=True)
            if record.id in leave_out
        ]

    def _key(self, position: int, record: Record) -> str:
        if position in self._unfolded:
            return f"\0unfolded:{position}"
        return identity_key(record)

    # -- reading -----------------------------------------------------------------------------
    def _block(self, number: int) -> list:
        start, end = self._block_ends[number], self._block_ends[number + 1]
        return marshal.loads(isal_zlib.decompress(os.pread(self._fd, end - start, start)))

    def _read_positions(self, positions: Sequence[int]) -> Iterator[Record]:
        """The spilled records at ascending `positions`, before deduplication."""
        number, block = -1, []
        for position in positions:
            if position // BLOCK_RECORDS != number:
                number = position // BLOCK_RECORDS
                block = self._block(number)
            yield record_from_fields(block[position % BLOCK_RECORDS])

    def _records(self, positions: np.ndarray) -> Iterator[Record]:
        replaced = self._replaced
        for position, record in zip(
            positions.tolist(), self._read_positions(positions.tolist()), strict=True
        ):
            yield replaced.get(position, record)

    def _sealed(self) -> np.ndarray:
        if self._positions is None:
            raise RuntimeError("a spill is read only once sealed")
        return self._positions

    def __len__(self) -> int:
        return len(self._sealed())

    def __iter__(self) -> Iterator[Record]:
        return self._records(self._sealed())

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> SpillView: ...
    def __getitem__(self, index: int | slice) -> Record | SpillView:
        return SpillView(self, self._sealed())[index]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RecordSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SpillView(Sequence[Record]):
    """Some of a sealed spill's records, read from disk as they are iterated."""

    def __init__(self, spill: RecordSpill, positions: np.ndarray) -> None:
        self._spill = spill
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    def __iter__(self) -> Iterator[Record]:
        return self._spill._records(self._positions)

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> SpillView: ...
    def __getitem__(self, index: int | slice) -> Record | SpillView:
        if isinstance(index, slice):
            return SpillView(self._spill, self._positions[index])
        # One position (IndexError past either end, as a list's).
        return next(self._spill._records(self._positions[[index]]))


def _shared(hashes: np.ndarray) -> np.ndarray:
    """Mask of the hashes that occur more than once."""
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    same = ordered[1:] == ordered[:-1]
    repeated = np.zeros(len(hashes), dtype=bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    mask = np.zeros(len(hashes), dtype=bool)
    mask[order] = repeated
    return mask
