"""Fixes to Whoosh 2.7.4 (unmaintained since 2016) applied once when the backend is imported.

Each patch replaces one method: most with a behaviour-preserving faster version, one
(`_and_not_find_first`) with a correct one, two (`_durable_toc_write`, `_durable_rename_file`)
with a commit that survives a power cut (durability.py). The tests exercise them through every
build and search.
"""

from __future__ import annotations

import io
import itertools
import struct
from array import array

from whoosh import columns
from whoosh.codec import whoosh3
from whoosh.filedb import filestore, structfile
from whoosh.index import TOC
from whoosh.matching import binary

from searchsvc.backends.whoosh import durability

_MISSING = object()


def _cached_reader(self, fieldname, column):
    # Stock Whoosh caches a field's length-column reader only when the column exists, so a
    # field without lengths (ids, facet keywords, the spelling field) costs a stat() syscall for
    # every posting written at commit, where a dict lookup would do. Cache the miss too.
    reader = self._readers.get(fieldname, _MISSING)
    if reader is _MISSING:
        reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
        self._readers[fieldname] = reader
    return reader


class _BufferReader(io.RawIOBase):
    """A read-only, seekable file over a buffer (a memoryview of the mapped segment file)."""

    def __init__(self, buffer) -> None:
        super().__init__()
        self._view = memoryview(buffer).cast("B")
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        start = self._position
        count = max(0, min(len(target), len(self._view) - start))
        target[:count] = self._view[start : start + count]
        self._position = start + count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._position
        elif whence == io.SEEK_END:
            offset += len(self._view)
        if offset < 0:
            raise ValueError(f"negative seek position {offset}")
        self._position = offset
        return offset

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        if not self.closed:
            self._view.release()  # the mapped file can only be unmapped without exports
        super().close()


def _buffer_file_init(self, buf, name=None, onclose=None):
    # Stock Whoosh wraps the buffer in a BytesIO, which copies it: opening a reader copied each
    # segment's whole term table (time and memory in every process, growing with the index)
    # although terms are then read through `get`, straight from the mapped buffer. Read the
    # buffer in place instead; reads through the file interface see the same bytes.
    self._buf = buf
    self._name = name
    self.file = _BufferReader(buf)
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


def _read_offsets_and_lengths(self):
    # Stock Whoosh derives the offsets of a column written without them (the stored fields,
    # among others) in a Python loop, one append per document, the first time a new searcher
    # reads a stored field. The same offsets, summed in C.
    dbfile, doccount = self._dbfile, self._doccount
    # The column ends with the lengths' type code, or with "X" after the offsets' and lengths'.
    lastbyte = self._basepos + self._length - 1
    lens_code = chr(dbfile.get_byte(lastbyte))
    offsets = None
    if lens_code == "X":
        self.had_stored_offsets = True
        lens_code = chr(dbfile.get_byte(lastbyte - 2))
        offsets_code = chr(dbfile.get_byte(lastbyte - 1))
        offsetstart = (lastbyte - 2) - doccount * struct.calcsize(offsets_code)
        offsets = dbfile.get_array(offsetstart, offsets_code, doccount)
        lastbyte = offsetstart
    lenstart = lastbyte - struct.calcsize(lens_code) * doccount
    lengths = dbfile.get_array(lenstart, lens_code, doccount)
    if offsets is None:
        offsets = array("L", itertools.accumulate(lengths, initial=0))
        offsets.pop()  # the end of the last value
    self._offsets = offsets
    self._lengths = lengths


def _and_not_find_first(self):
    # Stock Whoosh skips a wanted document only when the excluded matcher already stands on it;
    # when the excluded matcher starts on an earlier document, `a AND NOT b` returned the first
    # wanted document even if it also matched b. `_find_next` first moves the excluded matcher
    # up to the wanted one, then skips every wanted document it matches.
    if self.a.is_active() and self.b.is_active():
        self._find_next()


_STOCK_TOC_WRITE = TOC.write
_STOCK_RENAME_FILE = filestore.FileStorage.rename_file


def _durable_toc_write(self, storage, indexname):
    # Stock Whoosh never fsyncs: after a power cut the new TOC could name segments whose
    # content never reached the disk. The files of the folder (the segments this TOC names
    # among them) are made durable first; the TOC itself in `_durable_rename_file`.
    if isinstance(storage, filestore.FileStorage) and not storage.readonly:
        durability.sync_files(storage.folder)
    _STOCK_TOC_WRITE(self, storage, indexname)


def _durable_rename_file(self, oldname, newname, safe=False):
    # Whoosh renames only a TOC written under a temporary name, to publish it (TOC.write): its
    # content is made durable before the name, and the name before Whoosh removes the previous
    # TOC (clean_files), so that a power cut leaves the old state or the new one, never a TOC
    # of zero bytes in place of both.
    if not self.readonly:
        durability.sync_file(self._fpath(oldname))
    _STOCK_RENAME_FILE(self, oldname, newname, safe)
    durability.sync_directory(self.folder)


def apply() -> None:
    TOC.write = _durable_toc_write
    filestore.FileStorage.rename_file = _durable_rename_file
    binary.AndNotMatcher._find_first = _and_not_find_first
    whoosh3.W3PerDocReader._cached_reader = _cached_reader
    structfile.BufferFile.__init__ = _buffer_file_init
    columns.VarBytesColumn.Reader._read_offsets_and_lengths = _read_offsets_and_lengths
