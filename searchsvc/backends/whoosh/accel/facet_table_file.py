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
import operator
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast, overload

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.facet_table import FacetTable, ValueColumn
from searchsvc.backends.whoosh.accel.snapshot_postings import reader_signature
from searchsvc.backends.whoosh.documents import PACKED_FACETS

# Bump when the layout of the arrays changes: files of another format are not loaded.
FORMAT_VERSION = 1
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


def facet_arrays_bytes(reader: IndexReader, table: FacetTable | None = None) -> bytes:
    """The saved form of the FacetTable of `reader`'s index state (an uncompressed .npz);
    `table` when the caller has it already, else built."""
    table = FacetTable.build(reader) if table is None else table
    arrays: dict[str, Any] = {
        "signature": text_array(json.dumps(state_signature(reader), sort_keys=True)),
        "live": table.live,
        "year": table.year,
        "title_rank": table.title_rank,
    }
    for name in PACKED_FACETS:
        column = table.columns[name]
        joined = _VALUE_SEP.join(column.values)
        if column.values and joined.count(_VALUE_SEP) != len(column.values) - 1:
            raise ValueError(f"a {name} facet value contains the separator {_VALUE_SEP!r}")
        arrays[f"{name}.values"] = text_array(joined)
        lengths = np.fromiter((len(v) for v in column.values), np.int64, len(column.values))
        arrays[f"{name}.value_ends"] = np.cumsum(lengths + 1) - 1
        arrays[f"{name}.entry_doc"] = column.entry_doc
        arrays[f"{name}.entry_value"] = column.entry_value
        arrays[f"{name}.totals"] = column.totals
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


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
        with np.load(path, allow_pickle=False) as saved:
            if json.loads(array_text(saved["signature"])) != state_signature(reader):
                return None
            return read(saved)
    except FileNotFoundError:
        return None
    except Exception as exc:
        log.warning("ignoring unreadable %s %s: %r", what, path, exc)
        return None


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
    columns = {}
    for name in PACKED_FACETS:
        text, ends = array_text(saved[f"{name}.values"]), saved[f"{name}.value_ends"]
        if not _offsets_fit(text, ends):
            raise ValueError(f"the {name} value offsets do not fit the values")
        values = PackedValues(text, ends)
        columns[name] = ValueColumn(
            values,
            saved[f"{name}.entry_doc"],
            saved[f"{name}.entry_value"],
            saved[f"{name}.totals"],
        )
    return FacetTable(len(live), live, saved["year"], saved["title_rank"], columns)


def _consistent(table: FacetTable, count: int) -> bool:
    """Whether the arrays fit together and `count` documents (lengths, dtypes, ranges): a cheap
    guard against a file that loads but was not written by `facet_arrays_bytes`."""
    per_document = (table.live, table.year, table.title_rank)
    if any(array.shape != (count,) for array in per_document) or table.live.dtype != np.bool_:
        return False
    if not _integers(table.year) or not _integers(table.title_rank):
        return False
    for column in table.columns.values():
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
