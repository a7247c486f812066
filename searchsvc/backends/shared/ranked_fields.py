"""Which index fields a query's words search, their weights, and how a match is scored: the
same on every engine.

Both engines index title + abstract as one ranked field, `content` (one field ranks SciFact
better than two, and a title field beside it added too little to pay for its postings), beside
`title` and `abstract` for field-prefixed words and phrases, and `author_names`, which counts a
little. Both score a match by divergence from randomness, I(ne)-B-H2 with `DFR_C` (Lucene's
`DFRSimilarity`; the Whoosh index's `DivergenceFromRandomness`), which ranked SciFact's train
split better than BM25 at any B and K1 (benchmarks/README.md has the figures).
"""

from __future__ import annotations

from collections.abc import Iterable

SEARCH_FIELDS = ("content", "author_names")
FIELD_BOOSTS = {"content": 1.0, "author_names": 0.5, "title": 1.0, "abstract": 1.0}
# H2's length normalisation: a term's frequency times log2(1 + DFR_C * average / length).
DFR_C = 1.0

# SearchRequest.fields -> index fields. Title and abstract together are `content`.
REQUEST_FIELDS = {"title": "title", "abstract": "abstract", "authors": "author_names"}


def index_fields(request_fields: Iterable[str]) -> tuple[str, ...]:
    """The index fields that rank a query searching the request's `fields`."""
    wanted = set(request_fields)
    if wanted >= set(REQUEST_FIELDS):
        return SEARCH_FIELDS
    chosen: list[str] = []
    if {"title", "abstract"} <= wanted:
        chosen.append("content")
    else:
        chosen.extend(REQUEST_FIELDS[name] for name in ("title", "abstract") if name in wanted)
    if "authors" in wanted:
        chosen.append("author_names")
    return tuple(chosen)
