"""A snapshot's `FacetTable` saved beside the index, so a new process loads it, not computes it.

Computing the table reads every document's packed facet column and sorts every title: work that
grows with the index, and most of what a fresh gunicorn worker spent before answering its first
search. Builds and updates (store.py) therefore save it, as one uncompressed `.npz` of plain
arrays, together with the signature of the exact index state it describes: the Whoosh TOC
generation, the document count and every segment with its size and deletion count.

A snapshot opening the file checks that signature against its own reader. A missing file, one of
another state (an update committed since, a merge) or one that does not load cleanly means the
table is computed from the index as before: the file can make a cold start fast, never a count
wrong.
"""

from __future__ import annotations

import io
import json
import logging
import mmap
import operator
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO, TypeVar, cast, overload

import numpy as np
from isal import isal_zlib
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.snapshot_postings import reader_signature
from searchsvc.backends.whoosh.accel.value_column import ValueColumn, ValueMajor
from searchsvc.backends.whoosh.documents import PACKED_FACETS

# Bump when the layout of the arrays changes: files of another format are not loaded.
FORMAT_VERSION = 1
# Arrays of saved states start at multiples of this many bytes in their file (npz_bytes).
_ALIGN = 64
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_PADDING_ID = (0xD935).to_bytes(2, "little")  # zipalign's extra field
_NPY_HEADER_MAX = 65_536 + 16
# The subject facets whose columns (all categories, not primary only) a saved table carries.
DERIVED_SAVED = ("category", "subject")
# Facet values never hold control characters (documents.py splits the packed column on this one).
_VALUE_SEP = "\x1f"

log = logging.getLogger(__name__)
T = TypeVar("T")


def state_signature(reader: IndexReader) -> dict[str, Any]:
    """What identifies the index state `reader` sees, as JSON-compatible data."""
    return {
        "format": FORMAT_VERSION,
        "toc_generation": reader.generation(),
        "doc_count_all": reader.doc_count_all(),
        "segments": [list(cast("tuple[Any, ...]", part)) for part in reader_signature(reader)],
    }


def write_facet_arrays(
    handle: BinaryIO, reader: IndexReader, table: FacetTable | None = None
) -> None:
    """Write the saved form of the FacetTable of `reader`'s index state (an uncompressed .npz)
    to `handle`; `table` when the caller has it already, else built."""
    table = FacetTable.build(reader) if table is None else table
    write_npz(handle, _table_arrays(table, reader))


def _table_arrays(table: FacetTable, reader: IndexReader) -> Iterator[tuple[str, np.ndarray]]:
    """The arrays of the saved form, made one column at a time (what is made for a column is
    dropped once written: at five million records each column's grouping is 100-200 MB)."""
    yield "signature", text_array(json.dumps(state_signature(reader), sort_keys=True))
    yield "live", table.live
    yield "year", table.year
    yield "title_rank", table.title_rank
    for name in PACKED_FACETS:
        yield from _column_arrays(name, table.columns[name])
    # What a first faceted search would otherwise compute in each new process (most of a
    # cold start at a million records): the subject facets' columns, derived from the stored
    # categories by the taxonomy (kept with the mapping it gave, so that a process with
    # another taxonomy derives them again), and each column's entries grouped by value.
    for facet in DERIVED_SAVED:
        yield from _column_arrays(f"derived.{facet}", table.column(facet))
        yield f"derived.{facet}.mapping", text_array(json.dumps(table.derived_mapping(facet)))
        table.forget_derived(facet)


def _column_arrays(name: str, column: ValueColumn) -> Iterator[tuple[str, np.ndarray]]:
    joined = _VALUE_SEP.join(column.values)
    if column.values and joined.count(_VALUE_SEP) != len(column.values) - 1:
        raise ValueError(f"a {name} facet value contains the separator {_VALUE_SEP!r}")
    yield f"{name}.values", text_array(joined)
    del joined
    lengths = np.fromiter((len(v) for v in column.values), np.int64, len(column.values))
    yield f"{name}.value_ends", np.cumsum(lengths + 1) - 1
    yield f"{name}.entry_doc", column.entry_doc
    yield f"{name}.entry_value", column.entry_value
    yield f"{name}.totals", column.totals
    had_grouping = column._by_total is not None
    major = column.value_major()
    yield f"{name}.major.ordinals", major.ordinals.astype(np.int64)
    yield f"{name}.major.rising", major.rising.astype(np.int64)
    yield f"{name}.major.starts", major.starts.astype(np.int64)
    yield f"{name}.major.docs", major.docs.astype(np.int64)
    yield f"{name}.major.complete", np.array([major.complete])
    if not had_grouping:
        column._by_total = None


def _get_column(saved, name: str) -> ValueColumn:
    text, ends = array_text(saved[f"{name}.values"]), saved[f"{name}.value_ends"]
    if not _offsets_fit(text, ends):
        raise ValueError(f"the {name} value offsets do not fit the values")
    column = ValueColumn(
        PackedValues(text, ends),
        saved[f"{name}.entry_doc"],
        saved[f"{name}.entry_value"],
        saved[f"{name}.totals"],
    )
    if f"{name}.major.docs" in saved:
        major = ValueMajor(
            saved[f"{name}.major.ordinals"].astype(np.intp, copy=False),
            saved[f"{name}.major.rising"],
            saved[f"{name}.major.starts"],
            saved[f"{name}.major.docs"].astype(np.intp, copy=False),
            bool(saved[f"{name}.major.complete"][0]),
        )
        if not _major_fits(major, column):
            raise ValueError(f"the {name} values' grouping does not fit its entries")
        column._by_total = major
    return column


def _major_fits(major: ValueMajor, column: ValueColumn) -> bool:
    """A cheap guard, as `_consistent`: the grouping's arrays fit together and the column."""
    held = len(major.ordinals)
    return (
        major.rising.shape == (held,)
        and major.starts.shape == (held + 1,)
        and major.docs.ndim == 1
        and (not held or (major.ordinals.min() >= 0 and major.ordinals.max() < len(column.values)))
        and int(major.starts[0]) == 0
        and int(major.starts[-1]) == len(major.docs)
        and bool(np.all(np.diff(major.starts) >= 0))
        and (
            not len(major.docs)
            or (major.docs.min() >= 0 and major.docs.max() < _docs_bound(column))
        )
    )


def _docs_bound(column: ValueColumn) -> int:
    return int(column.entry_doc.max()) + 1 if len(column.entry_doc) else 0


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """`write_npz` into memory."""
    buffer = io.BytesIO()
    write_npz(buffer, arrays)
    return buffer.getvalue()


def write_npz(
    handle: BinaryIO, arrays: dict[str, np.ndarray] | Iterable[tuple[str, np.ndarray]]
) -> None:
    """Write `arrays` (a dict, or pairs made as they are written) to `handle`, at its start,
    as an uncompressed .npz (np.load reads it) whose every array's data starts at a multiple
    of _ALIGN bytes in the file, so that `read_saved_state` maps it instead of copying it:
    gunicorn's workers then share one copy in the page cache. Arrays are streamed into the
    file, never copied whole.

    Each member's local zip header gets an extra field of padding (zipalign's id) that
    brings the .npy it holds to the alignment; the .npy header pads its data to 64 bytes.
    """
    pairs = arrays.items() if isinstance(arrays, dict) else arrays
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in pairs:
            array = np.ascontiguousarray(array)
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, np.lib.format.header_data_from_array_1_0(array)
            )
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.file_size = header.tell() + array.nbytes
            fixed = _LOCAL_HEADER + len(info.filename.encode("utf-8")) + 4  # + extra's own header
            padding = -(handle.tell() + fixed) % _ALIGN
            info.extra = _PADDING_ID + padding.to_bytes(2, "little") + bytes(padding)
            with archive.open(info, "w") as member:
                member.write(header.getvalue())
                if array.nbytes:
                    member.write(array.reshape(-1).view(np.uint8).data)


def mapped_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz written by `npz_bytes`, as read-only views of a memory map of
    it (shared with every process that maps the file), each member's CRC checked; ValueError
    for anything else."""
    with open(path, "rb") as handle:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    arrays = {}
    with zipfile.ZipFile(cast("IO[bytes]", buffer)) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ValueError(f"{info.filename} is not a stored .npy")
            at = info.header_offset
            if buffer[at : at + 4] != b"PK\x03\x04":
                raise ValueError(f"no local header for {info.filename}")
            name_length = int.from_bytes(buffer[at + 26 : at + 28], "little")
            extra_length = int.from_bytes(buffer[at + 28 : at + 30], "little")
            start = at + _LOCAL_HEADER + name_length + extra_length
            member = io.BytesIO(buffer[start : start + min(info.file_size, _NPY_HEADER_MAX)])
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
            else:
                raise ValueError(f"{info.filename}: .npy format {version}")
            offset = start + member.tell()
            count = int(np.prod(shape, dtype=np.int64))
            if fortran or dtype.hasobject or offset % _ALIGN:
                raise ValueError(f"{info.filename} cannot be mapped")
            if offset + count * dtype.itemsize > start + info.file_size:
                raise ValueError(f"{info.filename} is truncated")
            # np.load checks each member's CRC; so does this, without copying (ISA-L's CRC
            # reads some 20 GB/s: milliseconds for a million records' arrays).
            with memoryview(buffer)[start : start + info.file_size] as data:
                if isal_zlib.crc32(data) != info.CRC:
                    raise ValueError(f"{info.filename} fails its CRC check")
            array = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
            arrays[info.filename.removesuffix(".npy")] = array.reshape(shape)
    return arrays


def load_facet_table(path: Path, reader: IndexReader) -> FacetTable | None:
    """The table saved at `path` if it describes exactly `reader`'s index state, else None."""
    table = read_saved_state(path, reader, "facet arrays", _table_from)
    if table is not None and not _consistent(table, reader.doc_count_all()):
        log.warning("ignoring inconsistent facet arrays %s", path)
        return None
    return table


def read_saved_state(
    path: Path, reader: IndexReader, what: str, read: Callable[[Any], T | None]
) -> T | None:
    """`read(arrays)` of the .npz at `path` if it was saved for exactly `reader`'s index state.

    None when the file is missing (an index built before it existed), of another state (an
    update or a merge committed since) or damaged: a damaged file fails in many ways (zip CRC,
    truncated member, bad UTF-8, missing key...), and each means "compute it from the index",
    never "fail the request".
    """
    try:
        saved = _SavedArrays(path)
        if json.loads(array_text(saved["signature"])) != state_signature(reader):
            return None
        return read(saved)
    except FileNotFoundError:
        return None
    except Exception as exc:
        log.warning("ignoring unreadable %s %s: %r", what, path, exc)
        return None


class _SavedArrays(dict[str, np.ndarray]):
    """A saved state's arrays: mapped (`mapped_npz`), or read into memory from a file that
    cannot be mapped (written before files were aligned)."""

    def __init__(self, path: Path) -> None:
        try:
            super().__init__(mapped_npz(path))
        except (ValueError, zipfile.BadZipFile, BufferError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            with np.load(path, allow_pickle=False) as saved:
                super().__init__({name: saved[name] for name in saved.files})

    @property
    def files(self) -> list[str]:
        return list(self)


def facet_table_for(path: Path, reader: IndexReader) -> FacetTable:
    """The FacetTable of `reader`'s index state: loaded from `path` when it matches, else built."""
    table = load_facet_table(path, reader)
    return FacetTable.build(reader) if table is None else table


class PackedValues(Sequence[str]):
    """A saved column's sorted values as one string and the end offset of each value in it.

    Splitting the string into one str per value (every author name) weighed on a cold start;
    a value is sliced out when asked for instead (`top` asks for a few, `ordinal` bisects).
    """

    def __init__(self, text: str, ends: np.ndarray) -> None:
        self._text = text
        self._ends = ends  # kept as numpy: a list of that many ints would cost more than it saves

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = operator.index(index)  # numpy integers too
        if position < 0:
            position += len(self._ends)
        if not 0 <= position < len(self._ends):
            raise IndexError("value ordinal out of range")
        end = int(self._ends[position])
        start = int(self._ends[position - 1]) + 1 if position else 0
        return self._text[start:end]

    def __iter__(self) -> Iterator[str]:
        return iter(self._text.split(_VALUE_SEP) if len(self._ends) else ())


def _table_from(saved) -> FacetTable:
    live = saved["live"]
    columns = {name: _get_column(saved, name) for name in PACKED_FACETS}
    table = FacetTable(len(live), live, saved["year"], saved["title_rank"], columns)
    for facet in DERIVED_SAVED:
        if f"derived.{facet}.mapping" in saved:
            mapping = json.loads(array_text(saved[f"derived.{facet}.mapping"]))
            table.seed_derived(facet, _get_column(saved, f"derived.{facet}"), mapping)
    return table


def _consistent(table: FacetTable, count: int) -> bool:
    """Whether the arrays fit together and `count` documents (lengths, dtypes, ranges): a cheap
    guard against a file that loads but was not written by `write_facet_arrays`."""
    per_document = (table.live, table.year, table.title_rank)
    if any(array.shape != (count,) for array in per_document) or table.live.dtype != np.bool_:
        return False
    if not _integers(table.year) or not _integers(table.title_rank):
        return False
    for column in table.held_columns():
        docs, values = column.entry_doc, column.entry_value
        if docs.ndim != 1 or values.shape != docs.shape or column.totals.ndim != 1:
            return False
        if not _integers(docs) or not _integers(values) or len(column.totals) != len(column.values):
            return False
        if len(docs) and not (
            docs.min() >= 0
            and docs.max() < count
            and values.min() >= 0
            and values.max() < len(column.values)
        ):
            return False
    return True


def _integers(array: np.ndarray) -> bool:
    return array.dtype.kind in "iu"


def _offsets_fit(text: str, ends: np.ndarray) -> bool:
    """Whether value end offsets describe `text`: ascending, one separator between values."""
    if ends.ndim != 1 or not _integers(ends):
        return False
    if not len(ends):
        return not text
    return (
        ends[-1] == len(text)
        and bool((np.diff(ends) >= 1).all())
        and text.count(_VALUE_SEP) == len(ends) - 1
    )


def text_array(text: str) -> np.ndarray:
    """Text as a uint8 array of its UTF-8 bytes, as .npz files here hold it (no pickles)."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def array_text(array: np.ndarray) -> str:
    """The text `text_array` saved; ValueError for any other array."""
    if array.dtype != np.uint8:
        raise ValueError("not a text array")
    return array.tobytes().decode("utf-8")
