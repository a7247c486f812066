"""Fixes to Whoosh 2.7.4 (unmaintained since 2016) applied once when the backend is imported.

Each patch replaces one method with a behaviour-preserving faster version; the tests exercise
them through every build and search.
"""

from __future__ import annotations

from whoosh.codec import whoosh3

_MISSING = object()


def _cached_reader(self, fieldname, column):
    # Stock Whoosh caches a field's length-column reader only when the column exists, so a
    # field without lengths (ids, facet keywords, the spelling field) costs a stat() syscall for
    # every posting written at commit: a fifth of the commit time here. Cache the miss too.
    reader = self._readers.get(fieldname, _MISSING)
    if reader is _MISSING:
        reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
        self._readers[fieldname] = reader
    return reader


def apply() -> None:
    whoosh3.W3PerDocReader._cached_reader = _cached_reader
