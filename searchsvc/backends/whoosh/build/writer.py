"""How records reach a Whoosh index: our segment builder for builds, Whoosh's writer for updates.

A full build writes its segments with `segment.SegmentBuilder`, which produces the files
Whoosh's own writer would for the same documents with far less CPU time (each text analysed
once, postings encoded in bulk). Large inputs are split in contiguous shares, each built as
segments by a forked worker process (the workers read their records from the build's record
spill, nothing is pickled), and the parent commits the index's table of contents with every
segment. A segment's postings are held in memory until it is written, so the segment size is
what bounds a build's memory: `segment_records` sizes segments to a memory budget.
Updates (`apply_changes`) write their new records the same way, as one more segment, and let
Whoosh's stock writer mark the replaced and deleted documents and merge small segments (a
bounded merge: `merge_small_segments`).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import multiprocessing
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import cast

from whoosh.codec import default_codec
from whoosh.codec.whoosh3 import W3Segment
from whoosh.index import TOC, Index, LockError, clean_files
from whoosh.reading import SegmentReader
from whoosh.writing import SegmentWriter

from searchsvc.backends.whoosh.build.segment import SegmentBuilder
from searchsvc.backends.whoosh.documents import to_document
from searchsvc.domain.records import Record
from searchsvc.system.child_processes import die_with_parent
from searchsvc.system.memory import release_free_memory

log = logging.getLogger(__name__)

# Below this many records one process finishes before worker processes would pay off.
MULTIPROCESS_MIN_RECORDS = 5_000
# A segment's postings are held in memory until it is written, so the segment size bounds a
# writer's memory; larger shares are written as several segments. Larger segments make faster
# searches (fewer per-segment lookups) up to about this size.
MAX_SEGMENT_RECORDS = 100_000
MIN_SEGMENT_RECORDS = 5_000
# What a build's processes may hold at once, summed, unless told otherwise (--memory-budget).
DEFAULT_MEMORY_BUDGET = 2 * 1024**3
# Measured with benchmarks/bench_scale.py (RSS, sampled): a writer process before its first
# record (the interpreter, Whoosh, numpy, the parent's pages it shares), and what a segment
# builder holds at its peak (writing its largest field) per record of its segment.
PROCESS_BYTES = 200 * 1024**2
SEGMENT_BYTES_PER_RECORD = 16 * 1024
# An update merges segments of at most SMALL_SEGMENT_DOCS documents, MERGE_AT of a size tier at
# a time (merge_small_segments).
SMALL_SEGMENT_DOCS = 1_000
MERGE_AT = 8
# Memory Whoosh's stock writer (updates) may use for postings before spilling to disk.
WRITER_LIMIT_MB = 256
# Callback told how many more records were handed to the writer (drives the progress bar).
OnAdded = Callable[[int], None]
_REPORT_EVERY = 100


def choose_procs(
    record_count: int, requested: int | None = None, memory_budget: int | None = None
) -> int:
    """How many writer processes to use: `requested` when given, else by input size, CPUs and
    the memory budget (a second writer must fit a segment of MIN_SEGMENT_RECORDS)."""
    if requested is not None:
        return max(1, requested)
    if record_count < MULTIPROCESS_MIN_RECORDS:
        return 1
    procs = max(1, min(2, os.cpu_count() or 1))
    while procs > 1 and _records_per_writer(procs, memory_budget) < MIN_SEGMENT_RECORDS:
        procs -= 1
    return procs


def segment_records(procs: int, memory_budget: int | None = None) -> int:
    """Records per segment for `procs` writer processes (and the parent) to stay within
    `memory_budget` bytes, between MIN_SEGMENT_RECORDS and MAX_SEGMENT_RECORDS."""
    records = _records_per_writer(procs, memory_budget)
    return int(min(MAX_SEGMENT_RECORDS, max(MIN_SEGMENT_RECORDS, records)))


def _records_per_writer(procs: int, memory_budget: int | None) -> int:
    budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    writers = procs if procs > 1 else 0  # one process writes its segments itself
    per_writer = (budget - (writers + 1) * PROCESS_BYTES) // max(procs, 1)
    return int(per_writer // SEGMENT_BYTES_PER_RECORD)


def describe_writer(procs: int) -> str:
    return "single writer" if procs == 1 else f"{procs} writer processes"


def add_records(
    index: Index,
    records: Sequence[Record],
    procs: int = 1,
    on_added: OnAdded | None = None,
    on_commit: Callable[[], None] | None = None,
    vectors: Sequence[bytes] | None = None,
    segment_size: int | None = None,
) -> None:
    """Add `records` (with their int8 `vectors`, when given, in the same order) to a fresh
    `index` in segments of at most `segment_size` records, and commit; raise if the index
    misses any of them."""
    lock = index.lock("WRITELOCK")
    if not lock.acquire(False):
        raise LockError
    storage = index.storage
    try:
        procs = max(1, min(procs, len(records)))
        chunks = _Chunks(segment_size)
        if procs == 1:
            segments = _build_here(index, records, chunks, on_added, on_commit, vectors)
        else:
            segments = _build_in_workers(
                index, records, chunks, procs, on_added, on_commit, vectors
            )
        toc = TOC.read(storage, index.indexname, schema=index.schema)
        every_segment = toc.segments + [s for s in segments if s.doc_count_all()]
        TOC(toc.schema, every_segment, toc.generation + 1).write(storage, index.indexname)
        clean_files(storage, index.indexname, toc.generation + 1, every_segment)
    finally:
        # The per-document writers keep their column buffers in this shared temporary folder.
        storage.temp_storage(f"{index.indexname}.tmp").destroy()
        lock.release()
    with index.reader() as reader:
        indexed = reader.doc_count()
    # A worker that died would leave its part of the records out; a short index must fail the
    # build, not go live.
    if indexed != len(records):
        raise RuntimeError(f"the index holds {indexed} of {len(records)} records after commit")


def _new_segment(index: Index) -> W3Segment:
    return default_codec().new_segment(index.storage, index.indexname)


def _build_here(index, records, chunks, on_added, on_commit, vectors=None):
    segments = [_new_segment(index) for _ in chunks(0, len(records))]
    built = _build_segments(index, segments, records, chunks, 0, len(records), on_added, vectors)
    if on_commit:
        on_commit()
    return built


class _Chunks:
    """Cuts [start, stop) into ranges of at most `size` records, one segment each."""

    def __init__(self, size: int | None = None) -> None:
        self.size = max(1, MAX_SEGMENT_RECORDS if size is None else size)

    def __call__(self, start: int, stop: int) -> list[tuple[int, int]]:
        size = self.size
        return [(a, min(a + size, stop)) for a in range(start, stop, size)]


def _build_segments(index, segments, records, chunks, start, stop, on_added, vectors=None):
    built = []
    for segment, (a, b) in zip(segments, chunks(start, stop), strict=True):
        with _collector_paused():
            builder = SegmentBuilder(index.storage, index.schema, segment)
            share = None if vectors is None else vectors[a:b]
            _add_all(builder, records[a:b], on_added or (lambda count: None), share)
            built.append(builder.finish())
            del builder, share
        # What a segment left in reference cycles goes before the next one starts: with the
        # collector paused over every segment of a share, a writer grew by a segment's worth
        # each time (3 GB by the fifth 49,000-record segment of a million-record build).
        gc.collect()
        # A writer's memory is then that of its current segment, not the most of all of them.
        release_free_memory()
    return built


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a segment is built.

    A builder holds millions of objects (the records, their analysed terms, the postings of
    keyword fields) and makes no reference cycles, yet the collector's full passes traverse
    all of them ever more often as they accumulate, for nothing: a cost that grows with the
    segment. Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _add_all(
    builder: SegmentBuilder,
    records: Sequence[Record],
    report: OnAdded,
    vectors: Sequence[bytes] | None = None,
) -> None:
    add = builder.add
    pending = 0
    for i, record in enumerate(records):
        add(to_document(record, None if vectors is None else vectors[i]))
        pending += 1
        if pending == _REPORT_EVERY:
            report(pending)
            pending = 0
    if pending:
        report(pending)


def _build_in_workers(index, records, chunks, procs, on_added, on_commit, vectors=None):
    """Build the segments of each contiguous share of `records` in a forked worker."""
    context = multiprocessing.get_context("fork")
    share = -(-len(records) // procs)
    # Segments (and their random ids) are made here: forked workers share a random state.
    jobs = []
    try:
        for start in range(0, len(records), share):
            stop = min(start + share, len(records))
            segments = [_new_segment(index) for _ in chunks(start, stop)]
            receiver, sender = context.Pipe(duplex=False)
            worker = context.Process(
                target=_worker_main,
                args=(index, segments, records, chunks, start, stop, sender, os.getpid(), vectors),
                daemon=True,
            )
            worker.start()
            sender.close()
            jobs.append((worker, receiver))
        return _collect(jobs, len(records), on_added, on_commit)
    finally:
        for worker, receiver in jobs:
            if worker.is_alive():
                worker.kill()
            worker.join()
            receiver.close()


def _collect(jobs, total, on_added, on_commit):
    segments = {}
    added = 0
    waiting = {receiver: number for number, (_, receiver) in enumerate(jobs)}
    while waiting:
        for receiver in cast("list[Connection]", wait(list(waiting))):
            try:
                kind, payload = receiver.recv()
            except EOFError:
                raise RuntimeError("an index writer process died") from None
            if kind == "added":
                added += payload
                if on_added:
                    on_added(payload)
                if added == total and on_commit:
                    on_commit()
            elif kind == "done":
                segments[waiting.pop(receiver)] = payload
            else:
                raise RuntimeError(f"an index writer process failed:\n{payload}")
    return [segment for number in range(len(jobs)) for segment in segments[number]]


def _worker_main(
    index, segments, records, chunks, start, stop, sender: Connection, parent: int, vectors=None
) -> None:
    # A worker outliving a killed build would keep writing into a directory being removed.
    die_with_parent(parent)
    try:
        report = lambda count: sender.send(("added", count))  # noqa: E731
        sender.send(
            (
                "done",
                _build_segments(index, segments, records, chunks, start, stop, report, vectors),
            )
        )
    except BaseException:
        sender.send(("error", traceback.format_exc()))
        raise


def apply_changes(
    index: Index,
    upserts: Sequence[Record],
    deletes: Sequence[str] = (),
    on_added: OnAdded | None = None,
    on_commit: Callable[[], None] | None = None,
    vectors: Sequence[bytes] | None = None,
) -> None:
    """Delete `deletes` by id, then replace the records whose id is already indexed and add
    the others, in one commit (readers see all of it or none).

    Whoosh's writer marks the old documents deleted and merges small segments as it always
    does; the new documents go into a segment of their own written by our segment builder,
    which the same commit adds to the table of contents. Whoosh's `update_document` analyses
    and indexes one document at a time in Python, five to ten times slower.
    """
    # Whoosh's writer takes the index lock, then makes this folder: where that fails (a
    # read-only directory), the half-made writer would hold the lock until collected.
    index.storage.temp_storage(f"{index.indexname}.tmp")
    writer = index.writer(limitmb=WRITER_LIMIT_MB)
    added: list[W3Segment] = []
    try:
        with writer.searcher() as searcher:
            for record_id in {*deletes, *(record.id for record in upserts)}:
                for docnum in searcher.document_numbers(id=record_id):
                    writer.delete_document(docnum)
        if upserts:
            chunks = _Chunks()
            segments = [_new_segment(index) for _ in chunks(0, len(upserts))]
            added = _build_segments(
                index, segments, upserts, chunks, 0, len(upserts), on_added, vectors
            )
        if on_commit:
            on_commit()
        writer.commit(mergetype=lambda w, segments: [*merge_small_segments(w, segments), *added])
    except BaseException:
        _cancel(writer, index)
        raise
    finally:
        index.storage.temp_storage(f"{index.indexname}.tmp").destroy()


def merge_small_segments(writer: SegmentWriter, segments: list) -> list:
    """Merge small segments of like size into the writer's own; the segments kept as they are.

    Whoosh's MERGE_SMALL bounds the number of segments, not the work: with some twenty
    segments its Fibonacci rule merged every one of a 115,000-record index, in Python, for
    fifteen minutes while no write got through. Here segments fall in tiers by size (up to 10,
    100, 1,000 documents: SMALL_SEGMENT_DOCS), and once a tier holds MERGE_AT segments they
    become one of the next tier. A merge reads at most MERGE_AT segments of its tier (about
    3 s for the top one, once in thousands of writes; a few milliseconds for the bottom one,
    every few writes). Larger segments, each a batch of thousands, are left for a rebuild.
    """
    tiers: dict[int, list] = {}
    for segment in segments:
        docs = segment.doc_count_all()
        if docs <= SMALL_SEGMENT_DOCS:
            tiers.setdefault(max(1, math.ceil(math.log10(max(docs, 1)))), []).append(segment)
    full = [tier for tier, members in sorted(tiers.items()) if len(members) >= MERGE_AT]
    if not full:
        return segments
    merged = tiers[full[0]]
    for segment in merged:
        reader = SegmentReader(writer.storage, writer.schema, segment)
        try:
            writer.add_reader(reader)
        finally:
            reader.close()
    gone = {id(segment) for segment in merged}
    return [segment for segment in segments if id(segment) not in gone]


def _cancel(writer: SegmentWriter, index: Index) -> None:
    """Cancel a write and remove what it had written: `cancel()` leaves the files of its new
    segment in the live generation until a later commit cleans them. On a full disk `cancel()`
    itself fails (closing files flushes them); the files are removed all the same, or they
    would keep the disk full."""
    try:
        writer.cancel()
    except OSError:
        log.warning("cancelling a failed write failed too", exc_info=True)
    finally:
        toc = TOC.read(index.storage, index.indexname, schema=index.schema)
        clean_files(index.storage, index.indexname, toc.generation, toc.segments)
