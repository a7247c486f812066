"""Progress bars of builds and updates on a terminal (tqdm on stderr): records read, then
records written, embedded and committed as the engine reports them (backends.Progress)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm


def show_progress(progress: bool | None) -> bool:
    """Whether to draw bars: as asked, else on a terminal only."""
    # A bar on a terminal; in logs and CI it would only add noise (the summary line is enough).
    return sys.stderr.isatty() if progress is None else progress


@contextmanager
def reading_bar(progress: bool | None) -> Iterator[tqdm]:
    """The bar of records read from the sources (no total: it is not known beforehand)."""
    with tqdm(
        desc="reading", unit=" records", disable=not show_progress(progress), file=sys.stderr
    ) as bar:
        yield bar


@contextmanager
def writing_bar(total: int, progress: bool | None) -> Iterator[tqdm]:
    """The bar of `total` records handed to the engine (BarProgress moves it)."""
    with tqdm(
        total=total,
        desc="indexing",
        unit=" records",
        disable=not show_progress(progress),
        file=sys.stderr,
    ) as bar:
        yield bar


class BarProgress:
    """The engine's progress on the bar: records written, then its commit (merging postings
    and writing segments is a long stage of its own)."""

    def __init__(self, bar: tqdm) -> None:
        self.bar = bar

    def advance(self, count: int) -> None:
        self.bar.update(count)

    def stage(self, name: str) -> None:
        # Embedding and indexing each go through every record: a bar of its own for each.
        if name in ("embedding", "indexing"):
            self.bar.reset(total=self.bar.total)
        self.bar.set_description("committing" if name == "commit" else name)
