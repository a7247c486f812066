"""Search modes, and how hybrid search fuses the lexical and the semantic rankings.

Engine-neutral: engines supply the lexical matches with their lexical scores and every candidate's
cosine to the query vector; the rules for which records a mode returns, and their order, are
here so that every engine answers alike.

What each mode returns, for a request whose filters (facet selections and year range) are F:

- `lexical`: the records that match the query's words and pass F, by their lexical score
  (DFR, as always).
- `semantic`: the SEMANTIC_DEPTH records nearest the query's meaning among those passing F
  (cosine of the query's vector and the record's), nearest first. The query's words need not
  occur. `total` and the facet counts are over those records, so a facet whose value is
  selected counts that value alone.
- `hybrid`: the union of both sets: the lexical matches passing F, plus the SEMANTIC_DEPTH
  nearest passing F. The first FUSION_DEPTH lexical matches (more when a page reaches further)
  and the nearest records are ranked together by `fused_score`; the remaining lexical matches
  follow in lexical order. `total` counts the union; facet counts are over the union, each facet's
  without its own selection as in lexical mode (the nearest records, found under all of F,
  stay in the union), so a count is exactly what ticking the value adds to the union.

Filters keep their exact meaning in every mode: no record outside F is ever returned.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from concurrent.futures import Future
from typing import TypeVar

MODES = ("lexical", "hybrid", "semantic")
# Records the semantic side contributes (the nearest passing the filters).
SEMANTIC_DEPTH = 100
# Lexical matches fused with them (the rest follow in lexical order).
FUSION_DEPTH = 100
# Weight of the normalised lexical score against the cosine, tuned on SciFact's train split
# (benchmarks/relevance.py --fusion-sweep; benchmarks/README.md has the figures).
LEXICAL_WEIGHT = 0.3

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def resolved(vector: V | Future[V]) -> V:
    """The query's vector. The service hands engines a Future while the query is embedded
    (Encoder.embed_query_soon), so that an engine matches the words first and waits here, at
    the point it needs the vector; tests and other callers may pass the vector itself."""
    return vector.result() if isinstance(vector, Future) else vector


def fusion_depth(page: int, per_page: int) -> int:
    """How many lexical matches are fused with the nearest records: FUSION_DEPTH, more when
    the page reaches further."""
    return max(FUSION_DEPTH, page * per_page)


def lexical_depth(page: int, per_page: int) -> int:
    """How many lexical matches, best first, `fused_page` needs for a page."""
    return fusion_depth(page, per_page) + page * per_page


def fused_score(lexical: float, best_lexical: float, cosine: float) -> float:
    """One candidate's hybrid score: its lexical score as a share of the best candidate's, and its
    cosine to the query, weighted. A record only the semantic side found has a lexical 0."""
    share = lexical / best_lexical if best_lexical > 0 else 0.0
    return LEXICAL_WEIGHT * share + (1.0 - LEXICAL_WEIGHT) * cosine


def fuse(lexical: Sequence[tuple[K, float]], cosines: Mapping[K, float]) -> list[tuple[K, float]]:
    """Candidates ranked by `fused_score`, best first (ties by key for a stable order).

    `lexical` holds the fused lexical matches with their lexical scores; `cosines` every
    candidate's cosine (the lexical ones' and the nearest records').
    """
    scores = dict(lexical)
    best = max(scores.values(), default=0.0)
    fused = {
        key: fused_score(scores.get(key, 0.0), best, cosine) for key, cosine in cosines.items()
    }
    for key, score in scores.items():
        fused.setdefault(key, fused_score(score, best, 0.0))
    return sorted(fused.items(), key=lambda item: (-item[1], str(item[0])))


def fused_page(
    by_lexical: Sequence[tuple[K, float]],
    depth: int,
    nearest: Collection[K],
    cosines: Mapping[K, float],
    start: int,
    per_page: int,
) -> list[tuple[K, float]]:
    """A page of the hybrid order: the first `depth` lexical matches and the `nearest` records
    fused (`fuse`), then the other lexical matches in lexical order.

    `by_lexical` holds the lexical matches passing the filters, best first, with their lexical
    scores, at least `depth + start + per_page` of them when there are; `cosines` the cosine
    of each of them and of the nearest records (0 for a record without a vector).
    """
    window = by_lexical[:depth]
    candidates = {key for key, _ in window} | set(nearest)
    fused = fuse(window, {key: cosines.get(key, 0.0) for key in candidates})
    best = max((score for _, score in window), default=0.0)
    rest = [
        (key, fused_score(score, best, cosines.get(key, 0.0)))
        for key, score in by_lexical[depth:]
        if key not in candidates
    ]
    return [*fused, *rest][start : start + per_page]
