"""How the Whoosh index ranks: BM25F with the constants every engine uses, and the index field
of each query language field. (Which fields a query's words search, and their boosts, are the
same on every engine: backends/ranked_fields.py.)"""

from __future__ import annotations

from whoosh import scoring

from searchsvc.backends import ranked_fields
from searchsvc.backends.whoosh.accel.array_scoring import ProbabilisticBM25F

# Module constants, so that benchmarks/relevance.py can sweep them (`--set BM25_B=...`).
BM25_B = ranked_fields.BM25_B
BM25_K1 = ranked_fields.BM25_K1

# The query language's field names (querylang.FIELDS) -> index fields.
INDEX_FIELD_OF = {
    "title": "title",
    "abstract": "abstract",
    "author": "author_names",
    "category": "category",
    "subject": "category",  # a subject of any level resolves to the categories under it
    "year": "year",
}


def weighting() -> scoring.WeightingModel:
    return ProbabilisticBM25F(B=BM25_B, K1=BM25_K1)
