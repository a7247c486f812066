"""BM25F ranking over posting arrays: Whoosh's scores and tie order without a call per match.

`rank(arrays, reader, terms, ...)` scores every document a term query matches at once (numpy
over the posting arrays of `snapshot_postings.SnapshotArrays`), applies a filter mask, and
selects one page of the top documents. The scores are those of Whoosh 2.7.4's `scoring.BM25F`
to the last bit for each term (same idf, average length, decoded length byte, operation order);
sums of several terms may differ from Whoosh's in the last bit, as Whoosh adds in its matcher
tree's order. Ties are broken by document number, as Whoosh's collector does.

Query shapes handled (`extract_terms` gives None for anything else; fall back to Whoosh):

- a `Term`, or an `Or` of terms, nested `Or`s flattened (a document matches any term);
- an `And` whose children are terms or `Or`s of terms (a document matches every child);
- wildcard and fuzzy words once the search core has expanded them into `Or`s of terms, and the
  `NullQuery` an expansion with no terms leaves;
- boosts on terms and groups; any field: BM25F for scorable fields, the term weight for
  non-scorable ones (e.g. `category`), as `BM25F.scorer` does.

Not handled: phrases, `Not` / `AndNot`, ranges, `Every`, `DisjunctionMax`, an `Or` with a
coordination `scale` or `minmatch`, an `Or` with an `And` inside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import log
from typing import NamedTuple

import numpy as np
from whoosh import query, scoring
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.snapshot_postings import LENGTH_OF_BYTE, SnapshotArrays

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
    """Whoosh's BM25F with Lucene's IDF, which ranks SciFact better (benchmarks/relevance.py)."""

    def idf(self, searcher, fieldname, text):
        parent = searcher.get_parent()
        return probabilistic_idf(parent.doc_count_all(), parent.doc_frequency(fieldname, text))


_IDF_OF_MODEL = {scoring.BM25F: whoosh_idf, ProbabilisticBM25F: probabilistic_idf}


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
    bm25: Bm25 | None = None,
) -> RankedPage:
    """The page [offset, offset + k) of the documents `terms` match and `mask` allows.

    `terms` is a TermQuery, or a list of (field, text, boost) that any (or, with
    `require_all`, every) one of must match. `reader` is one of the arrays' snapshot (posting
    lists not cached yet are read with it). `bm25` defaults to `BM25F()`'s parameters.
    """
    if not isinstance(terms, TermQuery):
        terms = TermQuery.all_of(terms) if require_all else TermQuery.any_of(terms)
    scores, matched = score_all(arrays, reader, terms, bm25 or Bm25())
    selected = matched if mask is None else matched & mask
    docnums, page_scores = top(scores, selected, k, offset)
    return RankedPage(docnums, page_scores, matched, int(np.count_nonzero(selected)))


def score_all(arrays: SnapshotArrays, reader: IndexReader, terms: TermQuery, bm25: Bm25) -> Scored:
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
            scores[postings.docs] += term_scores(arrays, reader, fieldname, postings, boost, bm25)
            in_clause[postings.docs] = True
        matched = in_clause if matched is None else matched & in_clause
    if matched is None:
        matched = np.zeros(arrays.doc_count, dtype=bool)
    return Scored(scores, matched)


def term_scores(
    arrays: SnapshotArrays, reader: IndexReader, fieldname: str, postings, boost: float, bm25: Bm25
) -> np.ndarray:
    """Whoosh's score of one term in each document of its posting list (boost applied)."""
    weights = postings.weights.astype(np.float64)
    if not arrays.schema[fieldname].scorable:
        scores = weights  # BM25F.scorer gives non-scorable fields a WeightScorer
    else:
        B, K1 = bm25.b_of(fieldname), bm25.K1
        # WeightingModel.idf over the whole index (deleted documents included, as Whoosh does).
        idf = bm25.idf(arrays.doc_count, postings.doc_frequency)
        avgfl = arrays.avg_field_length(reader, fieldname)
        # scoring.bm25(idf, tf, fl, avgfl, B, K1) with the same operations in the same order,
        # the denominator's length part looked up per length byte (256 values).
        norm = K1 * ((1 - B) + B * LENGTH_OF_BYTE / avgfl)
        lengths = arrays.length_bytes(reader, fieldname)[postings.docs]
        scores = idf * ((weights * (K1 + 1)) / (weights + norm[lengths]))
    if boost != 1.0:
        scores = scores * boost  # WrappingMatcher: child score * boost
    return scores


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
    if len(docnums) > wanted:
        # Keep everything scoring at least the wanted-th best score, ties included, so the
        # exact order below decides ties by document number rather than argpartition's whim.
        threshold = np.partition(candidates, len(candidates) - wanted)[len(candidates) - wanted]
        keep = np.flatnonzero(candidates >= threshold)
        docnums, candidates = docnums[keep], candidates[keep]
    order = np.lexsort((docnums, -candidates))[offset:wanted]
    return docnums[order].astype(np.int64), candidates[order]
