"""Record <-> Solr document: the one place that knows how a record is laid out in a collection
(fields of solr/configset/conf/schema.xml)."""

from __future__ import annotations

import re
from typing import Any

import orjson

from searchsvc.facets import FACETS
from searchsvc.records import Record
from searchsvc.texts import fold, title_key

# The document that holds the index's metadata (kind "meta"); records are kind "record".
META_ID = "__searchsvc_meta__"
RECORD_KIND = "record"
# facet_lookup values: facet, folded word start, value.
LOOKUP_SEP = "\x1f"
# Where a facet value's words start (as the Whoosh facet tables find them).
_WORD_START = re.compile(r"(?:^|(?<=[\s.\-_']))(?=\w)")
STORED_FIELDS = "id,record"


def to_document(record: Record, seq: int) -> dict[str, Any]:
    """The fields Solr indexes and stores for a record; `seq` orders it among the records
    written (later writes larger)."""
    document: dict[str, Any] = {
        "id": record.id,
        "seq": seq,
        "title": record.title,
        "abstract": record.abstract,
        "content": f"{record.title}\n{record.abstract}",
        "content_words": f"{record.title}\n{record.abstract}",
        "author_names": "\n".join(record.authors),
        "author": list(record.authors),
        "category": list(record.categories),
        "author_key": sorted({fold(name) for name in record.authors}),
        "category_key": sorted({fold(name) for name in record.categories}),
        "title_sort": title_key(record.title),
        "facet_lookup": lookup_values(record),
        "record": orjson.dumps(record.to_dict()).decode("utf-8"),
    }
    if record.year is not None:
        document["year"] = record.year
    return document


def from_document(document: dict[str, Any]) -> Record:
    """The record a document stores."""
    return Record.from_dict(orjson.loads(document["record"]))


def lookup_values(record: Record) -> list[str]:
    """Every facet value of the record once per word start: "author\\x1fvenkataraman\\x1f
    Shivaram Venkataraman" lets facet.prefix find values by the start of any word."""
    values = set()
    for facet in FACETS:
        for value in facet.values_of(record):
            folded = fold(value)
            for match in _WORD_START.finditer(folded):
                values.add(lookup_value(facet.name, folded[match.start() :], value))
    return sorted(values)


def lookup_value(facet: str, folded_start: str, value: str) -> str:
    return f"{facet}{LOOKUP_SEP}{folded_start}{LOOKUP_SEP}{value}"


def lookup_prefix(facet: str, prefix: str) -> str:
    """The facet.prefix of the values of `facet` with a word starting with `prefix`."""
    return f"{facet}{LOOKUP_SEP}{fold(prefix)}"


def lookup_parts(term: str) -> tuple[str, str]:
    """(folded word start, value) of a facet_lookup term."""
    _, start, value = term.split(LOOKUP_SEP, 2)
    return start, value
