"""JSON-lines input: the shared line loop, and the reader of `searchsvc export` output."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from searchsvc.records import Record
from searchsvc.sources.files import SkipHandler, Skipped, numbered_lines

# Anything a converter raises on a well-formed JSON value of the wrong shape.
_CONVERSION_ERRORS = (ValueError, TypeError, KeyError, AttributeError)


def read_json_lines(
    path: Path, to_record: Callable[[Any], Record], on_skip: SkipHandler
) -> Iterator[Record]:
    """Records from a file of one JSON value per line; malformed lines go to `on_skip`."""
    loads = json.loads
    for number, text, problem in numbered_lines(path):
        if text is None:
            on_skip(Skipped(str(path), number, problem or "unreadable line"))
            continue
        if not text or text.isspace():
            continue
        try:
            data = loads(text)
        except ValueError as exc:  # json.JSONDecodeError
            on_skip(Skipped(str(path), number, f"invalid JSON: {exc}"))
            continue
        except RecursionError:
            on_skip(Skipped(str(path), number, "invalid JSON: nested too deeply"))
            continue
        try:
            record = to_record(data)
        except _CONVERSION_ERRORS as exc:
            on_skip(Skipped(str(path), number, str(exc) or type(exc).__name__))
            continue
        yield record


def read_jsonl(path: Path, on_skip: SkipHandler) -> Iterator[Record]:
    """Records from a JSON-lines export: one `Record.to_dict()` object per line."""
    return read_json_lines(path, Record.from_dict, on_skip)
