"""Search modes, what meaning may add to an answer, and how hybrid search fuses the lexical and
the semantic rankings.

Engine-neutral: engines supply the lexical matches with their lexical scores and every candidate's
cosine to the query vector; the rules for which records a mode returns, and their order, are
here so that every engine answers alike. The service decides a request's mode once
(`SearchService.mode_for`) and hands engines the vector of `meaning_text`; engines follow
`request.mode` and `meaning_adds` and never re-derive them.

The query language keeps its meaning in every mode. A query that uses any of it (a field, a
phrase, AND/OR/NOT, parentheses, a range, a wildcard, a fuzzy word, a boost) selects in every
mode exactly the records it selects in lexical mode: meaning may rank them, and adds none. Only
a query of plain words (`QueryTree.plain_words`) is extended by meaning, and only by records
whose cosine to the query reaches MEANING_FLOOR, so that nonsense and identifiers that match
no word find nothing. For a request whose filters (facet selections and year range) are F:

- `lexical`: the records that match the query and pass F, by their lexical score (DFR).
- `semantic`: plain words: the SEMANTIC_DEPTH records nearest the query's meaning among those
  passing F and at MEANING_FLOOR or nearer, nearest first (the words need not occur). A query
  using the language: its lexical matches passing F, nearest first.
- `hybrid`: the lexical matches passing F, plus (plain words only) the SEMANTIC_DEPTH nearest
  passing F at MEANING_FLOOR or nearer. The first `fusion_depth` lexical matches and the nearest
  records are ranked together by `fused_score`. `total` counts that answer; facet counts are
  over it, each facet's without its own selection as in lexical mode (the nearest records,
  found under all of F, stay in it), so a count is exactly what ticking the value adds.

A result says how many of its records match the query (`matched_by_words`) and how many only
meaning brought (`added_by_meaning`). Filters keep their exact meaning in every mode: no
record outside F is ever returned.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from concurrent.futures import Future
from typing import TypeVar

from searchsvc.domain.querylang import Fuzzy, Phrase, QueryTree, Word

MODES = ("lexical", "hybrid", "semantic")
# Records the semantic side contributes at most (the nearest passing the filters).
SEMANTIC_DEPTH = 100
# The least cosine to the query of a record that meaning adds to an answer: chosen on SciFact's
# train split and on nonsense and identifier-like queries (benchmarks/README.md, "The floor of
# meaning"); cosines as the engines compute them (int8 vectors, dot product over 127^2).
MEANING_FLOOR = 0.45
# Lexical matches fused with the nearest records, at least (more when a page reaches further).
FUSION_DEPTH = 100
# The fields whose words a query vector is made of (None: the request's default fields);
# author names, subjects and years carry no meaning the model reads.
MEANING_FIELDS = (None, "title", "abstract")
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


def meaning_text(tree: QueryTree) -> str:
    """What the query's vector is made from: a plain-word query's text; otherwise the words of
    its phrases and words in the title, the abstract or the default fields, outside any NOT
    (`title:"learned caches" year:2023` means "learned caches"). Empty: nothing to mean, and
    the search is lexical."""
    if tree.plain_words:
        return tree.text.strip()
    return " ".join(
        leaf.text
        for leaf in tree.positive_leaves()
        if isinstance(leaf, Word | Phrase | Fuzzy) and leaf.field in MEANING_FIELDS
    ).strip()


def meaning_adds(tree: QueryTree) -> bool:
    """Whether meaning may add records without the query's words: plain words only; a query
    using the language selects exactly its own matches in every mode."""
    return tree.plain_words


def near_enough(cosine: float) -> bool:
    """Whether a record is near enough the query for meaning to add it (MEANING_FLOOR)."""
    return cosine >= MEANING_FLOOR


def fusion_depth(page: int, per_page: int) -> int:
    """How many lexical matches, best first, are fused with the nearest records for a page:
    FUSION_DEPTH, or as many as the page reaches (at most the request's result window)."""
    return max(FUSION_DEPTH, page * per_page)


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
    nearest: Collection[K],
    cosines: Mapping[K, float],
    start: int,
    per_page: int,
) -> list[tuple[K, float]]:
    """A page of the hybrid order: the lexical matches and the `nearest` records fused
    (`fuse`).

    `by_lexical` holds the first `fusion_depth(page, per_page)` lexical matches passing the
    filters, best first, with their lexical scores (all of them when there are fewer): the
    fused list then reaches past the page, so no other match can belong on it. `cosines` holds
    the cosine of each of them and of the nearest records (0 for a record without a vector).
    """
    candidates = {key for key, _ in by_lexical} | set(nearest)
    fused = fuse(by_lexical, {key: cosines.get(key, 0.0) for key in candidates})
    return fused[start : start + per_page]
