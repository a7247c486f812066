"""What a committed state of a generation writes beside Whoosh's own files: the facet arrays and
lexicons (read at start instead of every document), the vector graphs of large segments, the
build metadata, and last the manifest that seals the state (integrity.py). Every file is
written atomically and fsynced; store.py decides when. The seal makes the whole state durable
before the manifest vouches for it (durability.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, BinaryIO, cast

from whoosh.index import Index

from searchsvc.backends.shared.vectors import VECTORS_METADATA
from searchsvc.backends.whoosh import durability, integrity
from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.facet_table_file import load_facet_table, write_facet_arrays
from searchsvc.backends.whoosh.accel.lexicon_file import lexicons_bytes
from searchsvc.backends.whoosh.accel.snapshot_postings import reader_signature
from searchsvc.backends.whoosh.accel.vector_table import write_missing_graphs

FACET_ARRAYS = "facets.npz"
LEXICONS = "lexicons.npz"
# The live state's facet table and its segments' offsets, carried forward by an update.
PreviousTable = tuple[FacetTable, dict[Hashable, int]]


def saved_facet_table(index: Index, generation: Path) -> PreviousTable | None:
    """The live state's saved facet table, for an update to carry forward (None if none)."""
    with index.reader() as reader:
        table = load_facet_table(generation / FACET_ARRAYS, reader)
        if table is None:
            return None
        parts = cast("list[tuple[Hashable, int, int, int]]", list(reader_signature(reader)))
        return table, {segment_id: offset for segment_id, offset, _, _ in parts}


def save_state_files(index: Index, generation: Path, previous: PreviousTable | None = None) -> None:
    """Write the facet arrays and lexicons of the state `index` reader sees."""
    # Saved with the state they describe, so that a new process loads them instead of reading
    # every document (facet arrays) or every segment's term table (lexicons) on a user's
    # request; facet_table_file.py and lexicon_file.py check that they still match. After an
    # update, the facet table is the previous state's carried forward: only the documents of
    # new segments are read.
    with index.reader() as reader:
        table = None if previous is None else FacetTable.updated(*previous, reader)

        def write_lexicons(handle: BinaryIO) -> None:
            handle.write(lexicons_bytes(reader))

        contents: tuple[tuple[str, Callable[[BinaryIO], None]], ...] = (
            (FACET_ARRAYS, lambda handle: write_facet_arrays(handle, reader, table)),
            (LEXICONS, write_lexicons),
        )
        for name, content in contents:
            for leftover in generation.glob(f".{name}.*.tmp"):
                leftover.unlink()  # from a writer killed mid-write (we hold the lock: none runs)
            write_atomically(generation / name, content)


def write_vector_graphs(index: Index, metadata: dict[str, Any]) -> None:
    """Graphs for the large segments of an index with vectors that lack one."""
    # Large segments of an index with vectors get a nearest-neighbour graph (derived, like the
    # posting arrays; accel/vector_table.py scans a segment without one).
    vectors = metadata.get(VECTORS_METADATA)
    if isinstance(vectors, dict) and vectors.get("dimensions"):
        write_missing_graphs(index, int(vectors["dimensions"]))


def seal(generation: Path, toc_generation: int) -> None:
    """Write the manifest that makes a state servable (its files' sizes and checksums), once
    every file of the state and their names are durable."""
    # Leftover temporaries of killed writers are no part of the state (we hold the lock).
    for leftover in generation.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)
    # A manifest vouching for files whose content a power cut can still lose would make the
    # generation fail verification after one, and its writes be served from an older one:
    # contents first, then the directory (the manifest's own name is synced after its rename,
    # by write_atomically). The caller marks its tasks succeeded only after this returns.
    durability.sync_folder(generation)
    integrity.write_manifest(generation, toc_generation, write_atomically)


def write_atomically(path: Path, content: str | bytes | Callable[[BinaryIO], None]) -> None:
    """Write a file so readers see the old or the new content, never a partial one; `content`
    may be a function that writes it to the file it is given (a large file is then never
    whole in memory)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            if callable(content):
                content(handle)
            else:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    durability.sync_directory(path.parent)
