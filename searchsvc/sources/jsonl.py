"""JSON-lines input: the shared line loop, and the reader of `searchsvc export` output.

Decoding JSON and converting TeX (pylatexenc) is CPU work on every record and a large share of
a fast build; a large file is therefore converted by worker processes, batch by batch, with
the results (and the skip reports) handed back in line order.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any

from searchsvc.domain.records import Record
from searchsvc.sources.files import SkipHandler, Skipped, numbered_lines
from searchsvc.system.child_processes import die_with_parent

# Anything a converter raises on a well-formed JSON value of the wrong shape.
_CONVERSION_ERRORS = (ValueError, TypeError, KeyError, AttributeError)
# Files at least this large (on disk, maybe gzipped) are converted by worker processes.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
MAX_WORKERS = 4
_BATCH_LINES = 500
# Batches in flight per worker: enough to keep workers busy, few enough to bound memory.
_BATCHES_AHEAD = 4

ToRecord = Callable[[Any], Record]
# One converted line: (number, record, None) or (number, None, why it was skipped).
_Converted = tuple[int, Record | None, str | None]


def read_json_lines(
    path: Path, to_record: ToRecord, on_skip: SkipHandler, workers: int | None = None
) -> Iterator[Record]:
    """Records from a file of one JSON value per line; malformed lines go to `on_skip`.

    `workers` None converts in worker processes when the file is large (PARALLEL_MIN_BYTES).
    """
    if workers is None:
        workers = _workers_for(path)
    lines = numbered_lines(path)
    converted = _convert_in_parallel(lines, to_record, workers) if workers > 1 else None
    if converted is None:
        converted = (_convert_line(n, text, problem, to_record) for n, text, problem in lines)
    for number, record, problem in converted:
        if record is not None:
            yield record
        elif problem is not None:  # neither: a blank line
            on_skip(Skipped(str(path), number, problem))


def read_jsonl(path: Path, on_skip: SkipHandler) -> Iterator[Record]:
    """Records from a JSON-lines export: one `Record.to_dict()` object per line."""
    return read_json_lines(path, Record.from_dict, on_skip)


def _workers_for(path: Path) -> int:
    try:
        large = path.stat().st_size >= PARALLEL_MIN_BYTES
    except OSError:
        large = False
    return min(MAX_WORKERS, os.cpu_count() or 1) if large else 1


def _convert_line(number: int, text: str | None, problem: str | None, to_record: ToRecord):
    """One numbered line as a _Converted; blank lines give nothing (record and problem None)."""
    if text is None:
        return number, None, problem or "unreadable line"
    if not text or text.isspace():
        return number, None, None
    try:
        data = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError
        return number, None, f"invalid JSON: {exc}"
    except RecursionError:
        return number, None, "invalid JSON: nested too deeply"
    try:
        return number, to_record(data), None
    except _CONVERSION_ERRORS as exc:
        return number, None, str(exc) or type(exc).__name__


def _convert_batch(
    to_record: ToRecord, batch: list[tuple[int, str | None, str | None]]
) -> list[_Converted]:
    return [_convert_line(number, text, problem, to_record) for number, text, problem in batch]


def _convert_in_parallel(
    lines: Iterator[tuple[int, str | None, str | None]], to_record: ToRecord, workers: int
) -> Iterator[_Converted] | None:
    """Converted lines in order, from worker processes; None where processes cannot fork."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    return _parallel(lines, to_record, workers)


def _parallel(lines, to_record: ToRecord, workers: int) -> Iterator[_Converted]:
    # Forked workers start at once with the parent's modules (pylatexenc's tables) loaded.
    context = multiprocessing.get_context("fork")
    # Workers killed with the build: a killed build would otherwise leave them waiting forever.
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        pending: deque[Future[list[_Converted]]] = deque()
        try:
            while True:
                while len(pending) < workers * _BATCHES_AHEAD:
                    batch = list(islice(lines, _BATCH_LINES))
                    if not batch:
                        break
                    pending.append(pool.submit(_convert_batch, to_record, batch))
                if not pending:
                    return
                yield from pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
