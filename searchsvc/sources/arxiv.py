"""Reader of arXiv metadata in the Kaggle `arxiv-metadata-oai-snapshot` JSON-lines format."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchsvc.domain.records import MAX_YEAR, MIN_YEAR, Record
from searchsvc.domain.texts import normalise_space, tex_to_text
from searchsvc.sources.files import SkipHandler
from searchsvc.sources.jsonl import read_json_lines

SOURCE = "arXiv"
ABS_URL = "https://arxiv.org/abs/{}"
# RFC 2822 dates ("Mon, 2 Apr 2007 19:18:42 GMT") and ISO dates ("2008-11-26") both carry the year
# as their only run of four digits; a regex is much cheaper than email.utils per record.
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
# The `authors` string separates names by commas and a final "and"; parentheses hold affiliations.
_AUTHOR_SEPARATOR = re.compile(r",|\band\b")
_AFFILIATION = re.compile(r"\([^()]*\)")


def read_arxiv(path: Path, on_skip: SkipHandler) -> Iterator[Record]:
    """Records from a Kaggle arXiv metadata file (one JSON object per line, plain or gzipped)."""
    return read_json_lines(path, record_from_arxiv, on_skip)


def record_from_arxiv(data: Any) -> Record:
    """One Kaggle arXiv metadata object as a Record; ValueError when it cannot be one."""
    if not isinstance(data, dict):
        raise ValueError("an arXiv record must be a JSON object")
    arxiv_id = data.get("id")
    if not isinstance(arxiv_id, str) or not arxiv_id.strip():
        raise ValueError("arXiv record has no 'id'")
    arxiv_id = arxiv_id.strip()
    categories = _string(data, "categories")
    return Record(
        id=arxiv_id,
        title=tex_to_text(_string(data, "title")),
        abstract=tex_to_text(_string(data, "abstract")),
        authors=_authors(data),
        year=_year(data),
        categories=tuple(categories.split()),
        source=SOURCE,
        url=ABS_URL.format(arxiv_id),
        doi=normalise_space(_string(data, "doi")) or None,
        journal_ref=normalise_space(_string(data, "journal-ref")) or None,
        comments=normalise_space(_string(data, "comments")) or None,
    )


def _string(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"arXiv field {name!r} must be a string")
    return value


def _authors(data: dict[str, Any]) -> tuple[str, ...]:
    parsed = data.get("authors_parsed")
    if parsed is None:
        return _authors_from_string(_string(data, "authors"))
    if not isinstance(parsed, list):
        raise ValueError("arXiv field 'authors_parsed' must be a list")
    names = []
    for parts in parsed:
        if not isinstance(parts, list) or not all(isinstance(part, str) for part in parts):
            raise ValueError("arXiv field 'authors_parsed' must hold lists of strings")
        # [last, first, suffix, affiliation...]: the display name is "First Last Suffix".
        last, first, suffix = [*parts, "", "", ""][:3]
        name = tex_to_text(f"{first} {last} {suffix}")
        if name:
            names.append(name)
    return tuple(names)


def _authors_from_string(authors: str) -> tuple[str, ...]:
    text = tex_to_text(authors)
    # Nested affiliations "((1) Univ)" need two passes to come off.
    for _ in range(2):
        text = _AFFILIATION.sub(" ", text)
    return tuple(name for name in map(normalise_space, _AUTHOR_SEPARATOR.split(text)) if name)


def _year(data: dict[str, Any]) -> int | None:
    versions = data.get("versions")
    if versions is not None and not isinstance(versions, list):
        raise ValueError("arXiv field 'versions' must be a list")
    first = _first_version(versions or [])
    year = _year_of(first.get("created")) if first else None
    if year is None:
        year = _year_of(data.get("update_date"))
    return year


def _first_version(versions: list[Any]) -> dict[str, Any] | None:
    entries = [entry for entry in versions if isinstance(entry, dict)]
    for entry in entries:
        if entry.get("version") == "v1":
            return entry
    return entries[0] if entries else None


def _year_of(date: Any) -> int | None:
    # An unparseable or absurd date loses the year, not the whole paper.
    if not isinstance(date, str):
        return None
    match = _YEAR.search(date)
    if not match:
        return None
    year = int(match.group(1))
    return year if MIN_YEAR <= year <= MAX_YEAR else None
