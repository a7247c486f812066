"""Record, the publication record every layer speaks, with its identity and merge rules."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from searchsvc.domain.texts import normalise_space, title_key

# Fields a Record is made of, in display order; `from_dict` accepts exactly these.
RECORD_FIELDS = (
    "id",
    "title",
    "abstract",
    "authors",
    "year",
    "categories",
    "source",
    "url",
    "doi",
    "journal_ref",
    "comments",
)
MIN_YEAR, MAX_YEAR = 1000, 2999
# An id is an identity that travels in URLs, headers, file lines and log lines: long enough for
# any DOI or URL, short enough to stay a key.
MAX_ID_LENGTH = 512
# Characters an id may not hold (Unicode categories): controls (CR, LF, tab, NUL, DEL, C1),
# invisible format characters (zero-width, bidi overrides, BOM), lone surrogates (no UTF-8 for
# them), line and paragraph separators. Such an id could be indexed but not fetched by URL, or
# would look identical to another. Spaces other than U+0020 are refused for the latter reason.
_NOT_IN_IDS = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
_CHARACTER_NAMES = {"\n": "line feed", "\r": "carriage return", "\t": "tab", "\x00": "NUL"}
_ID_SHOWN = 40  # characters of a bad id quoted in its error
# Ids an engine keeps for documents of its own beside the records (the Solr backend's meta
# document: the version token and build metadata). A record with one would be overwritten by
# the engine's next commit, so the id rule refuses them.
META_DOCUMENT_ID = "__searchsvc_meta__"
RESERVED_IDS = frozenset({META_DOCUMENT_ID})
ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}(v\d+)?|[a-z][a-z.-]*(\.[A-Z]{2})?/\d{7}(v\d+)?")
ARXIV_VERSION = re.compile(r"v\d+$")


@dataclass(frozen=True, slots=True)
class Record:
    """One publication; `authors` and `categories` are ordered, the first category is primary."""

    id: str
    title: str
    abstract: str = ""
    authors: tuple[str, ...] = ()
    year: int | None = None
    categories: tuple[str, ...] = ()
    source: str = ""
    url: str | None = None
    doi: str | None = None
    journal_ref: str | None = None
    comments: str | None = None

    def __post_init__(self) -> None:
        problem = id_problem(self.id)
        if problem:
            raise ValueError(problem)
        if not isinstance(self.title, str) or not self.title.strip():
            raise ValueError("record title must be a non-empty string")
        if self.year is not None and (
            isinstance(self.year, bool)
            or not isinstance(self.year, int)
            or not MIN_YEAR <= self.year <= MAX_YEAR
        ):
            raise ValueError(f"record year must be an integer in {MIN_YEAR}..{MAX_YEAR}")
        # Lists arrive from JSON; keep the frozen type honest.
        object.__setattr__(self, "authors", _clean_values(self.authors, "authors"))
        object.__setattr__(self, "categories", _clean_values(self.categories, "categories"))

    @property
    def primary_category(self) -> str | None:
        return self.categories[0] if self.categories else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (lists, not tuples); the format `searchsvc export` writes."""
        # Field by field: dataclasses.asdict deep-copies every value, costly on a hot path.
        data = {name: getattr(self, name) for name in RECORD_FIELDS}
        data["authors"] = list(self.authors)
        data["categories"] = list(self.categories)
        return data

    @classmethod
    def from_index(cls, data: dict[str, Any]) -> Record:
        """`from_dict` for a record read back from an index, its id kept as stored: an index
        built before the id rule (`id_problem`) may hold an id the rule now refuses, and such a
        record must still be shown, exported and deleted rather than fail every search."""
        stored_id = data.get("id")
        if not isinstance(stored_id, str) or not stored_id:
            raise ValueError("record field 'id' must be a non-empty string")
        record = cls.from_dict({**data, "id": "stored"})
        object.__setattr__(record, "id", stored_id)
        return record

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """Inverse of `to_dict`; raises ValueError on unknown fields or wrong types."""
        if not isinstance(data, dict):
            raise ValueError("a record must be a JSON object")
        unknown = set(data) - set(RECORD_FIELDS)
        if unknown:
            raise ValueError(f"unknown record fields: {', '.join(sorted(unknown))}")
        for name in ("title", "abstract", "source", "url", "doi", "journal_ref", "comments"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"record field {name!r} must be a string")
        for name in ("authors", "categories"):
            value = data.get(name, ())
            if not isinstance(value, list | tuple):
                raise ValueError(f"record field {name!r} must be a list of strings")
        record_id = data.get("id")
        if not isinstance(record_id, str):
            raise ValueError("record field 'id' must be a string")
        return cls(
            id=record_id,
            title=data.get("title") or "",
            abstract=data.get("abstract") or "",
            authors=tuple(data.get("authors") or ()),
            year=data.get("year"),
            categories=tuple(data.get("categories") or ()),
            source=data.get("source") or "",
            url=data.get("url"),
            doi=data.get("doi"),
            journal_ref=data.get("journal_ref"),
            comments=data.get("comments"),
        )


def id_problem(value: object) -> str | None:
    """Why `value` cannot be a record id, or None when it can.

    The one id rule: every record has it checked when made (source readers, the write API, the
    Python API). A non-empty string of at most MAX_ID_LENGTH printable characters, not starting
    or ending with a space, not one of RESERVED_IDS; `/`, `:` and any other visible character are
    fine (`hep-th/9901001`).
    """
    if not isinstance(value, str) or not value.strip():
        return "record id must be a non-empty string"
    if len(value) > MAX_ID_LENGTH:
        return f"record id is {len(value)} characters long: at most {MAX_ID_LENGTH} are allowed"
    if not value.isprintable():  # nearly every id is: one C call, then no loop
        for position, character in enumerate(value, start=1):
            # Unassigned and private-use characters are not printable either, but they are
            # visible, and refusing them would make the rule depend on Python's Unicode version.
            if character != " " and unicodedata.category(character) in _NOT_IN_IDS:
                return (
                    f"record id {_shown(value)} has {_character_name(character)} at character "
                    f"{position}: ids must be printable"
                )
    if value != value.strip():
        return f"record id {_shown(value)} starts or ends with a space"
    if value in RESERVED_IDS:
        return f"record id {_shown(value)} is reserved for the search engine's own use"
    if value.startswith("/"):
        # `/records/<id>` could not tell it from an empty path segment.
        return f"record id {_shown(value)} starts with '/': it could not be fetched by URL"
    if any(segment in (".", "..") for segment in value.split("/")):
        # Browsers and proxies resolve `.` and `..` in a URL's path before sending it.
        return (
            f"record id {_shown(value)} has a '.' or '..' segment: it could not be fetched by URL"
        )
    return None


def _shown(value: str) -> str:
    return repr(value if len(value) <= _ID_SHOWN else value[:_ID_SHOWN] + "...")


def _character_name(character: str) -> str:
    named = _CHARACTER_NAMES.get(character)
    return f"U+{ord(character):04X} ({named})" if named else f"U+{ord(character):04X}"


def _clean_values(values: Iterable[str], name: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise ValueError(f"record field {name!r} must be a list, not a string")
    # A dict keeps first-seen order and tests membership in constant time: collaboration papers
    # list thousands of authors, and a list's `in` made reading one such record quadratic.
    cleaned: dict[str, None] = {}
    for value in values:
        if not isinstance(value, str):
            raise ValueError(f"record field {name!r} must hold strings")
        # Commas separate facet values in the index, so they cannot live inside one value.
        value = normalise_space(value.replace(",", " "))
        if value:
            cleaned[value] = None
    return tuple(cleaned)


def title_record_id(source: str, title: str, year: int | None) -> str:
    """Stable id for a record without a source id: derived from its normalised title and year."""
    digest = hashlib.sha1(f"{title_key(title)}|{year or ''}".encode()).hexdigest()[:16]
    prefix = "".join(ch for ch in source.lower() if ch.isalnum()) or "rec"
    return f"{prefix}-{digest}"


def is_arxiv_id(value: str) -> bool:
    """True for arXiv ids, new style (`2503.11731`, `0704.0001v2`) or old (`hep-th/9901001`)."""
    return bool(ARXIV_ID.fullmatch(value))


def identity_key(record: Record) -> str:
    """What makes two records the same paper.

    An explicit id is the record's identity: records with different ids are never folded
    together, whatever their titles. arXiv ids name a paper across its versions (`v2`). Only a
    record whose source gave no id, so that its id was derived from its title and year
    (`title_record_id`), is identified by title and year, across sources.
    """
    if is_arxiv_id(record.id):
        return f"arxiv:{ARXIV_VERSION.sub('', record.id)}"
    if record.id == title_record_id(record.source, record.title, record.year):
        return f"title:{title_key(record.title)}|{record.year or ''}"
    return f"id:{record.id}"


def has_explicit_id(key: str) -> bool:
    """True for the identity key of a record whose id came from its source (not an arXiv id)."""
    return key.startswith("id:")


def fold(key: str, seen: Record, record: Record) -> Record:
    """What a later sighting `record` of identity `key` makes of the `seen` one: it replaces
    it when the id is explicit, else the two are merged."""
    return record if has_explicit_id(key) else merge(seen, record)


def merge(first: Record, second: Record) -> Record:
    """One record from two sightings of the same paper: lists merged in first-seen order."""
    return replace(
        first,
        abstract=first.abstract or second.abstract,
        authors=first.authors + tuple(a for a in second.authors if a not in first.authors),
        categories=first.categories
        + tuple(c for c in second.categories if c not in first.categories),
        year=first.year if first.year is not None else second.year,
        url=first.url or second.url,
        doi=first.doi or second.doi,
        journal_ref=first.journal_ref or second.journal_ref,
        comments=first.comments or second.comments,
    )


@dataclass
class Deduplicator:
    """Folds repeated sightings of a paper into one record, keeping first-seen order.

    Sightings of a paper without a source id (seed pages) or of an arXiv paper are merged; a
    record repeating an explicit id replaces the earlier one, as a later upsert of that id
    would (so one id is never held twice, nor half of one record kept with the other).
    """

    _by_key: dict[str, Record] = field(default_factory=dict)
    merged: int = 0

    def add(self, record: Record) -> None:
        key = identity_key(record)
        seen = self._by_key.get(key)
        if seen is None:
            self._by_key[key] = record
        else:
            self._by_key[key] = fold(key, seen, record)
            self.merged += 1

    def records(self) -> Iterator[Record]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)
