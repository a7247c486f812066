"""Record <-> Solr document: the one place that knows how a record is laid out in a collection
(fields of solr/configset/conf/schema.xml).

Subjects (searchsvc.domain.subjects) are derived here, at index time: Solr can only count and filter
terms that are in the index, so each record carries its canonical categories, their archives
and every level they belong to, with and without its cross-lists. A new taxonomy therefore
takes a rebuild on Solr (the Whoosh backend derives them when it loads its facet arrays)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import orjson

from searchsvc.domain.facets import FACETS
from searchsvc.domain.records import META_DOCUMENT_ID, Record
from searchsvc.domain.subjects import record_categories, record_subject_keys, record_subjects
from searchsvc.domain.texts import fold, title_key

# The document that holds the index's metadata (kind "meta"); records are kind "record". Its id
# is one of the id rule's reserved ids, so that no record can take it.
META_ID = META_DOCUMENT_ID
RECORD_KIND = "record"
# facet_lookup values: facet, folded word start, value.
LOOKUP_SEP = "\x1f"
# Where a facet value's words start (as the Whoosh facet tables find them).
_WORD_START = re.compile(r"(?:^|(?<=[\s.\-_']))(?=\w)")
STORED_FIELDS = "id,record"
# The layout of record documents, bumped when they gain or change fields that searches rely
# on, or when their analysis changes (2: the subject fields; 3: acronym plurals stemmed as
# their singular). A collection's meta document records the layout it was built with, and
# writes to one of another layout are refused: its schema lacks the fields or analyses its
# text otherwise, and only a rebuild brings it up to date.
LAYOUT = 3
# The index fields of the subject facets: counted per facet (`category`, `subject` and their
# primary-only twins, whose values are canonical codes) and filtered on the folded keys of
# every level (category, archive, group), with cross-lists or of the primary category only.
# Keyed by primary_only.
COUNT_FIELDS = {
    False: {"category": "category", "subject": "subject"},
    True: {"category": "category_primary", "subject": "subject_primary"},
}
SUBJECT_KEYS = {False: "subject_key", True: "subject_key_primary"}
# The field of a record's int8 vector (searchsvc.embeddings), and its size in the schema.
VECTOR_FIELD = "vector"
VECTOR_DIMENSIONS = 384


def to_document(record: Record, seq: int, vector: np.ndarray | None = None) -> dict[str, Any]:
    """The fields Solr indexes and stores for a record; `seq` orders it among the records
    written (later writes larger); `vector` is its int8 vector, in an index with vectors."""
    document: dict[str, Any] = {
        "id": record.id,
        "seq": seq,
        "title": record.title,
        "abstract": record.abstract,
        "content": f"{record.title}\n{record.abstract}",
        "content_words": f"{record.title}\n{record.abstract}",
        "author_names": "\n".join(record.authors),
        "author": list(record.authors),
        "author_key": sorted({fold(name) for name in record.authors}),
        # The codes as the record has them: what `category:cs.*` wildcards match.
        "category_key": sorted({fold(name) for name in record.categories}),
        **subject_fields(record.categories),
        "title_sort": title_key(record.title),
        "facet_lookup": lookup_values(record),
        "record": orjson.dumps(record.to_dict()).decode("utf-8"),
    }
    if record.year is not None:
        document["year"] = record.year
    if vector is not None:
        document[VECTOR_FIELD] = vector.tolist()  # whole numbers, as the BYTE encoding takes
    return document


def subject_fields(categories: tuple[str, ...]) -> dict[str, list[str]]:
    """The subject facets' fields of a record with these categories (the first is primary)."""
    fields: dict[str, list[str]] = {}
    for primary_only in (False, True):
        names = COUNT_FIELDS[primary_only]
        fields[names["category"]] = list(record_categories(categories, primary_only))
        fields[names["subject"]] = list(record_subjects(categories, primary_only))
        keys = record_subject_keys(categories, primary_only)
        fields[SUBJECT_KEYS[primary_only]] = sorted({fold(key) for key in keys})
    return fields


def from_document(document: dict[str, Any]) -> Record:
    """The record a document stores."""
    return Record.from_index(orjson.loads(document["record"]))


def lookup_values(record: Record) -> list[str]:
    """Every facet value of the record once per word start: "author\\x1fvenkataraman\\x1f
    Shivaram Venkataraman" lets facet.prefix find values by the start of any word (of a
    subject's code or name: "distributed" finds cs.DC)."""
    values = set()
    for facet in FACETS:
        for value in facet.values_of(record):
            folded = fold(facet.searched_text(value))
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
