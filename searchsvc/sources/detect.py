"""Telling an input file's format from its content (gzip aware), not from its name."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

from searchsvc.domain.errors import SourceError
from searchsvc.sources.files import MAX_RECORD_BYTES, read_head
from searchsvc.sources.seedpages import ATTRIBUTION, SITE_LINE, is_source_year_line

# Enough for the longest record a reader accepts; a longer first line is judged by its keys.
PEEK_BYTES = MAX_RECORD_BYTES + 1
_LINES_TO_TRY = 20
_ARXIV_KEYS = ('"authors_parsed"', '"versions"', '"update_date"')
_RECORD_KEYS = ('"id"', '"title"')


def detect_format(path: Path) -> str:
    """ "seed", "arxiv" or "jsonl" for the file at `path`; SourceError when it is none of them."""
    text = _head_text(path)
    lines = [line.strip() for line in text.splitlines() if line.strip()][:_LINES_TO_TRY]
    if lines[0].startswith("{"):
        return _json_format(path, lines, text)
    if any(_looks_like_seed(line) for line in lines):
        return "seed"
    raise SourceError(
        f"cannot tell the format of {path}: neither a seed page nor JSON lines", path=str(path)
    )


def check_text_input(path: Path) -> None:
    """SourceError unless `path` is readable, non-empty UTF-8 text (what every format needs)."""
    _head_text(path)


def _head_text(path: Path) -> str:
    head = read_head(path, PEEK_BYTES)
    if b"\x00" in head:
        raise SourceError(f"{path} is binary, not a text or JSON-lines file", path=str(path))
    try:
        # Incremental, so a character cut in two by the end of the peek is not an error.
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        # A bad line further down is the reader's to skip; a bad first line means not text at all.
        first_line_end = head.find(b"\n", len(head) - len(head.lstrip()))
        if first_line_end == -1 or exc.start < first_line_end:
            message = f"{path} is not UTF-8 text (byte {exc.start + 1})"
            raise SourceError(message, path=str(path)) from exc
        text = head[: exc.start].decode("utf-8")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise SourceError(f"{path} is empty", path=str(path))
    return text


def _looks_like_seed(line: str) -> bool:
    return line == SITE_LINE or line.startswith(ATTRIBUTION) or is_source_year_line(line)


def _json_format(path: Path, lines: list[str], text: str) -> str:
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a malformed (or cut off) line: the reader reports it; look at the next
        if isinstance(data, dict):
            found = _json_object_format(data)
            if found:
                return found
    # The first line may be longer than the peek: fall back to the keys it names.
    if any(key in text for key in _ARXIV_KEYS):
        return "arxiv"
    if all(key in text for key in _RECORD_KEYS):
        return "jsonl"
    raise SourceError(
        f"cannot tell the format of {path}: JSON lines of neither arXiv metadata nor records",
        path=str(path),
    )


def _json_object_format(data: dict[str, Any]) -> str | None:
    if "authors_parsed" in data or isinstance(data.get("categories"), str):
        return "arxiv"
    if isinstance(data.get("versions"), list):
        return "arxiv"
    if "id" in data and "title" in data and isinstance(data.get("authors", []), list):
        return "jsonl"
    return None
