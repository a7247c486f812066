"""How the Whoosh index ranks: divergence from randomness with the constant every engine uses,
and the index field of each query language field. (Which fields a query's words search, their
boosts and the ranking model are the same on every engine: backends/ranked_fields.py.)"""

from __future__ import annotations

from whoosh import scoring

from searchsvc.backends.shared import ranked_fields
from searchsvc.backends.whoosh.accel.array_scoring import DivergenceFromRandomness

# A module constant, so that benchmarks/relevance.py can try others (`--set DFR_C=...`).
DFR_C = ranked_fields.DFR_C

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
    return DivergenceFromRandomness(c=DFR_C)
