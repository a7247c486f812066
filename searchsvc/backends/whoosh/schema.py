"""The Whoosh schema: which record fields are analysed for ranking and which are exact facets."""

from __future__ import annotations

import Stemmer
from whoosh import columns, fields
from whoosh.analysis import (
    CharsetFilter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)
from whoosh.support.charset import accent_map

from searchsvc.backends.shared.acronym_plurals import singular

# Bump when the schema or analysis changes in a way that needs a rebuild (3: acronym plurals
# are stemmed as their singular, acronym_plurals.py).
SCHEMA_VERSION = 3
# The fields a query may search (queries/ compiles against these alone), so the only fields whose
# posting lists ranking reads: accel/posting_arrays_file.py saves theirs.
QUERY_FIELDS = ("title", "abstract", "content", "author_names", "category", "year")

_ENGLISH = Stemmer.Stemmer("english")
# PyStemmer's own cache (10,000 words by default) makes stemming slower, not faster, once a
# corpus has more distinct words than that (its upkeep outweighs its hits), and analysis.py
# already keeps every raw word's stem.
_ENGLISH.maxCacheSize = 0


def snowball_english(word: str) -> str:
    """PyStemmer's C Snowball stemmer alone (the index stems with `english_stem`)."""
    return _ENGLISH.stemWord(word)


def english_stem(word: str) -> str:
    """The index term of a kept word: Snowball English of it, an acronym plural made singular
    first (`gpus` -> `gpu`); module-level so Whoosh can pickle the analyzer by name."""
    return _ENGLISH.stemWord(singular(word))


def text_analyzer():
    """Words, lowercased, accents folded (`balazs` finds `Balázs`), stop words dropped, stemmed
    (`GPUs` as `gpu`)."""
    return (
        RegexTokenizer()
        | LowercaseFilter()
        | CharsetFilter(accent_map)
        | StopFilter()
        | StemFilter(stemfn=english_stem)
    )


def name_analyzer():
    """Author names: words, lowercased and accent-folded, not stemmed (names are not English)."""
    return RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map)


def build_schema() -> fields.Schema:
    text = text_analyzer()
    return fields.Schema(
        id=fields.ID(stored=True, unique=True),
        # Ranked text. `content` is title + abstract as one field (BM25 over one field ranks
        # SciFact better than over two); title/abstract keep positions for phrases and
        # field-prefixed queries.
        title=fields.TEXT(analyzer=text, stored=True),
        abstract=fields.TEXT(analyzer=text, stored=True),
        content=fields.TEXT(analyzer=text, spelling=True),
        author_names=fields.TEXT(analyzer=name_analyzer()),
        # Exact facet values, comma-separated (values never hold commas: see records.py).
        author=fields.KEYWORD(commas=True, lowercase=False, scorable=False),
        category=fields.KEYWORD(commas=True, lowercase=False, scorable=False),
        year=fields.NUMERIC(int, bits=32, stored=True, sortable=True),
        title_sort=fields.ID(sortable=True),
        # Every document's facet values packed in one column (see documents.pack_facets): a
        # searcher loads them for all documents in one read, instead of unpickling each
        # document's stored fields, one by one.
        facet_values=fields.COLUMN(columns.VarBytesColumn()),
        # The record's int8 embedding (semantic and hybrid search), empty when the index was
        # built without vectors: a column, so a snapshot reads all of them in one pass
        # (accel/vector_table.py) and merges carry them like any other value.
        vector=fields.COLUMN(columns.VarBytesColumn()),
        # Display-only fields.
        authors=fields.STORED(),
        categories=fields.STORED(),
        source=fields.STORED(),
        url=fields.STORED(),
        doi=fields.STORED(),
        journal_ref=fields.STORED(),
        comments=fields.STORED(),
    )
