"""Searchers reused between calls and refreshed when the index on disk changes.

A `Snapshot` is one committed state of the live index: a generation directory (swapped by a
rebuild through `CURRENT`) at one Whoosh TOC generation (bumped in place by an update). Every
searcher of a snapshot sees the same documents under the same numbers, so per-document arrays
(the `FacetTable`) are made once per snapshot and shared by all of its searchers; the facet
arrays are loaded from the file the build or update saved for that state
(accel/facet_table_file.py).

Whoosh searchers are not safe to share between threads (their open files keep a read position),
so each call checks one out of the snapshot's pool and gives it back afterwards.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from whoosh.index import Index
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.facet_table_file import facet_table_for
from searchsvc.backends.whoosh.accel.lexicon import Lexicon
from searchsvc.backends.whoosh.accel.lexicon_file import load_terms
from searchsvc.backends.whoosh.ranking import weighting
from searchsvc.backends.whoosh.store import FACET_ARRAYS, LEXICONS, IndexDirectory

# How often at most the index directory is looked at for a rebuild or an update (seconds).
REFRESH_INTERVAL = 0.5
# Idle searchers kept per snapshot; more are opened under load and closed when returned.
POOL_SIZE = 8

T = TypeVar("T")


@dataclass
class Snapshot:
    """One committed state of the live index, with its pool of searchers and facet arrays."""

    generation: str
    index: Index
    toc_generation: int
    path: Path  # the generation directory
    _idle: list[Searcher] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _build_lock: threading.Lock = field(default_factory=threading.Lock)
    _shared: dict[str, Any] = field(default_factory=dict)
    retired: bool = False

    @property
    def version(self) -> str:
        # The same form as stats.index_stats gives: live generation, then Whoosh TOC generation.
        return f"{self.generation}:{self.toc_generation}"

    def take(self) -> Searcher:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self.index.searcher(weighting=weighting())

    def give_back(self, searcher: Searcher) -> None:
        with self._lock:
            if not self.retired and len(self._idle) < POOL_SIZE:
                self._idle.append(searcher)
                return
        searcher.close()

    def shared(self, name: str, build: Callable[[Searcher], T], searcher: Searcher) -> T:
        """Data derived from this snapshot (e.g. facet arrays), built once on first use."""
        try:
            return self._shared[name]
        except KeyError:
            pass
        # A lock of its own: taking and giving back searchers goes on during a build.
        with self._build_lock:
            if name not in self._shared:
                self._shared[name] = build(searcher)
            return self._shared[name]

    def retire(self) -> None:
        """Close idle searchers; searchers still in use are closed when given back."""
        with self._lock:
            self.retired = True
            idle, self._idle = self._idle, []
        for searcher in idle:
            searcher.close()


@dataclass
class View:
    """What one call works with: a searcher of a snapshot and that snapshot's facet arrays."""

    snapshot: Snapshot
    searcher: Searcher

    @property
    def facets(self) -> FacetTable:
        # Saved by the build or update that made this state; computed when it is not.
        path = self.snapshot.path / FACET_ARRAYS
        return self.shared("facets", lambda searcher: facet_table_for(path, searcher.reader()))

    def lexicon(self, field: str) -> Lexicon:
        """The terms of a field in memory: saved by the build or update, else read on first use."""
        path = self.snapshot.path / LEXICONS

        def load(searcher: Searcher) -> Lexicon:
            saved = load_terms(path, searcher.reader(), field)
            return Lexicon.read(searcher.reader(), field) if saved is None else Lexicon(saved)

        return self.shared(f"lexicon:{field}", load)

    def shared(self, name: str, build: Callable[[Searcher], T]) -> T:
        """Data derived from the snapshot, built once with this view's searcher."""
        return self.snapshot.shared(name, build, self.searcher)

    @property
    def version(self) -> str:
        return self.snapshot.version


class SearcherManager:
    """Hands out searchers of the newest snapshot, looking for changes at most every 0.5 s."""

    def __init__(self, directory: IndexDirectory, refresh_interval: float = REFRESH_INTERVAL):
        self.directory = directory
        self.refresh_interval = refresh_interval
        self._snapshot: Snapshot | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def view(self) -> Iterator[View]:
        """A searcher of the current snapshot for the duration of one call."""
        snapshot = self._current()
        searcher = snapshot.take()
        if searcher.ixreader.generation() != snapshot.toc_generation:
            # An update committed between the last check and this searcher's opening: its
            # document numbers may differ from the snapshot's arrays, so move to a new snapshot.
            searcher.close()
            snapshot = self._current(force=True)
            searcher = snapshot.take()
        try:
            yield View(snapshot, searcher)
        finally:
            snapshot.give_back(searcher)

    def version(self) -> str:
        return self._current().version

    def refresh(self) -> None:
        """Look at the index directory now, not at the next interval."""
        self._current(force=True)

    def close(self) -> None:
        with self._lock:
            if self._snapshot is not None:
                self._snapshot.retire()
                self._snapshot.index.close()
            self._snapshot = None

    def _current(self, force: bool = False) -> Snapshot:
        with self._lock:
            now = time.monotonic()
            snapshot = self._snapshot
            if (
                snapshot is not None
                and not force
                and now - self._checked_at < self.refresh_interval
            ):
                return snapshot
            self._checked_at = now
            fresh = self._look_for_change(snapshot)
            if fresh is not snapshot:
                if snapshot is not None:
                    snapshot.retire()
                self._snapshot = fresh
            return fresh

    def _look_for_change(self, snapshot: Snapshot | None) -> Snapshot:
        generation = self.directory.live_name()
        if snapshot is not None and generation == snapshot.generation:
            latest = snapshot.index.latest_generation()
            if latest == snapshot.toc_generation:
                return snapshot
            return Snapshot(generation, snapshot.index, latest, snapshot.path)
        # `generation` was read before opening: if a swap happens in between, the name is the
        # older one and the next check reopens, never the other way round.
        index = self.directory.open()  # raises IndexUnavailable when there is none
        path = self.directory.root / (generation or "")
        return Snapshot(generation or "", index, index.latest_generation(), path)
