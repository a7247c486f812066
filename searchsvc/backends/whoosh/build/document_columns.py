"""A segment's per-document files (stored fields, field lengths, columns), written in bulk.

Whoosh's writer hands every document to its per-document writer field by field: a stored-fields
dict pickled and compressed per document, a length byte per text field, each column value, all
through a few method calls each, a Python cost paid per value. `DocumentColumns` keeps the
same values as the documents arrive and, at the end, feeds each column's writer in one loop.
The columns are created in the order Whoosh's writer would create them (the order each is
first met, after the stored fields), so the segment's files come out the same
(tests/whoosh/test_fast_writer.py), but for the stored fields' compression: ISA-L's (python-isal) in
zlib's format, which Whoosh's reader decompresses with zlib as before, in much less time than
zlib takes for the same size.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from typing import Any

import numpy as np
from isal import isal_zlib
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
from whoosh.columns import VarBytesColumn

STORED = "_stored"  # W3PerDocWriter's stored-fields column
_STORED_LEVEL = 2  # ISA-L's; its levels 1-3 compress arXiv records about as well as zlib's 3


class DocumentColumns:
    """Collects the per-document data of one segment's documents (numbered from 0)."""

    def __init__(self) -> None:
        # Each document's stored fields (a dict in field order), pickled and compressed as it
        # arrives: as Python objects they took several times the bytes until the segment was
        # written, and bounded how many records a segment may take (build/writer.py).
        self._stored: list[bytes | None] = []
        # Column name -> column, in the order W3PerDocWriter would create them.
        self._columns: dict[str, Any] = {}
        self._values: dict[str, tuple[list[int], list[Any]]] = defaultdict(lambda: ([], []))
        self._length_columns: dict[str, str] = {}  # lengths column name -> field name
        # As W3PerDocWriter._fieldlengths: each field's total length, fields in first-met order.
        self.field_lengths: defaultdict[str, int] = defaultdict(int)

    def add_stored(self, stored: dict[str, Any]) -> None:
        """The next document's stored fields (STORED_COLUMN's value: pickled, compressed)."""
        self._stored.append(
            isal_zlib.compress(pickle.dumps(stored, 2), _STORED_LEVEL) if stored else None
        )

    def add_length(self, name: str, length: int) -> None:
        """A document's (non-zero) length in a field; its length byte is given at `write`."""
        self.field_lengths[name] += length
        lengths_name = _lenfield(name)
        if lengths_name not in self._columns:
            self._columns[lengths_name] = LENGTHS_COLUMN
            self._length_columns[lengths_name] = name

    def add_value(self, docnum: int, name: str, column, value: Any) -> None:
        if name not in self._columns:
            self._columns[name] = column
        docs, values = self._values[name]
        docs.append(docnum)
        values.append(value)

    def write(self, per_doc, doc_count: int, length_bytes: dict[str, bytearray]) -> None:
        """Feed everything to Whoosh's per-document writer `per_doc` (not yet closed), whose
        start_doc / add_field / finish_doc were never called; `length_bytes` holds each text
        field's length byte per document."""
        for name, column in self._columns.items():
            per_doc._create_column(name, column)
        self._write_stored(per_doc._get_column(STORED))
        for name in self._columns:
            writer = per_doc._get_column(name)
            if name in self._values:
                docs, values = self._values.pop(name)
                for docnum, value in zip(docs, values, strict=True):
                    writer.add(docnum, value)
                continue
            column = np.frombuffer(length_bytes[self._length_columns[name]], dtype=np.uint8)
            for docnum in np.flatnonzero(column).tolist():
                writer.add(docnum, int(column[docnum]))
        per_doc._fieldlengths = self.field_lengths
        per_doc._doccount = doc_count

    def _write_stored(self, writer) -> None:
        # STORED_COLUMN is PickleColumn(CompressedBytesColumn()): each document's dict pickled,
        # then compressed (zlib's format), into a VarBytesColumn. Documents without stored
        # fields get nothing.
        bytes_writer = writer._child
        add = VarBytesColumn.Writer.add
        for docnum, stored in enumerate(self._stored):
            if stored is not None:
                add(bytes_writer, docnum, stored)
        self._stored = []
