"""Build or update an index from source files: read, deduplicate, write, swap in.

`build_index` writes a new generation beside the live one and swaps it in only once it is
complete; `update_index` upserts records into the live index by id. The CLI only calls these.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from searchsvc.backends.whoosh.build.writer import (
    add_records,
    choose_procs,
    describe_writer,
    upsert_records,
)
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.errors import SourceError
from searchsvc.records import Deduplicator, Record
from searchsvc.sources import Skipped, read_records

# Skipped records kept for the report; the count covers all of them.
MAX_SKIPPED_KEPT = 100

Source = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class BuildSummary:
    """What a build or update did: counts, the first skipped records, and how fast it went."""

    read: int
    indexed: int
    merged: int
    skipped_count: int
    seconds: float
    index_dir: str
    # The first MAX_SKIPPED_KEPT skipped records (path, line, reason).
    skipped: tuple[Skipped, ...] = ()
    writer: str = "single writer"
    # Of `seconds`, the time spent reading and deduplicating the sources (the rest is writing).
    read_seconds: float = 0.0
    # Update only: how many indexed records replaced one with the same id.
    replaced: int = 0

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
        }


@dataclass
class _Collected:
    """Records read from the sources, deduplicated, with what was skipped on the way."""

    records: list[Record]
    read: int
    merged: int
    skipped: list[Skipped] = field(default_factory=list)
    skipped_count: int = 0
    # perf_counter() when reading was done.
    read_until: float = field(default_factory=time.perf_counter)


def build_index(
    sources: Sequence[Source],
    index_dir: Source,
    format: str | None = None,
    progress: bool | None = None,
    procs: int | None = None,
) -> BuildSummary:
    """Build a fresh index of `sources` in `index_dir` and swap it in; the old one stays on error.

    `progress` None shows a progress bar only when stderr is a terminal; `procs` None picks the
    writer by input size (see backends/whoosh/build/writer.py).
    """
    directory = IndexDirectory(index_dir)
    started = time.perf_counter()
    _fail_if_locked(directory)
    collected = _read_sources(sources, format, _show_progress(progress))
    return _build(directory, collected, started, progress, procs, _source_metadata(sources, format))


def build_index_from_records(
    records: Iterable[Record],
    index_dir: Source,
    progress: bool | None = None,
    procs: int | None = None,
) -> BuildSummary:
    """`build_index` for records already in memory (or any iterable that yields them)."""
    directory = IndexDirectory(index_dir)
    started = time.perf_counter()
    _fail_if_locked(directory)
    collected = _deduplicate(records)
    return _build(directory, collected, started, progress, procs, {"sources": []})


def update_index(
    sources: Sequence[Source],
    index_dir: Source,
    format: str | None = None,
    progress: bool | None = None,
) -> BuildSummary:
    """Upsert the records of `sources` into the live index by id (replace or add)."""
    directory = IndexDirectory(index_dir)
    started = time.perf_counter()
    directory.live_path()  # IndexUnavailable before reading anything when there is no index
    _fail_if_locked(directory)
    collected = _read_sources(sources, format, _show_progress(progress))
    return _update(directory, collected, started, progress, _source_metadata(sources, format))


def update_index_from_records(
    records: Iterable[Record], index_dir: Source, progress: bool | None = None
) -> BuildSummary:
    """`update_index` for records already in memory."""
    directory = IndexDirectory(index_dir)
    started = time.perf_counter()
    directory.live_path()
    _fail_if_locked(directory)
    collected = _deduplicate(records)
    return _update(directory, collected, started, progress, {"sources": []})


# -- reading ---------------------------------------------------------------------------------
def _read_sources(sources: Sequence[Source], format: str | None, show: bool) -> _Collected:
    if not sources:
        raise SourceError("no source given")
    skipped: list[Skipped] = []
    skipped_count = 0

    def on_skip(item: Skipped) -> None:
        nonlocal skipped_count
        skipped_count += 1
        if len(skipped) < MAX_SKIPPED_KEPT:
            skipped.append(item)

    records = read_records([Path(s) for s in sources], format=format, on_skip=on_skip)
    with tqdm(desc="reading", unit=" records", disable=not show, file=sys.stderr) as bar:
        collected = _deduplicate(_counting(records, bar.update))
    collected.skipped = skipped
    collected.skipped_count = skipped_count
    return collected


def _counting(records: Iterable[Record], advance: Callable[[int], Any]) -> Iterator[Record]:
    for record in records:
        advance(1)
        yield record


def _deduplicate(records: Iterable[Record]) -> _Collected:
    dedupe = Deduplicator()
    read = 0
    for record in records:
        dedupe.add(record)
        read += 1
    return _Collected(list(dedupe.records()), read, dedupe.merged)


# -- writing ---------------------------------------------------------------------------------
def _build(
    directory: IndexDirectory,
    collected: _Collected,
    started: float,
    progress: bool | None,
    procs: int | None,
    metadata: dict[str, Any],
) -> BuildSummary:
    _fail_if_empty(collected)
    procs = choose_procs(len(collected.records), procs)
    metadata["writer"] = describe_writer(procs)
    with directory.build(metadata) as index, _writing_bar(collected, progress) as bar:
        add_records(index, collected.records, procs, bar.update, _announce_commit(bar))
        summary = _summary(directory, collected, started, describe_writer(procs))
        metadata["counts"] = summary.to_dict()  # saved at the swap, so timed up to the commit
        metadata["documents"] = len(collected.records)
    # The time the caller waited: the index's saved state files and the swap included.
    return replace(summary, seconds=time.perf_counter() - started)


def _update(
    directory: IndexDirectory,
    collected: _Collected,
    started: float,
    progress: bool | None,
    metadata: dict[str, Any],
) -> BuildSummary:
    _fail_if_empty(collected)
    last_update: dict[str, Any] = dict(metadata)
    with directory.update({"last_update": last_update}) as index:
        with index.searcher() as searcher:
            replaced = sum(
                1 for r in collected.records if searcher.document_number(id=r.id) is not None
            )
        with _writing_bar(collected, progress) as bar:
            upsert_records(index, collected.records, bar.update, _announce_commit(bar))
        summary = _summary(directory, collected, started, describe_writer(1), replaced)
        last_update["counts"] = summary.to_dict()  # saved at the end, so timed up to the commit
    return replace(summary, seconds=time.perf_counter() - started)


def _summary(
    directory: IndexDirectory,
    collected: _Collected,
    started: float,
    writer: str,
    replaced: int = 0,
) -> BuildSummary:
    return BuildSummary(
        read=collected.read,
        indexed=len(collected.records),
        merged=collected.merged,
        skipped_count=collected.skipped_count,
        seconds=time.perf_counter() - started,
        index_dir=str(directory.root),
        skipped=tuple(collected.skipped),
        writer=writer,
        read_seconds=collected.read_until - started,
        replaced=replaced,
    )


def _fail_if_empty(collected: _Collected) -> None:
    # Never swap in an empty index: an empty result is almost always a wrong path or format.
    if not collected.records:
        raise SourceError(
            f"no records to index ({collected.read} read, {collected.skipped_count} skipped)"
        )


def _fail_if_locked(directory: IndexDirectory) -> None:
    # build()/update() take the lock for real; probing it first fails a second build at once
    # instead of after it has read every source. (No directory yet: nobody can hold its lock,
    # and a build that then fails on its sources leaves no empty directory behind.)
    if directory.root.exists():
        with directory.lock():
            pass


def _source_metadata(sources: Sequence[Source], format: str | None) -> dict[str, Any]:
    return {"sources": [str(s) for s in sources], "format": format}


# -- progress --------------------------------------------------------------------------------
def _show_progress(progress: bool | None) -> bool:
    # A bar on a terminal; in logs and CI it would only add noise (the summary line is enough).
    return sys.stderr.isatty() if progress is None else progress


@contextmanager
def _writing_bar(collected: _Collected, progress: bool | None) -> Iterator[tqdm]:
    with tqdm(
        total=len(collected.records),
        desc="indexing",
        unit=" records",
        disable=not _show_progress(progress),
        file=sys.stderr,
    ) as bar:
        yield bar


def _announce_commit(bar: tqdm) -> Callable[[], None]:
    # The commit (merging postings, writing segments) can take a third of the build.
    return lambda: bar.set_description("committing")
