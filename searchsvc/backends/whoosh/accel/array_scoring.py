"""Ranking over posting arrays: Whoosh's scores and tie order without a call per match.

`rank(arrays, reader, terms, ...)` scores every document a term query matches at once (numpy
over the posting arrays of `snapshot_postings.SnapshotArrays`), applies a filter mask, and
selects one page of the top documents. The scores are those of the searcher's weighting model
to the last bit for each term: the index's own, `DivergenceFromRandomness`, or Whoosh 2.7.4's
`scoring.BM25F` (same statistics, average length, decoded length byte, operation order); sums
of several terms may differ from Whoosh's in the last bit, as Whoosh adds in its matcher tree's
order. Ties are broken by document number, as Whoosh's collector does.

Query shapes handled (`extract_terms` gives None for anything else; fall back to Whoosh):

- a `Term`, or an `Or` of terms, nested `Or`s flattened (a document matches any term);
- an `And` whose children are terms or `Or`s of terms (a document matches every child);
- wildcard and fuzzy words once the search core has expanded them into `Or`s of terms, and the
  `NullQuery` an expansion with no terms leaves;
- boosts on terms and groups; any field: the model's score for scorable fields, the term
  weight for non-scorable ones (e.g. `category`), as the models' `scorer` does.

Not handled: phrases, `Not` / `AndNot`, ranges, `Every`, `DisjunctionMax`, an `Or` with a
coordination `scale` or `minmatch`, an `Or` with an `And` inside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from math import inf, log, log2
from typing import NamedTuple

import numpy as np
from whoosh import query, scoring
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.snapshot_postings import LENGTH_OF_BYTE, SnapshotArrays
from searchsvc.backends.whoosh.accel.top_k import best_positions

# (field, term text (bytes for a numeric term the parser encoded), boost)
WeightedTerm = tuple[str, str | bytes, float]


@dataclass(frozen=True)
class TermQuery:
    """Terms in clauses: a document matches when it has a term of every clause.

    Its score is the sum of the scores of all the query's terms it has.
    """

    clauses: tuple[tuple[WeightedTerm, ...], ...]

    @classmethod
    def any_of(cls, terms: Iterable[WeightedTerm]) -> TermQuery:
        return cls((tuple(terms),))

    @classmethod
    def all_of(cls, terms: Iterable[WeightedTerm]) -> TermQuery:
        return cls(tuple((term,) for term in terms))

    @property
    def terms(self) -> list[WeightedTerm]:
        return [term for clause in self.clauses for term in clause]


def whoosh_idf(doc_count: int, doc_frequency: int) -> float:
    """`whoosh.scoring.WeightingModel.idf`: log(N / (n + 1)) + 1."""
    return log(doc_count / (doc_frequency + 1)) + 1


def probabilistic_idf(doc_count: int, doc_frequency: int) -> float:
    """BM25's probabilistic IDF as Lucene computes it: log(1 + (N - n + 0.5) / (n + 0.5))."""
    return log(1 + (doc_count - doc_frequency + 0.5) / (doc_frequency + 0.5))


class ProbabilisticBM25F(scoring.BM25F):
    """Whoosh's BM25F with Lucene's IDF, which ranks SciFact better than Whoosh's own IDF."""

    def idf(self, searcher, fieldname, text):
        parent = searcher.get_parent()
        return probabilistic_idf(parent.doc_count_all(), parent.doc_frequency(fieldname, text))


_IDF_OF_MODEL = {scoring.BM25F: whoosh_idf, ProbabilisticBM25F: probabilistic_idf}


def dfr_term_weight(doc_count: int, doc_frequency: int, frequency: float) -> float:
    """What a term of a divergence-from-randomness model is worth before normalisation.

    Lucene 9's `DFRSimilarity` with basic model I(ne) and after-effect B: the informative
    content log2((N + 1) / (ne + 0.5)), ne the documents expected to hold a term of
    `frequency` occurrences spread at random, times B's (F + 2) / (n + 1), the term's
    occurrences per document that has it (a term used over and over where it is used at all
    tells more about a document than a word used in passing everywhere).
    """
    expected = doc_count * (1.0 - ((doc_count - 1) / doc_count) ** frequency)
    return log2((doc_count + 1) / (expected + 0.5)) * ((frequency + 2) / (doc_frequency + 1))


def dfr_normalised(weight: float, length: float, c: float, avgfl: float) -> float:
    """Normalisation H2: a term's frequency as if the field had the average length."""
    return weight * dfr_length_factor(length, c, avgfl)


def dfr_length_factor(length: float, c: float, avgfl: float) -> float:
    # A field of length 0 holds no term; as a block's least length (a bound on what the block
    # can score) it must give the most a term can score.
    return log2(1.0 + c * avgfl / length) if length else inf


class DivergenceFromRandomness(scoring.WeightingModel):
    """Divergence from randomness, I(ne)-B-H2 (Amati and van Rijsbergen; Terrier's InExpB2),
    as Lucene 9's `DFRSimilarity` computes it: per term, its weight (`dfr_term_weight`) times
    tfn / (1 + tfn), tfn = frequency * log2(1 + c * average length / length).

    On SciFact's train split it ranks better than BM25 at any B and K1 (benchmarks/README.md);
    the Solr configset sets the same similarity, so both engines rank alike.
    """

    def __init__(self, c: float = 1.0) -> None:
        self.c = c

    def supports_block_quality(self) -> bool:
        return True

    def scorer(self, searcher, fieldname, text, qf=1):
        if not searcher.schema[fieldname].scorable:
            return scoring.WeightScorer.for_(searcher, fieldname, text)
        return DfrScorer(searcher, fieldname, text, self.c)


class DfrScorer(scoring.WeightLengthScorer):
    """One term's scorer; its quality bounds hold since the score grows with the frequency
    and falls with the length."""

    def __init__(self, searcher, fieldname, text, c: float) -> None:
        # Collection statistics over the whole index, from the top-level searcher.
        parent = searcher.get_parent()
        self.term_weight = dfr_term_weight(
            parent.doc_count_all(),
            parent.doc_frequency(fieldname, text),
            parent.frequency(fieldname, text),
        )
        self.avgfl = parent.avg_field_length(fieldname) or 1
        self.c = c
        self.setup(searcher, fieldname, text)

    def _score(self, weight, length):
        tfn = dfr_normalised(weight, length, self.c, self.avgfl)
        return self.term_weight * (1.0 - 1.0 / (1.0 + tfn))


@dataclass(frozen=True)
class Bm25:
    """BM25F's parameters, as `whoosh.scoring.BM25F(B=..., K1=..., <field>_B=...)` takes them."""

    B: float = 0.75
    K1: float = 1.2
    field_B: Mapping[str, float] = field(default_factory=dict)

    idf: Callable[[int, int], float] = whoosh_idf

    @classmethod
    def of(cls, weighting: scoring.WeightingModel) -> Bm25 | None:
        """The parameters of a searcher's weighting; None when it is not a BM25F we mirror."""
        idf = _IDF_OF_MODEL.get(type(weighting))
        if idf is None:
            return None
        return cls(weighting.B, weighting.K1, dict(weighting._field_B), idf)

    def b_of(self, fieldname: str) -> float:
        return self.field_B.get(fieldname, self.B)


@dataclass(frozen=True)
class Dfr:
    """`DivergenceFromRandomness`'s parameter."""

    c: float = 1.0

    @classmethod
    def of(cls, weighting: scoring.WeightingModel) -> Dfr | None:
        if type(weighting) is not DivergenceFromRandomness:
            return None
        return cls(weighting.c)


# The weighting models `rank` and `score_all` mirror.
Model = Bm25 | Dfr


def model_of(weighting: scoring.WeightingModel) -> Model | None:
    """The parameters of a searcher's weighting; None for a model not mirrored here."""
    return Dfr.of(weighting) or Bm25.of(weighting)


class Scored(NamedTuple):
    """Every document's score and the mask of the live documents a query matches."""

    scores: np.ndarray  # float64, one per document number (0 where not matched)
    matched: np.ndarray  # bool, one per document number


@dataclass(frozen=True)
class RankedPage:
    """One page of a ranking, with what the whole match set needs."""

    docnums: np.ndarray  # int64 document numbers of the page, best first
    scores: np.ndarray  # float64 score of each
    matched: np.ndarray  # boolean mask of every live document the query matches (no filter)
    total: int  # documents matched and allowed by the mask


def extract_terms(q: query.Query) -> TermQuery | None:
    """The terms of a query of a shape `rank` handles (see the module docstring), else None."""
    if type(q) is query.And:
        clauses = _all_of(q, 1.0)
        return None if clauses is None else TermQuery(tuple(clauses))
    terms = _any_of(q, 1.0)
    return None if terms is None else TermQuery.any_of(terms)


def _inner_boost(q: query.CompoundQuery, boost: float) -> float:
    # A compound of one child *is* that child's matcher: Whoosh ignores its boost then.
    return boost * q.boost if len(q.subqueries) > 1 else boost


def _all_of(q: query.And, boost: float) -> list[tuple[WeightedTerm, ...]] | None:
    """Clauses of an And of terms and Ors of terms (nested Ands flattened)."""
    inner = _inner_boost(q, boost)
    clauses: list[tuple[WeightedTerm, ...]] = []
    for child in q.subqueries:
        if type(child) is query.And:
            found = _all_of(child, inner)
            if found is None:
                return None
            clauses.extend(found)
            continue
        terms = _any_of(child, inner)
        if terms is None:
            return None
        clauses.append(tuple(terms))
    return clauses


def _any_of(q: query.Query, boost: float) -> list[WeightedTerm] | None:
    """Terms of a term or an Or of terms, with the boosts Whoosh's matchers apply."""
    if isinstance(q, query.qcore._NullQuery):
        return []
    if type(q) is query.Term:
        return [(q.fieldname, q.text, boost * q.boost)]
    if type(q) is query.Or and not q.scale and not q.minmatch:
        inner = _inner_boost(q, boost)
        terms: list[WeightedTerm] = []
        for child in q.subqueries:
            found = _any_of(child, inner)
            if found is None:
                return None
            terms.extend(found)
        return terms
    return None


def rank(
    arrays: SnapshotArrays,
    reader: IndexReader,
    terms: TermQuery | Sequence[WeightedTerm],
    *,
    mask: np.ndarray | None = None,
    k: int = 10,
    offset: int = 0,
    require_all: bool = False,
    model: Model | None = None,
) -> RankedPage:
    """The page [offset, offset + k) of the documents `terms` match and `mask` allows.

    `terms` is a TermQuery, or a list of (field, text, boost) that any (or, with
    `require_all`, every) one of must match. `reader` is one of the arrays' snapshot (posting
    lists not cached yet are read with it). `model` (`model_of(searcher.weighting)`) defaults
    to `BM25F()`'s parameters.
    """
    if not isinstance(terms, TermQuery):
        terms = TermQuery.all_of(terms) if require_all else TermQuery.any_of(terms)
    scores, matched = score_all(arrays, reader, terms, model or Bm25())
    selected = matched if mask is None else matched & mask
    docnums, page_scores = top(scores, selected, k, offset)
    return RankedPage(docnums, page_scores, matched, int(np.count_nonzero(selected)))


def score_all(
    arrays: SnapshotArrays, reader: IndexReader, terms: TermQuery, model: Model
) -> Scored:
    """Every document's score and the mask of the live documents a TermQuery matches."""
    scores = np.zeros(arrays.doc_count, dtype=np.float64)
    matched: np.ndarray | None = None
    for clause in terms.clauses:
        in_clause = np.zeros(arrays.doc_count, dtype=bool)
        for fieldname, text, boost in clause:
            postings = arrays.postings(reader, fieldname, text)
            if not len(postings.docs):
                continue
            # Posting lists hold each document once, so a fancy-index += adds every score.
            scores[postings.docs] += term_scores(arrays, reader, fieldname, postings, boost, model)
            in_clause[postings.docs] = True
        matched = in_clause if matched is None else matched & in_clause
    if matched is None:
        matched = np.zeros(arrays.doc_count, dtype=bool)
    return Scored(scores, matched)


def term_scores(
    arrays: SnapshotArrays,
    reader: IndexReader,
    fieldname: str,
    postings,
    boost: float,
    model: Model,
) -> np.ndarray:
    """Whoosh's score of one term in each document of its posting list (boost applied)."""
    weights = postings.weights.astype(np.float64)
    if not arrays.schema[fieldname].scorable:
        scores = weights  # the models' scorer is a WeightScorer for non-scorable fields
    elif isinstance(model, Dfr):
        avgfl = arrays.avg_field_length(reader, fieldname)
        # Statistics over the whole index (deleted documents included, as Whoosh has them).
        term_weight = dfr_term_weight(arrays.doc_count, postings.doc_frequency, postings.frequency)
        # DfrScorer._score with the same operations in the same order, the length factor
        # computed by the same Python call per length byte (256 values).
        factor = _dfr_length_factors(model.c, avgfl)
        tfn = weights * factor[arrays.length_bytes(reader, fieldname)[postings.docs]]
        scores = term_weight * (1.0 - 1.0 / (1.0 + tfn))
    else:
        B, K1 = model.b_of(fieldname), model.K1
        # WeightingModel.idf over the whole index (deleted documents included, as Whoosh does).
        idf = model.idf(arrays.doc_count, postings.doc_frequency)
        avgfl = arrays.avg_field_length(reader, fieldname)
        # scoring.bm25(idf, tf, fl, avgfl, B, K1) with the same operations in the same order,
        # the denominator's length part looked up per length byte (256 values).
        norm = K1 * ((1 - B) + B * LENGTH_OF_BYTE / avgfl)
        lengths = arrays.length_bytes(reader, fieldname)[postings.docs]
        scores = idf * ((weights * (K1 + 1)) / (weights + norm[lengths]))
    if boost != 1.0:
        scores = scores * boost  # WrappingMatcher: child score * boost
    return scores


@lru_cache(maxsize=64)
def _dfr_length_factors(c: float, avgfl: float) -> np.ndarray:
    return np.array([dfr_length_factor(length, c, avgfl) for length in LENGTH_OF_BYTE.tolist()])


def top(
    scores: np.ndarray, selected: np.ndarray, k: int, offset: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(docnums, scores) of ranks [offset, offset + k) of the selected documents.

    Order: score descending, then document number ascending (Whoosh's collector order).
    """
    wanted = offset + k
    docnums = np.flatnonzero(selected)
    if k <= 0 or wanted <= 0 or not len(docnums):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    candidates = scores[docnums]
    # Everything scoring at least the wanted-th best score, ties included, so the exact order
    # below decides ties by document number rather than argpartition's whim.
    keep = best_positions(candidates, wanted)
    docnums, candidates = docnums[keep], candidates[keep]
    order = np.lexsort((docnums, -candidates))[offset:wanted]
    return docnums[order].astype(np.int64), candidates[order]
