"""The index directory on disk: each build is a new generation, swapped in atomically.

Layout of an index directory::

    CURRENT             one line: the name of the live generation (replaced with os.replace)
    gen-<stamp>-<pid>/  a complete Whoosh index plus searchsvc.json (build metadata),
                        facets.npz (the facet arrays of its latest state,
                        accel/facet_table_file.py),
                        lexicons.npz (its spelling and title terms, accel/lexicon_file.py)
                        and a MAIN_<segment>.postarrays per segment (accel/posting_arrays_file.py)
    build-<stamp>-<pid>/  a build in progress; never read; removed on failure or by the next build
    .lock               fcntl lock held by the one process building or updating

Readers only ever follow CURRENT, so they never see a half-built index; a build killed with
SIGKILL leaves CURRENT and the live generation untouched, and its build dir is removed by the
next build (which holds the lock, so nothing else can be using it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Hashable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from whoosh import index as whoosh_index
from whoosh.index import Index

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.facet_table_file import facet_arrays_bytes, load_facet_table
from searchsvc.backends.whoosh.accel.lexicon_file import lexicons_bytes
from searchsvc.backends.whoosh.accel.posting_arrays_file import (
    remove_leftover_files,
    write_missing_posting_arrays,
)
from searchsvc.backends.whoosh.accel.snapshot_postings import reader_signature
from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION, build_schema
from searchsvc.errors import BuildInProgress, IndexUnavailable
from searchsvc.records import Record

CURRENT = "CURRENT"
METADATA = "searchsvc.json"
FACET_ARRAYS = "facets.npz"
LEXICONS = "lexicons.npz"
LOCK = ".lock"
GENERATION_PREFIX = "gen-"
BUILD_PREFIX = "build-"
# Generations kept besides the live one, so readers still holding the previous one can finish.
KEEP_PREVIOUS = 1


class IndexDirectory:
    """An index location (default `index/`) holding generations of a Whoosh index."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        # Absolute, so that messages name the directory whatever the reader's working directory.
        self.root = Path(os.path.abspath(root))

    # -- reading ---------------------------------------------------------------------------
    def live_name(self) -> str | None:
        """Name of the live generation, or None when no index was ever built here."""
        try:
            name = (self.root / CURRENT).read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise IndexUnavailable(f"cannot read {self.root / CURRENT}: {exc}") from exc
        return name or None

    def live_path(self) -> Path:
        name = self.live_name()
        if name is None:
            raise IndexUnavailable(
                f"no index at {self.root}: build one with `searchsvc index SOURCE...`",
                index_dir=str(self.root),
            )
        return self.root / name

    def exists(self) -> bool:
        return self.live_name() is not None

    def open(self) -> Index:
        """Open the live generation (read-only use)."""
        path = self.live_path()
        try:
            return whoosh_index.open_dir(str(path))
        except Exception as exc:  # whoosh raises several unrelated types for a broken index
            raise IndexUnavailable(f"cannot open index at {path}: {exc}") from exc

    def metadata(self) -> dict[str, Any]:
        """Build metadata of the live generation (built_at, sources, counts...)."""
        try:
            return json.loads((self.live_path() / METADATA).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def built_at(self) -> datetime | None:
        stamp = self.metadata().get("built_at")
        return datetime.fromisoformat(stamp) if stamp else None

    def size_bytes(self) -> int:
        path = self.live_path()
        return sum(f.stat().st_size for f in path.iterdir() if f.is_file())

    def records(self) -> Iterator[Record]:
        """Every record of the live generation, in index order (what `searchsvc export` writes)."""
        with self.open().searcher() as searcher:
            # all_stored_fields skips documents deleted by an update and not yet merged away.
            for stored in searcher.all_stored_fields():
                yield from_stored(stored)

    # -- writing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's write lock; BuildInProgress when another process has it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise BuildInProgress(f"another build or update is running on {self.root}") from exc
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def build(self, metadata: dict[str, Any] | None = None) -> Iterator[Index]:
        """Create a new generation; on normal exit it becomes live, on any error it vanishes.

        The caller fills the yielded (empty) index and commits its writers; `metadata` is a
        dict the caller may keep filling while building, saved beside the index at the swap.
        """
        metadata = {} if metadata is None else metadata
        with self.lock():
            self._remove_orphan_builds()
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            build_dir = self.root / f"{BUILD_PREFIX}{stamp}-{os.getpid()}"
            generation = build_dir.with_name(f"{GENERATION_PREFIX}{stamp}-{os.getpid()}")
            build_dir.mkdir()
            try:
                index = whoosh_index.create_in(str(build_dir), build_schema())
                yield index
                _save_state_files(index, build_dir)
                # The fast writer saved every segment's; one written by Whoosh's gets them here.
                write_missing_posting_arrays(index)
                metadata.setdefault("built_at", datetime.now(UTC).isoformat())
                metadata["schema_version"] = SCHEMA_VERSION
                _write_atomically(build_dir / METADATA, json.dumps(metadata, indent=2))
                os.rename(build_dir, generation)
                _write_atomically(self.root / CURRENT, generation.name + "\n")
            except BaseException:
                shutil.rmtree(build_dir, ignore_errors=True)
                if self.live_name() != generation.name:  # renamed, but never made live
                    shutil.rmtree(generation, ignore_errors=True)
                raise
            self._remove_old_generations()

    @contextlib.contextmanager
    def update(self, metadata: dict[str, Any] | None = None) -> Iterator[Index]:
        """The live index, locked for an in-place update (Whoosh commits are atomic).

        `metadata`, which the caller may fill while updating, is merged into the saved metadata.
        """
        metadata = {} if metadata is None else metadata
        with self.lock():
            index = self.open()
            previous = _saved_facet_table(index, self.live_path())
            yield index
            # The update committed a new Whoosh generation in place: save its arrays before a
            # new process opens it (one that opens it earlier computes them, as before).
            _save_state_files(index, self.live_path(), previous)
            # Segments Whoosh's writer added or merged have no posting arrays yet; those of
            # merged-away segments went with them (Whoosh deletes files named after a segment).
            remove_leftover_files(self.live_path())
            write_missing_posting_arrays(index)
            meta_path = self.live_path() / METADATA
            saved = self.metadata()
            saved.update(metadata)
            saved["updated_at"] = datetime.now(UTC).isoformat()
            _write_atomically(meta_path, json.dumps(saved, indent=2))

    def _remove_orphan_builds(self) -> None:
        # Called with the lock held: any build dir left is from a killed or crashed build.
        for path in self.root.glob(f"{BUILD_PREFIX}*"):
            shutil.rmtree(path, ignore_errors=True)

    def _remove_old_generations(self) -> None:
        live = self.live_name()
        # Names start with a UTC stamp, so they sort by age; mtimes change on in-place updates.
        generations = sorted(
            (p for p in self.root.glob(f"{GENERATION_PREFIX}*") if p.name != live),
            key=lambda p: p.name,
            reverse=True,
        )
        for path in generations[KEEP_PREVIOUS:]:
            shutil.rmtree(path, ignore_errors=True)


# The facet table of an index state, with the first document number of each of its segments.
PreviousTable = tuple[FacetTable, dict[Hashable, int]]


def _saved_facet_table(index: Index, generation: Path) -> PreviousTable | None:
    """The live state's saved facet table, for an update to carry forward (None if none)."""
    with index.reader() as reader:
        table = load_facet_table(generation / FACET_ARRAYS, reader)
        if table is None:
            return None
        parts = cast("list[tuple[Hashable, int, int, int]]", list(reader_signature(reader)))
        return table, {segment_id: offset for segment_id, offset, _, _ in parts}


def _save_state_files(index: Index, generation: Path, previous: PreviousTable | None = None):
    # Saved with the state they describe, so that a new process loads them instead of reading
    # every document (facet arrays) or every segment's term table (lexicons) on a user's
    # request; facet_table_file.py and lexicon_file.py check that they still match. After an
    # update, the facet table is the previous state's carried forward: only the documents of
    # new segments are read.
    with index.reader() as reader:
        table = None if previous is None else FacetTable.updated(*previous, reader)
        contents = (
            (FACET_ARRAYS, lambda: facet_arrays_bytes(reader, table)),
            (LEXICONS, lambda: lexicons_bytes(reader)),
        )
        for name, content in contents:
            for leftover in generation.glob(f".{name}.*.tmp"):
                leftover.unlink()  # from a writer killed mid-write (we hold the lock: none runs)
            _write_atomically(generation / name, content())


def _write_atomically(path: Path, content: str | bytes) -> None:
    """Write a file so readers see the old or the new content, never a partial one."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
