"""Record <-> Whoosh document: the one place that knows how a record is laid out in the index."""

from __future__ import annotations

from typing import Any

from searchsvc.domain.facets import facet_named
from searchsvc.domain.records import Record
from searchsvc.domain.texts import title_key

# Separators of the packed facet column; record values never contain control characters.
_FACET_SEP, _VALUE_SEP = "\x1e", "\x1f"
# The facets in the packed column, in the order of its parts: fixed by the index format (a new
# facet is appended, and the schema version bumped). `category` holds the record's own codes in
# its order (primary first); the subject facets are derived from them when the index is read
# (accel/facet_table.py), so a newer taxonomy needs no rebuild.
PACKED_FACETS = ("year", "author", "category")

# The column holding a record's int8 vector (semantic search), when the index has vectors.
VECTOR_COLUMN = "vector"

# Whoosh stores None poorly for some field types; these stored fields may be absent.
_OPTIONAL = ("url", "doi", "journal_ref", "comments")


def to_document(record: Record, vector: bytes | None = None) -> dict[str, Any]:
    """The fields Whoosh indexes and stores for a record (and its int8 vector, if any)."""
    document: dict[str, Any] = {
        "id": record.id,
        "title": record.title,
        "abstract": record.abstract,
        "content": f"{record.title}\n{record.abstract}",
        "author_names": "\n".join(record.authors),
        "author": ",".join(record.authors),
        "category": ",".join(record.categories),
        "title_sort": title_key(record.title),
        "authors": list(record.authors),
        "categories": list(record.categories),
        "source": record.source,
        "facet_values": pack_facets(record),
    }
    if record.year is not None:
        document["year"] = record.year
    for name in _OPTIONAL:
        value = getattr(record, name)
        if value:
            document[name] = value
    if vector is not None:
        document[VECTOR_COLUMN] = vector
    return document


def from_stored(stored: dict[str, Any]) -> Record:
    """Rebuild a Record from a hit's stored fields."""
    return Record.from_index(
        {
            "id": stored["id"],
            "title": stored.get("title") or "",
            "abstract": stored.get("abstract") or "",
            "authors": list(stored.get("authors") or ()),
            "year": stored.get("year"),
            "categories": list(stored.get("categories") or ()),
            "source": stored.get("source") or "",
            "url": stored.get("url"),
            "doi": stored.get("doi"),
            "journal_ref": stored.get("journal_ref"),
            "comments": stored.get("comments"),
        }
    )


def packed_values(record: Record) -> dict[str, tuple[str, ...]]:
    """The values the packed column holds of a record, by facet: the categories as given."""
    return {
        name: record.categories if name == "category" else facet_named(name).values_of(record)
        for name in PACKED_FACETS
    }


def pack_facets(record: Record) -> bytes:
    """Every facet's values of a record as one column value (in PACKED_FACETS order)."""
    parts = (_VALUE_SEP.join(values) for values in packed_values(record).values())
    return _FACET_SEP.join(parts).encode("utf-8")


def unpack_facets(packed: bytes) -> dict[str, tuple[str, ...]]:
    """Inverse of `pack_facets`: each facet's values, as strings."""
    parts = packed.decode("utf-8").split(_FACET_SEP)
    return {
        name: tuple(part.split(_VALUE_SEP)) if part else ()
        for name, part in zip(PACKED_FACETS, parts, strict=True)
    }


def stored_facets(stored: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """The packed column's values from a document's stored fields (indexes older than it)."""
    return packed_values(from_stored(stored))
