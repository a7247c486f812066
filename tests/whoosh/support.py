"""Whoosh's own writer and query parser, as the references the Whoosh backend's tests compare with.

tests.support.build_index builds through the engine contract, with the project's fast segment
writer; tests that need an index written by Whoosh's stock writer (to compare the two, or to check
that what the fast paths read also works on Whoosh's files) build it here. Likewise the query
compiler reproduces what Whoosh's `MultifieldParser` made of query text before the product's
query language replaced it: `whoosh_parser` is that parser, configured as the backend configured
it, and `assert_same_query` compares two Whoosh queries node by node.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from whoosh import fields, query
from whoosh import index as whoosh_index
from whoosh.index import Index
from whoosh.qparser import FieldAliasPlugin, FuzzyTermPlugin, MultifieldParser, OrGroup

from searchsvc.backends.shared.ranked_fields import FIELD_BOOSTS
from searchsvc.backends.whoosh.documents import to_document
from searchsvc.backends.whoosh.schema import QUERY_FIELDS, build_schema
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.records import Record
from tests.support import FIXTURE_RECORDS

# The field aliases the backend gave Whoosh's parser (`author:` searched author-name words).
PARSER_FIELD_ALIASES = {"author_names": ["author", "authors"], "category": ["categories"]}


# -- Whoosh's stock writer -------------------------------------------------------------------
def whoosh_writer_index(
    path: str | os.PathLike[str],
    records: Sequence[Record],
    parts: int = 1,
    ranges: Iterable[tuple[int, int]] | None = None,
) -> Index:
    """A bare Whoosh index (no generations) written by Whoosh's own writer in a new directory:
    `parts` contiguous shares of `records` (or the given [start, stop) `ranges`), one segment
    each, as the fast writer's workers write them."""
    Path(path).mkdir()
    index = whoosh_index.create_in(str(path), build_schema())
    _write_segments(index, records, parts, ranges)
    return index


def build_with_whoosh_writer(
    root: str | os.PathLike[str], records: Iterable[Record] = FIXTURE_RECORDS, segments: int = 1
) -> IndexDirectory:
    """A live generation at `root` (IndexDirectory.build) written by Whoosh's stock writer, in
    `segments` contiguous segments committed without a merge."""
    directory = IndexDirectory(root)
    with directory.build() as index:
        _write_segments(index, list(records), segments, None)
    return directory


def _write_segments(
    index: Index, records: Sequence[Record], parts: int, ranges: Iterable[tuple[int, int]] | None
) -> None:
    share = max(1, math.ceil(len(records) / parts))
    for start, stop in ranges or [(a, a + share) for a in range(0, len(records), share)]:
        writer = index.writer()
        for record in records[start:stop]:
            writer.add_document(**to_document(record))
        writer.commit(merge=False)


# -- Whoosh's query parser -------------------------------------------------------------------
@lru_cache(maxsize=16)
def whoosh_parser(search_fields: tuple[str, ...]) -> MultifieldParser:
    """Whoosh's query parser as the backend configured it before the product's query language:
    unfielded words search `search_fields` with their boosts, OR'ed; fuzzy words; aliases."""
    full = build_schema()
    schema = fields.Schema(**{name: full[name] for name in QUERY_FIELDS})
    boosts = {name: FIELD_BOOSTS.get(name, 1.0) for name in search_fields}
    parser = MultifieldParser(list(search_fields), schema, fieldboosts=boosts, group=OrGroup)
    parser.add_plugin(FuzzyTermPlugin())
    parser.add_plugin(FieldAliasPlugin(PARSER_FIELD_ALIASES))
    return parser


def assert_same_query(actual: query.Query, expected: query.Query) -> None:
    """Equal Whoosh queries with the same classes, boosts, character ranges and every other
    attribute, node by node (did-you-mean and highlighting read the character ranges)."""
    assert actual == expected
    _assert_same_nodes(actual, expected)


def _assert_same_nodes(actual: query.Query, expected: query.Query) -> None:
    assert type(actual) is type(expected)
    assert getattr(actual, "boost", None) == getattr(expected, "boost", None)
    assert getattr(actual, "startchar", None) == getattr(expected, "startchar", None)
    assert getattr(actual, "endchar", None) == getattr(expected, "endchar", None)
    # Every attribute, minmatch/minquality and the like included.
    assert vars(actual) == vars(expected)
    for actual_child, expected_child in zip(actual.children(), expected.children(), strict=True):
        _assert_same_nodes(actual_child, expected_child)
