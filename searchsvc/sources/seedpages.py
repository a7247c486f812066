"""Reader and writer of seed author pages: an author header, then `<source><year>` records.

A page looks like this (blank lines between all lines; CRLF, a BOM and stray spaces tolerated):

    arXiv subjects
    Shivaram Venkataraman
    Publications and source records attributed to Shivaram Venkataraman.
    At least 55 records · Page 3Linked to original sources
    arXiv2023
    BagPipe: Accelerating Deep Recommendation Model Training
    Deep learning based recommendation models ... (one or more paragraphs, or none)
    cs.DC↗                       (or "cs.DC cs.LG↗", "cs.DC↗ cs.LG↗"; may be missing)

Several pages may follow each other in one file; the page's author becomes each record's author.

What the format cannot represent (the writer's round trip holds only outside these): a year
outside 1000..2999 or none; more than one author, or other authors than the page's; a url, doi,
journal ref or comments; an id other than `title_record_id(source, title, year)`; a title that is
empty or ends with "↗"; abstract paragraphs that look like a `<source><year>` line (one word ending
in four digits), end with "↗", or start a page header; a category containing "↗" or a space; line
breaks inside any value (they read back as spaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchsvc.domain.records import MAX_YEAR, MIN_YEAR, Record, title_record_id
from searchsvc.domain.texts import normalise_space, tex_to_text
from searchsvc.sources.files import (
    MAX_RECORD_BYTES,
    RECORD_TOO_LARGE,
    SkipHandler,
    Skipped,
    numbered_lines,
)

SITE_LINE = "arXiv subjects"
ATTRIBUTION = "Publications and source records attributed to "
CATEGORY_MARK = "↗"
# `arXiv2023`, `DBLP2021`, `ACM2020`: a source name without spaces or digits, then the year.
SOURCE_YEAR = re.compile(r"([A-Za-z][A-Za-z.&-]{0,40})(\d{4})")
PAGE_COUNT = re.compile(r"At least \d+ records?\b")
_CATEGORY_SPLIT = re.compile(r"[\s↗]+")


def source_and_year(line: str) -> tuple[str, int] | None:
    """("arXiv", 2023) for a line that starts a record, such as `arXiv2023`; else None."""
    match = SOURCE_YEAR.fullmatch(line)
    if not match or not MIN_YEAR <= int(match.group(2)) <= MAX_YEAR:
        return None
    return match.group(1), int(match.group(2))


def is_source_year_line(line: str) -> bool:
    return source_and_year(line) is not None


def is_category_line(line: str) -> bool:
    return line.endswith(CATEGORY_MARK)


@dataclass
class _PendingRecord:
    """The lines of one record as they are read, before they become a Record."""

    line: int
    source: str
    year: int
    author: str
    lines: list[str] = field(default_factory=list)
    categories: tuple[str, ...] | None = None
    size: int = 0
    problem: str | None = None  # why the record cannot be read, once a line of it is unusable

    def add(self, text: str) -> None:
        if self.problem or self.categories is not None:
            return  # page furniture after the category line belongs to no record
        self.size += len(text)
        if self.size > MAX_RECORD_BYTES:
            self.problem, self.lines = RECORD_TOO_LARGE, []
        elif is_category_line(text):
            self.categories = tuple(c for c in _CATEGORY_SPLIT.split(text) if c)
        else:
            self.lines.append(text)


def read_seed_pages(path: Path, on_skip: SkipHandler) -> Iterator[Record]:
    """Records from a file of one or more seed author pages."""
    author = ""
    header: list[str] = []  # lines seen outside any record, to find an author without attribution
    pending: _PendingRecord | None = None
    for number, text, problem in numbered_lines(path):
        if text is None:
            if pending is not None and pending.categories is None:
                pending.problem = pending.problem or problem or RECORD_TOO_LARGE
            else:  # outside any record: report the line itself
                on_skip(Skipped(str(path), number, problem or RECORD_TOO_LARGE))
            continue
        line = text.strip().lstrip("\ufeff").strip()
        if not line:
            continue
        if line.startswith(ATTRIBUTION):
            # A new page starts: its site and author lines may have been read into the last record.
            new_author = normalise_space(line.removeprefix(ATTRIBUTION).removesuffix("."))
            if pending is not None:
                _drop_header_lines(pending, new_author)
                yield from _finish(pending, path, on_skip)
                pending = None
            author, header = new_author, []
        elif starts_record := source_and_year(line):
            if pending is not None:
                yield from _finish(pending, path, on_skip)
            elif not author:
                author = _author_from_header(header)
            pending = _PendingRecord(number, *starts_record, author)
        elif pending is not None:
            pending.add(line)
        else:
            header.append(line)
    if pending is not None:
        yield from _finish(pending, path, on_skip)


def _author_from_header(header: list[str]) -> str:
    # Without the attribution sentence, the author is the header line that is neither the site
    # line nor the record count.
    for line in header:
        if line != SITE_LINE and not PAGE_COUNT.match(line):
            return normalise_space(line)
    return ""


def _drop_header_lines(pending: _PendingRecord, author: str) -> None:
    if pending.lines and normalise_space(pending.lines[-1]) == author:
        pending.lines.pop()
        if pending.lines and pending.lines[-1] == SITE_LINE:
            pending.lines.pop()


def _finish(pending: _PendingRecord, path: Path, on_skip: SkipHandler) -> Iterator[Record]:
    if pending.problem:
        on_skip(Skipped(str(path), pending.line, pending.problem))
        return
    title = tex_to_text(pending.lines[0]) if pending.lines else ""
    if not title:
        on_skip(Skipped(str(path), pending.line, "record has no title"))
        return
    yield Record(
        id=title_record_id(pending.source, title, pending.year),
        title=title,
        abstract=tex_to_text(" ".join(pending.lines[1:])),
        authors=(pending.author,) if pending.author else (),
        year=pending.year,
        categories=pending.categories or (),
        source=pending.source,
        url=None,
    )


def render_seed_page(author: str, records: Sequence[Record], page: int = 1) -> str:
    """The seed-page text of `records` under `author`; `read_seed_pages` reads it back."""
    lines = [
        SITE_LINE,
        author,
        f"{ATTRIBUTION}{author}.",
        f"At least {len(records)} records · Page {page}Linked to original sources",
    ]
    for record in records:
        if record.year is None:
            raise ValueError(f"record {record.id} has no year; the seed format needs one")
        lines.append(f"{record.source}{record.year}")
        lines.append(record.title)
        if record.abstract:
            lines.append(record.abstract)
        if record.categories:
            lines.append(" ".join(record.categories) + CATEGORY_MARK)
    return "\n\n".join(lines) + "\n"
