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
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from whoosh.index import Index
from whoosh.searching import Searcher

from searchsvc.backends.shared.vectors import VECTORS_METADATA
from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.facet_table_file import facet_table_for
from searchsvc.backends.whoosh.accel.lexicon import Lexicon
from searchsvc.backends.whoosh.accel.lexicon_file import load_terms
from searchsvc.backends.whoosh.accel.vector_table import VectorTable
from searchsvc.backends.whoosh.integrity import METADATA
from searchsvc.backends.whoosh.ranking import weighting
from searchsvc.backends.whoosh.state_files import FACET_ARRAYS, LEXICONS
from searchsvc.backends.whoosh.store import (
    IndexDirectory,
    version_token,
)
from searchsvc.domain.errors import IndexUnavailable, SearchsvcError

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
    # Why this is not the live generation (it failed verification); None when it is.
    warning: str | None = None

    @property
    def version(self) -> str:
        # The same as stats.index_stats gives (generation and Whoosh TOC generation, digested).
        return version_token(self.generation, self.toc_generation)

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

    @property
    def vector_model(self) -> str | None:
        """The model the index's vectors were made with (build metadata); None: no vectors."""
        return self._vector_info.get("model")

    @property
    def vectors(self) -> VectorTable:
        """Every document's int8 vector, read from the index on first use."""
        size = int(self._vector_info.get("dimensions", 0))
        return self.shared("vectors", lambda searcher: VectorTable.read(searcher.reader(), size))

    @property
    def _vector_info(self) -> dict[str, Any]:
        def read(searcher: Searcher) -> dict[str, Any]:
            try:
                saved = json.loads((self.snapshot.path / METADATA).read_text())
            except (OSError, ValueError):
                return {}
            info = saved.get(VECTORS_METADATA)
            return info if isinstance(info, dict) else {}

        return self.shared("vector_info", read)

    def shared(self, name: str, build: Callable[[Searcher], T]) -> T:
        """Data derived from the snapshot, built once with this view's searcher."""
        return self.snapshot.shared(name, build, self.searcher)

    @property
    def version(self) -> str:
        return self.snapshot.version


class SearcherManager:
    """Hands out searchers of the newest good snapshot, looking for changes at most every 0.5 s.

    What is served is chosen by the directory (store.IndexDirectory.choose: the live generation
    once verified, else the previous one), again whenever the directory's state key changes
    (a rebuild, an update, a file of a state changing size or time).
    """

    def __init__(self, directory: IndexDirectory, refresh_interval: float = REFRESH_INTERVAL):
        self.directory = directory
        self.refresh_interval = refresh_interval
        self._snapshot: Snapshot | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()
        # The state key of the last choice, and its failure when nothing could be served.
        self._key: tuple[Any, ...] | None = None
        self._failure: IndexUnavailable | None = None

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
        except SearchsvcError:
            raise
        except Exception:
            # The engine failing on its own files may be damage that arrived since the last
            # look: look again now, so that found damage is a 503 (IndexUnavailable, raised
            # here) rather than a 500; nothing found, and the error stands.
            self._current(force=True)
            raise
        finally:
            snapshot.give_back(searcher)

    def version(self) -> str:
        return self._current().version

    def warning(self) -> str | None:
        """Why the snapshot served is not the live generation; None when it is."""
        return self._current().warning

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
            try:
                fresh = self._look_for_change(snapshot)
            except IndexUnavailable:
                # Nothing good to serve, and the snapshot held may be the one just found
                # damaged: drop it, so that no read within the interval is answered from it.
                if snapshot is not None:
                    snapshot.retire()
                self._snapshot = None
                raise
            if fresh is not snapshot:
                if snapshot is not None:
                    snapshot.retire()
                self._snapshot = fresh
            return fresh

    def _look_for_change(self, snapshot: Snapshot | None) -> Snapshot:
        # The key is taken before choosing: a change while choosing leaves it out of date, and
        # the next look chooses again.
        key = self.directory.state_key()  # raises IndexUnavailable when there is no index
        if key == self._key:
            if self._failure is not None:
                raise _again(self._failure)  # damaged, and nothing changed since
            if snapshot is not None:
                return snapshot
        try:
            served = self.directory.choose()
        except IndexUnavailable as exc:
            self._key, self._failure = key, exc
            raise
        self._key, self._failure = key, None
        same = (served.name, served.toc_generation, served.warning)
        if snapshot is not None and same == (
            snapshot.generation,
            snapshot.toc_generation,
            snapshot.warning,
        ):
            return snapshot  # the same state, verified again: keep its searchers and arrays
        path = self.directory.root / served.name
        return Snapshot(
            served.name, served.index, served.toc_generation, path, warning=served.warning
        )


def _again(error: IndexUnavailable) -> IndexUnavailable:
    # A fresh exception each time: raising one instance again would grow its traceback.
    fresh = IndexUnavailable(error.message, **error.details)
    fresh.local_message = error.local_message
    return fresh
