"""How records reach a Whoosh index: one writer for small inputs, worker processes for large ones.

On the 40,717 arXiv-2025 records on a 2-core machine, Whoosh's multi-process writer with two
workers that each write their own segment (`multisegment=True`) builds about twice as fast as one
writer (837 against 435 records/s, ../shared/notes/engine-measurements.md; our own figures come
from benchmarks/bench_indexing.py). Merging the workers' output into one segment instead
(`multisegment=False`) adds a serial merge in the parent after the parallel part, so the
segments stay apart. Small inputs keep the single writer: they finish quickly, in one segment.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable, Sequence

from whoosh.index import Index
from whoosh.multiproc import MpWriter, SubWriterTask
from whoosh.writing import SegmentWriter

from searchsvc.backends.whoosh.documents import to_document
from searchsvc.records import Record

# Below this many records a single writer finishes before worker processes would pay off.
MULTIPROCESS_MIN_RECORDS = 5_000
# Memory each writer (the parent and every worker) may use for postings before spilling to disk.
WRITER_LIMIT_MB = 256
# Callback told how many more records were handed to the writer (drives the progress bar).
OnAdded = Callable[[int], None]
_REPORT_EVERY = 100


def choose_procs(record_count: int, requested: int | None = None) -> int:
    """How many writer processes to use: `requested` when given, else by input size and CPUs."""
    if requested is not None:
        return max(1, requested)
    if record_count < MULTIPROCESS_MIN_RECORDS:
        return 1
    return max(1, min(2, os.cpu_count() or 1))


def describe_writer(procs: int) -> str:
    return "single writer" if procs == 1 else f"{procs} writer processes"


def add_records(
    index: Index,
    records: Sequence[Record],
    procs: int = 1,
    on_added: OnAdded | None = None,
    on_commit: Callable[[], None] | None = None,
) -> None:
    """Add `records` to a fresh `index` and commit; raise if the index misses any of them."""
    if procs > 1:
        writer: SegmentWriter = _ParallelWriter(
            index, procs=procs, multisegment=True, limitmb=WRITER_LIMIT_MB
        )
    else:
        writer = index.writer(limitmb=WRITER_LIMIT_MB)
    _feed(writer, records, writer.add_document, on_added, on_commit)
    with index.reader() as reader:
        indexed = reader.doc_count()
    # Whoosh's multi-process commit drops a worker's segment silently when the worker died
    # (it waits one second for each result); a short index must fail the build, not go live.
    if indexed != len(records):
        raise RuntimeError(f"the index holds {indexed} of {len(records)} records after commit")


def upsert_records(
    index: Index,
    records: Sequence[Record],
    on_added: OnAdded | None = None,
    on_commit: Callable[[], None] | None = None,
) -> None:
    """Replace the records whose id is already indexed, add the others, and commit."""
    writer = index.writer(limitmb=WRITER_LIMIT_MB)
    _feed(writer, records, writer.update_document, on_added, on_commit)


def _feed(
    writer: SegmentWriter,
    records: Sequence[Record],
    write: Callable[..., None],
    on_added: OnAdded | None,
    on_commit: Callable[[], None] | None,
) -> None:
    try:
        pending = 0
        for record in records:
            write(**to_document(record))
            pending += 1
            if on_added and pending == _REPORT_EVERY:
                on_added(pending)
                pending = 0
        if on_added and pending:
            on_added(pending)
        if on_commit:
            on_commit()
        writer.commit()
    except BaseException:
        writer.cancel()
        raise


class _WorkerTask(SubWriterTask):
    """Whoosh's worker process, made to die with its parent.

    A worker blocks on its job queue forever once the parent is gone, and it inherited the
    parent's build lock; without this, a build killed with SIGKILL would leave workers behind
    that keep the index directory locked.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.parent_pid = os.getpid()

    def run(self) -> None:
        _die_with_parent()
        if os.getppid() != self.parent_pid:  # the parent died before the line above
            os._exit(1)
        super().run()


class _ParallelWriter(MpWriter):
    """Whoosh's multi-process writer with workers that die with the parent or on cancel."""

    def _new_task(self) -> SubWriterTask:
        task = _WorkerTask(
            self.storage,
            self.indexname,
            self.jobqueue,
            self.resultqueue,
            self.subargs,
            self.multisegment,
        )
        self.tasks.append(task)
        task.start()
        return task

    def cancel(self) -> None:
        # MpWriter.cancel only flags its own copies of the task objects; the worker processes
        # never see that flag and would wait on the job queue until the parent exits.
        try:
            for task in self.tasks:
                task.terminate()
                task.join()
        finally:
            SegmentWriter.cancel(self)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent exits (elsewhere: nothing to do)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
