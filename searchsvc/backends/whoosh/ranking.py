"""How the Whoosh index ranks: the fields a query's words search, their boosts, and BM25F.

One combined title+abstract field (`content`) ranks SciFact better than separate fields, and a
title boost lowered it; author names count a little (benchmarks/README.md has the figures).
"""

from __future__ import annotations

from collections.abc import Iterable

from whoosh import scoring

from searchsvc.backends.whoosh.accel.array_scoring import ProbabilisticBM25F

SEARCH_FIELDS = ("content", "author_names")
FIELD_BOOSTS = {"content": 1.0, "author_names": 0.5, "title": 1.0, "abstract": 1.0}
BM25_B = 0.6
BM25_K1 = 1.2

# SearchRequest.fields -> index fields. Title and abstract together are `content`.
REQUEST_FIELDS = {"title": "title", "abstract": "abstract", "authors": "author_names"}
# The query language's field names (querylang.FIELDS) -> index fields.
INDEX_FIELD_OF = {
    "title": "title",
    "abstract": "abstract",
    "author": "author_names",
    "category": "category",
    "year": "year",
}


def weighting() -> scoring.WeightingModel:
    return ProbabilisticBM25F(B=BM25_B, K1=BM25_K1)


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
