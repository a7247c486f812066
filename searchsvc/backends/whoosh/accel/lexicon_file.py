"""The lexicons everyday requests need, saved beside the index so a new worker loads them at once.

A did-you-mean needs the spelling words of `content`, an autocomplete the terms of `title`, and
a new process reads them from every segment's term table on its first such request, a wait that
grows with the index and falls on a user's request. Builds and updates (store.py) save them as
one uncompressed `.npz`, each field's terms joined by NULs, with the signature of the index
state they were read from (facet_arrays.state_signature). A missing file, one of another state
or one that does not load cleanly only means the terms are read from the index as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.facet_table_file import (
    array_text,
    npz_bytes,
    read_saved_state,
    state_signature,
    text_array,
)
from searchsvc.backends.whoosh.accel.term_tables import field_terms

# Fields whose terms everyday requests read: did-you-mean's spelling words (of this field) and
# autocomplete's title terms. Wildcard and fuzzy words read other fields' on first use, as before.
SPELLING_OF = "content"
TITLE = "title"
_SEPARATOR = "\x00"  # text terms never hold a NUL (term_tables joins them the same way)


def lexicons_bytes(reader: IndexReader) -> bytes:
    """The saved form of `saved_fields`' terms in `reader`'s state (an uncompressed .npz)."""
    arrays: dict[str, Any] = {
        "signature": text_array(json.dumps(state_signature(reader), sort_keys=True))
    }
    for field in saved_fields(reader):
        terms = field_terms(reader, field)
        joined = _SEPARATOR.join(terms)
        if terms and joined.count(_SEPARATOR) != len(terms) - 1:
            continue  # a term holds the separator: this field is read from the index instead
        arrays[field] = text_array(joined)
    return npz_bytes(arrays)


def saved_fields(reader: IndexReader) -> list[str]:
    schema = reader.schema
    return [schema[SPELLING_OF].spelling_fieldname(SPELLING_OF), TITLE]


def load_terms(path: Path, reader: IndexReader, field: str) -> list[str] | None:
    """The field's terms saved at `path` if it describes exactly `reader`'s state, else None."""

    def joined_terms(saved) -> str | None:
        return array_text(saved[field]) if field in saved.files else None  # a field left out

    joined = read_saved_state(path, reader, "lexicons", joined_terms)
    if joined is None:
        return None
    return joined.split(_SEPARATOR) if joined else []
