"""Search engines behind one small interface, so every benchmark times them the same way.

An adapter builds its own index from a list of Records (cached under benchmarks/.cache/, keyed
by the corpus and the adapter's `index_version`), opens it, and answers a `Task`: top-k ids,
optionally the exact total and facet counts over all matches, optionally highlights.
Adding an engine: subclass `Engine`, register it in `ENGINES` below.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from searchsvc.domain.records import Record

FACETS = ("author", "year", "category")


@dataclass(frozen=True)
class Task:
    """One search as the benchmarks ask it, independent of any engine's API."""

    query: str
    limit: int = 10
    facets: tuple[str, ...] = ()
    facet_size: int = 10
    highlight: bool = False


# The three timed modes: (a) top-10 only, (b) + exact facet counts, (c) + highlights.
MODES: dict[str, Callable[[str], Task]] = {
    "a": lambda q: Task(q),
    "b": lambda q: Task(q, facets=FACETS),
    "c": lambda q: Task(q, facets=FACETS, highlight=True),
}
MODE_LABELS = {
    "a": "(a) top-10",
    "b": "(b) + facets",
    "c": "(c) + facets + highlights",
}


@dataclass
class Answer:
    """What an engine returned: ranked ids; total and facets (top-k, (value, count)) when asked."""

    ids: list[str]
    total: int | None = None
    facets: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    highlights: list[dict[str, str]] = field(default_factory=list)


class EngineUnavailable(Exception):
    """The engine cannot run here (missing package or code not landed yet)."""


class Engine:
    """Base adapter. Subclasses set `name`, implement build/open/search, may add exact counts."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(self, index_dir: Path, **options: object) -> None:
        self.index_dir = Path(index_dir)
        self.options = options

    # -- what subclasses implement ---------------------------------------------------------
    @classmethod
    def check_available(cls) -> None:
        """Raise EngineUnavailable with the reason when the engine cannot run."""

    @classmethod
    def index_version(cls, **options: object) -> str:
        """Changes whenever the on-disk index this adapter builds would change."""
        raise NotImplementedError

    def build(self, records: Sequence[Record]) -> None:
        """Write an index of `records` into `self.index_dir` (an empty directory)."""
        raise NotImplementedError

    def open(self) -> None:
        raise NotImplementedError

    def search(self, task: Task) -> Answer:
        raise NotImplementedError

    def exact_counts(self, query: str) -> tuple[int, dict[str, dict[str, int]]] | None:
        """Total and the count of every facet value over all matches (slow is fine), or None."""
        return None

    def close(self) -> None:
        """Release searchers and files."""

    # -- shared ----------------------------------------------------------------------------
    def build_info(self) -> dict:
        """What `prepare` recorded when it built this index (records, seconds)."""
        try:
            return json.loads((self.index_dir / BUILD_INFO).read_text())
        except (OSError, ValueError):
            return {}


BUILD_INFO = "bench-build.json"


def prepare(
    engine_class: type[Engine],
    records: Sequence[Record],
    corpus_key: str,
    cache_dir: Path,
    log: Callable[[str], None] = print,
    rebuild: bool = False,
    **options: object,
) -> Engine:
    """An opened engine over `records`, building its index into the cache when missing."""
    engine_class.check_available()
    version = engine_class.index_version(**options)
    index_dir = cache_dir / "indexes" / engine_class.name / f"{corpus_key}-{version}"
    if rebuild or not (index_dir / BUILD_INFO).exists():
        building = index_dir.with_name(f"{index_dir.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        log(f"building {engine_class.name} index of {len(records)} records ...")
        started = time.perf_counter()
        engine_class(building, **options).build(records)
        seconds = time.perf_counter() - started
        info = {"records": len(records), "seconds": round(seconds, 2)}
        (building / BUILD_INFO).write_text(json.dumps(info))
        shutil.rmtree(index_dir, ignore_errors=True)
        os.replace(building, index_dir)
        log(f"  {seconds:.1f} s ({len(records) / seconds:,.0f} records/s)")
    engine = engine_class(index_dir, **options)
    engine.open()
    return engine


def engine_classes() -> dict[str, type[Engine]]:
    """Every adapter by name; imported lazily so a missing optional package fails one engine."""
    from benchmarks.engines.fts5 import Fts5Engine
    from benchmarks.engines.plain_whoosh import PlainWhooshEngine
    from benchmarks.engines.searchsvc_core import SearchsvcEngine
    from benchmarks.engines.searchsvc_solr import SearchsvcSolrEngine
    from benchmarks.engines.tantivy_engine import TantivyEngine

    return {
        cls.name: cls
        for cls in (
            SearchsvcEngine,
            SearchsvcSolrEngine,
            PlainWhooshEngine,
            Fts5Engine,
            TantivyEngine,
        )
    }


def top_facet_values(counts: dict[str, int], size: int) -> list[tuple[str, int]]:
    """Top `size` values by count, ties by value: the order searchsvc promises."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size]
