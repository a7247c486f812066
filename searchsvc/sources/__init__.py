"""Input readers: seed author pages, Kaggle arXiv metadata and exported JSON lines, as Records."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from searchsvc.domain.errors import SourceError
from searchsvc.domain.records import Record
from searchsvc.sources.arxiv import read_arxiv
from searchsvc.sources.detect import check_text_input, detect_format
from searchsvc.sources.files import SkipHandler, Skipped
from searchsvc.sources.jsonl import read_jsonl
from searchsvc.sources.seedpages import read_seed_pages, render_seed_page

__all__ = [
    "FORMATS",
    "INPUT_SUFFIXES",
    "Skipped",
    "detect_format",
    "input_files",
    "read_records",
    "render_seed_page",
]

FORMATS = ("seed", "arxiv", "jsonl")
# The files a directory contributes; anything else in it (notes, indexes...) is left alone.
INPUT_SUFFIXES = (".txt", ".json", ".jsonl", ".gz")
_READERS: dict[str, Callable[[Path, SkipHandler], Iterator[Record]]] = {
    "seed": read_seed_pages,
    "arxiv": read_arxiv,
    "jsonl": read_jsonl,
}
log = logging.getLogger(__name__)


def read_records(
    paths: Iterable[str | Path],
    format: str | None = None,
    on_skip: Callable[[Skipped], None] | None = None,
) -> Iterator[Record]:
    """Records of every input file in `paths`, in file order, not deduplicated.

    Every file is found, opened and its format told before the first record is yielded, so a bad
    path fails the whole read up front (SourceError) rather than half-way through.
    """
    if format is not None and format not in FORMATS:
        raise SourceError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    files = input_files(paths)
    plan = [(path, _format_of(path, format)) for path in files]
    report = on_skip or _log_skip
    for path, file_format in plan:
        yield from _READERS[file_format](path, report)


def input_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files `paths` name: files as given, directories expanded to their input files by name."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.extend(_directory_files(path))
        elif path.is_file():
            files.append(path)
        elif path.exists():
            raise SourceError(f"{path} is not a regular file or directory", path=str(path))
        else:
            raise SourceError(f"{path} does not exist", path=str(path))
    return files


def _directory_files(directory: Path) -> list[Path]:
    try:
        entries = sorted(directory.iterdir(), key=lambda entry: entry.name)
    except OSError as exc:
        raise SourceError(
            f"cannot read directory {directory}: {exc.strerror or exc}", path=str(directory)
        ) from exc
    files = [
        entry
        for entry in entries
        if not entry.name.startswith(".")
        and entry.name.endswith(INPUT_SUFFIXES)
        and entry.is_file()
    ]
    if not files:
        raise SourceError(
            f"{directory} holds no input files ({', '.join('*' + s for s in INPUT_SUFFIXES)})",
            path=str(directory),
        )
    return files


def _format_of(path: Path, forced: str | None) -> str:
    if forced is None:
        return detect_format(path)
    check_text_input(path)  # a forced format still refuses empty and binary files
    return forced


def _log_skip(skipped: Skipped) -> None:
    log.warning("skipped %s line %d: %s", skipped.path, skipped.line, skipped.reason)
