"""Build or update an index from source files: read, deduplicate, write, swap in.

`build_index` has the engine write a new index beside the live one and swap it in only once it
is complete; `update_index` upserts records into the live index by id. Both go through the
engine contract (backends.SearchBackend), so they work on every engine. The CLI only calls these.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchsvc.backends import SearchBackend, WriteResult, open_backend
from searchsvc.domain.errors import BuildInProgress, IndexUnavailable, InvalidRequest, SourceError
from searchsvc.domain.records import Record
from searchsvc.embeddings import model_installed, model_zip
from searchsvc.indexing.progress import BarProgress, reading_bar, writing_bar
from searchsvc.indexing.record_spill import RecordSpill
from searchsvc.sources import Skipped, read_records
from searchsvc.tasks import TaskQueue, TaskWriter

# Skipped records kept for the report; the count covers all of them.
MAX_SKIPPED_KEPT = 100
# Records read between two updates of the reading bar.
_PROGRESS_EVERY = 1_000

Source = str | os.PathLike[str]
# Where to write: a location (a path, `whoosh:///...`) or an open backend.
Location = str | os.PathLike[str] | SearchBackend


@dataclass(frozen=True, slots=True)
class BuildSummary:
    """What a build or update did: counts, the first skipped records, and how fast it went."""

    read: int
    indexed: int
    merged: int
    skipped_count: int
    seconds: float
    index_dir: str  # the index location written (a URL, `whoosh:///abs/path`)
    # The first MAX_SKIPPED_KEPT skipped records (path, line, reason).
    skipped: tuple[Skipped, ...] = ()
    writer: str = "single writer"
    # Of `seconds`, the time spent reading and deduplicating the sources (the rest is writing).
    read_seconds: float = 0.0
    # Update only: how many indexed records replaced one with the same id.
    replaced: int = 0
    # Build only: records written through the API that the build kept (not in the sources).
    kept_written: int = 0
    # Build only: records of the sources left out, their ids deleted through the API.
    left_out_deleted: int = 0
    # Update through the task queue: the task that carried the records.
    task_id: int | None = None

    @property
    def records_per_second(self) -> float:
        return self.indexed / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "indexed": self.indexed,
            "merged": self.merged,
            "skipped": self.skipped_count,
            "replaced": self.replaced,
            "seconds": round(self.seconds, 3),
            "read_seconds": round(self.read_seconds, 3),
            "records_per_second": round(self.records_per_second, 1),
            "writer": self.writer,
            "kept_written": self.kept_written,
            "left_out_deleted": self.left_out_deleted,
            "task_id": self.task_id,
        }


@dataclass
class _Collected:
    """Records read from the sources, with what was skipped on the way: spilled to disk as
    they are read (record_spill.py), so that memory does not grow with the corpus, and
    deduplicated once `seal`ed. A context manager: the spill's file is closed on exit."""

    records: RecordSpill
    read: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    skipped_count: int = 0
    # perf_counter() when reading was done.
    read_until: float = field(default_factory=time.perf_counter)

    @property
    def merged(self) -> int:
        return self.records.merged

    def seal(self, leave_out: Collection[str] = ()) -> _Collected:
        """Deduplicate, leaving out the records of the ids in `leave_out` (RecordSpill.seal)."""
        self.records.seal(leave_out)
        self.read_until = time.perf_counter()
        return self

    def __enter__(self) -> _Collected:
        return self

    def __exit__(self, *exc: object) -> None:
        self.records.close()


def build_index(
    sources: Sequence[Source],
    index: Location,
    format: str | None = None,
    progress: bool | None = None,
    procs: int | None = None,
    queue: TaskQueue | None = None,
    replace: bool = False,
    vectors: bool | None = None,
    memory_budget: int | None = None,
) -> BuildSummary:
    """Build a fresh index of `sources` at `index` and swap it in; the old one stays on error.

    `index` is a location (a path, `whoosh:///...`) or an open backend. `progress` None shows
    a progress bar only when stderr is a terminal; `procs` None lets the engine choose.
    `vectors` (embeddings for hybrid and semantic search): None makes them when the embedding
    model is installed; True requires it (ModelUnavailable names the install command).
    `memory_budget` (bytes) bounds what the build holds at once (None: the engine's default);
    the records are spilled to a file in the temporary directory ($TMPDIR) while they are read.

    With the index's task `queue`, the build holds the queue's writer off while it runs (queued
    writes are applied after the swap, to the new index) and keeps what was done through the
    API, which files cannot know about: the records written replace records of the sources with
    the same id, and the ids deleted (tombstones, until written again) are left out. `replace`
    builds from the sources alone instead, and the queue forgets both.
    """
    started = time.perf_counter()
    with _opened(index) as backend:
        backend.check_writable()
        metadata = _source_metadata(sources, format)
        writing = _Writing(progress, procs, wants_vectors(vectors), memory_budget)
        with _read_sources(sources, format, progress) as collected:
            if queue is None:
                collected.seal()
                return _build(backend, collected, started, metadata, writing)
            with queue.apply_lock():
                kept = 0
                deleted: set[str] = set()
                if not replace:
                    # Written records replace source records of their id, and are never folded
                    # with another by title or arXiv version.
                    for record in _written_records(backend, queue):
                        collected.records.add(record, folds=False)
                        kept += 1
                    deleted = queue.deleted_ids()
                collected.seal(leave_out=deleted)
                summary = _build(backend, collected, started, metadata, writing)
                if replace:
                    queue.forget_written()
                    queue.forget_deleted()
            left_out = collected.records.left_out
            return dataclasses.replace(summary, kept_written=kept, left_out_deleted=left_out)


def _written_records(backend: SearchBackend, queue: TaskQueue) -> Iterator[Record]:
    """The records of the index that API writes put there (read while the writer is held)."""
    written = queue.written_ids()
    if not written:
        return
    try:
        yield from (record for record in backend.records() if record.id in written)
    except IndexUnavailable:
        return


def build_index_from_records(
    records: Iterable[Record],
    index: Location,
    progress: bool | None = None,
    procs: int | None = None,
    vectors: bool | None = None,
    memory_budget: int | None = None,
) -> BuildSummary:
    """`build_index` for records already in memory (or any iterable that yields them)."""
    started = time.perf_counter()
    with _opened(index) as backend:
        backend.check_writable()
        writing = _Writing(progress, procs, wants_vectors(vectors), memory_budget)
        with _deduplicate(records) as collected:
            metadata: dict[str, Any] = {"sources": []}
            return _build(backend, collected, started, metadata, writing)


# Whether builds make vectors when not told: auto (when the model is installed), on, off.
VECTORS_ENV = "SEARCHSVC_VECTORS"


def wants_vectors(vectors: bool | None) -> bool:
    """Whether a build makes vectors: as asked, else as $SEARCHSVC_VECTORS says (auto: when
    the embedding model is installed)."""
    if vectors is None:
        setting = os.environ.get(VECTORS_ENV, "auto").strip().lower() or "auto"
        if setting not in ("auto", "on", "off"):
            raise InvalidRequest(f"{VECTORS_ENV} must be auto, on or off, not {setting!r}")
        if setting == "auto":
            return model_installed()
        vectors = setting == "on"
    if vectors:
        model_zip()  # ModelUnavailable, naming the install command, before any work
    return vectors


def update_index(
    sources: Sequence[Source],
    index: Location,
    format: str | None = None,
    progress: bool | None = None,
    queue: TaskQueue | None = None,
) -> BuildSummary:
    """Upsert the records of `sources` into the index by id (replace or add).

    With the index's task `queue`, the records go in as one task, applied in order with the
    API's writes: by this process when no writer runs, else by the writer (waited for).
    """
    started = time.perf_counter()
    with _opened(index) as backend, _read_sources(sources, format, progress) as collected:
        if queue is None:
            backend.check_writable()
        collected.seal()
        if queue is None:
            return _update(backend, collected, started, progress, _source_metadata(sources, format))
        return _update_through(queue, backend, collected, started)


def _update_through(
    queue: TaskQueue, backend: SearchBackend, collected: _Collected, started: float
) -> BuildSummary:
    _fail_if_empty(collected)
    task = queue.enqueue_upserts(collected.records, origin="cli")
    try:
        task = TaskWriter(queue, backend).apply_until_done(task.id)
    except (IndexUnavailable, BuildInProgress) as exc:
        # The task is on disk and a writer applies it later: saying only that the engine
        # failed (Solr down) read as if the update were lost.
        raise type(exc)(
            f"{exc.message} (task {task.id} stays queued: a writer applies it once the index "
            "can be written)",
            **exc.details,
        ) from None
    if task.status == "failed":
        error = task.error or {}
        raise SourceError(f"task {task.id} failed: {error.get('message', 'unknown error')}")
    batch = (task.result or {}).get("batch", {})
    alone = batch.get("tasks") == 1
    return BuildSummary(
        read=collected.read,
        indexed=len(collected.records),
        merged=collected.merged,
        skipped_count=collected.skipped_count,
        seconds=time.perf_counter() - started,
        index_dir=backend.location,
        skipped=tuple(collected.skipped),
        writer="task queue",
        read_seconds=collected.read_until - started,
        replaced=batch.get("replaced", 0) if alone else 0,
        task_id=task.id,
    )


def update_index_from_records(
    records: Iterable[Record], index: Location, progress: bool | None = None
) -> BuildSummary:
    """`update_index` for records already in memory."""
    started = time.perf_counter()
    with _opened(index) as backend:
        backend.check_writable()
        with _deduplicate(records) as collected:
            return _update(backend, collected, started, progress, {"sources": []})


@contextmanager
def _opened(index: Location) -> Iterator[SearchBackend]:
    """The backend of a location, closed afterwards; an open backend is used as it is."""
    if isinstance(index, SearchBackend):
        yield index
        return
    with open_backend(index) as backend:
        yield backend


# -- reading ---------------------------------------------------------------------------------
def _read_sources(
    sources: Sequence[Source], format: str | None, progress: bool | None
) -> _Collected:
    """The sources' records, spilled but not yet sealed (deduplicated)."""
    if not sources:
        raise SourceError("no source given")
    collected = _Collected(RecordSpill())
    try:

        def on_skip(item: Skipped) -> None:
            collected.skipped_count += 1
            if len(collected.skipped) < MAX_SKIPPED_KEPT:
                collected.skipped.append(item)

        records = read_records([Path(s) for s in sources], format=format, on_skip=on_skip)
        with reading_bar(progress) as bar:
            _spill(collected, records, bar.update)
    except BaseException:
        collected.records.close()
        raise
    return collected


def _spill(collected: _Collected, records: Iterable[Record], advance: Callable[[int], Any]) -> None:
    add = collected.records.add
    for record in records:
        add(record)
        collected.read += 1
        if collected.read % _PROGRESS_EVERY == 0:
            advance(_PROGRESS_EVERY)
    advance(collected.read % _PROGRESS_EVERY)


def _deduplicate(records: Iterable[Record]) -> _Collected:
    collected = _Collected(RecordSpill())
    try:
        _spill(collected, records, lambda count: None)
    except BaseException:
        collected.records.close()
        raise
    return collected.seal()


# -- writing ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Writing:
    """How a build asks the engine to write: progress bar, processes, vectors, memory."""

    progress: bool | None
    procs: int | None
    vectors: bool
    memory_budget: int | None


def _build(
    backend: SearchBackend,
    collected: _Collected,
    started: float,
    metadata: dict[str, Any],
    writing: _Writing,
) -> BuildSummary:
    _fail_if_empty(collected)
    metadata["counts"] = _counts(collected)
    with writing_bar(len(collected.records), writing.progress) as bar:
        result = backend.rebuild(
            collected.records,
            metadata=metadata,
            procs=writing.procs,
            progress=BarProgress(bar),
            vectors=writing.vectors,
            memory_budget=writing.memory_budget,
        )
    return _summary(backend, collected, started, result)


def _update(
    backend: SearchBackend,
    collected: _Collected,
    started: float,
    progress: bool | None,
    metadata: dict[str, Any],
) -> BuildSummary:
    _fail_if_empty(collected)
    metadata["counts"] = _counts(collected)
    with writing_bar(len(collected.records), progress) as bar:
        result = backend.write(
            upserts=collected.records, metadata=metadata, progress=BarProgress(bar)
        )
    return _summary(backend, collected, started, result)


def _counts(collected: _Collected) -> dict[str, int]:
    """What the sources gave, saved with the index (`searchsvc stats --json` shows the index's)."""
    return {
        "read": collected.read,
        "indexed": len(collected.records),
        "merged": collected.merged,
        "skipped": collected.skipped_count,
    }


def _summary(
    backend: SearchBackend, collected: _Collected, started: float, result: WriteResult
) -> BuildSummary:
    # The time the caller waited: the engine's commit and swap included.
    return BuildSummary(
        read=collected.read,
        indexed=result.added + result.replaced,
        merged=collected.merged,
        skipped_count=collected.skipped_count,
        seconds=time.perf_counter() - started,
        index_dir=backend.location,
        skipped=tuple(collected.skipped),
        writer=result.writer,
        read_seconds=collected.read_until - started,
        replaced=result.replaced,
    )


def _fail_if_empty(collected: _Collected) -> None:
    # Never swap in an empty index: an empty result is almost always a wrong path or format.
    if not collected.records:
        raise SourceError(
            f"no records to index ({collected.read} read, {collected.skipped_count} skipped)"
        )


def _source_metadata(sources: Sequence[Source], format: str | None) -> dict[str, Any]:
    return {"sources": [str(s) for s in sources], "format": format}
