"""Ranking quality on SciFact (BEIR, train split): nDCG@10 and Recall@100, engines side by side.

    python -m benchmarks.relevance [--engines ...] [--set NAME=VALUE ...] [--sweep]

The search core answers each claim with `SearchRequest(q=claim, per_page=100, facets=(),
highlight=False)`; SQLite FTS5 (porter unicode61, bm25, OR of the claim's words) and plain
Whoosh (BM25F over separate title/abstract fields, and over one combined field) run the same
queries on the same corpus in the same run. `--set DFR_C=1.5` overrides a backend module
constant for searchsvc; `--sweep` grid-searches BM25's B and K1 on the train split (tune here,
never on the test split) with a vectorised copy of Whoosh's BM25F, for comparison with the
backend's divergence-from-randomness ranking.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import math
import statistics
import sys
import time
from collections.abc import Sequence

from benchmarks.common import (
    CACHE_DIR,
    RelevanceSet,
    format_table,
    load_scifact,
    log,
    print_section,
)
from benchmarks.engines import Engine, EngineUnavailable, Task, engine_classes, prepare
from searchsvc.domain.errors import SearchsvcError

DEPTH = 100
# Each row: label, engine name, adapter options.
VARIANTS: dict[str, tuple[str, dict]] = {
    "searchsvc": ("searchsvc", {}),
    "searchsvc_hybrid": ("searchsvc", {"mode": "hybrid"}),
    "searchsvc_semantic": ("searchsvc", {"mode": "semantic"}),
    "searchsvc_solr": ("searchsvc_solr", {}),
    "fts5": ("fts5", {}),
    "plain_whoosh_fields": ("plain_whoosh", {"fields": ("title", "abstract")}),
    "plain_whoosh_combined": ("plain_whoosh", {"fields": ("content",)}),
    "tantivy": ("tantivy", {}),
}
DEFAULT_VARIANTS = tuple(VARIANTS)
VARIANT_NOTES = {
    "searchsvc": "search core, SearchRequest(q=claim, per_page=100), lexical",
    "searchsvc_hybrid": "the same, mode=hybrid (all-MiniLM-L6-v2 int8 vectors, fused)",
    "searchsvc_semantic": "the same, mode=semantic (nearest 100 by vector)",
    "searchsvc_solr": "the same request on SolrCloud (2 shards x 2 replicas)",
    "fts5": "SQLite FTS5, porter unicode61, bm25(), OR of words",
    "plain_whoosh_fields": "Whoosh BM25F, title and abstract as separate fields, OR",
    "plain_whoosh_combined": "Whoosh BM25, one combined title+abstract field, OR",
    "tantivy": "Tantivy BM25, title and abstract fields (en_stem), OR",
}
# The sweep's grid: small on purpose (train split; no per-query fitting). Field boosts are not
# swept: with the default fields the backend ranks one combined `content` field (plus author
# names, absent in SciFact), so a title boost has nothing to act on.
SWEEP_B = (0.6, 0.75, 0.9, 1.0)
IDFS = ("whoosh", "lucene", "fts5")
SWEEP_K1 = (0.9, 1.2, 1.5, 2.0)


def ndcg_at(ranked: Sequence[str], judged: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains (trec_eval/pytrec_eval `ndcg_cut`, as BEIR reports it)."""
    dcg = sum(judged.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], judged: dict[str, int], k: int = 100) -> float:
    relevant = {doc for doc, gain in judged.items() if gain > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def evaluate(engine: Engine, data: RelevanceSet) -> dict[str, float]:
    """Mean nDCG@10 and Recall@100 of `engine` over the judged queries (errors count as 0)."""
    ndcgs, recalls, errors = [], [], 0
    started = time.perf_counter()
    for query_id, text in data.queries.items():
        try:
            ranked = engine.search(Task(text, limit=DEPTH)).ids
        except SearchsvcError:
            ranked, errors = [], errors + 1
        ndcgs.append(ndcg_at(ranked, data.qrels[query_id]))
        recalls.append(recall_at(ranked, data.qrels[query_id], DEPTH))
    return {
        "ndcg@10": statistics.fmean(ndcgs),
        "recall@100": statistics.fmean(recalls),
        "errors": errors,
        "ms_per_query": (time.perf_counter() - started) * 1000 / len(data.queries),
    }


def open_variant(name: str, data: RelevanceSet, constants: dict | None = None) -> Engine:
    engine_name, options = VARIANTS[name]
    if engine_name == "searchsvc" and constants:
        options = {**options, "constants": constants}
    return prepare(
        engine_classes()[engine_name],
        data.corpus.records,
        data.corpus.key,
        CACHE_DIR,
        log=log,
        **options,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data = load_scifact(split=args.split)
    print("# Relevance")
    print(
        f"\nSciFact ({args.split} split): {len(data.corpus):,} documents, "
        f"{len(data.queries)} judged queries, "
        f"{sum(len(j) for j in data.qrels.values())} judgements."
    )
    rows = []
    for name in args.engines:
        try:
            engine = open_variant(name, data, args.constants)
        except EngineUnavailable as exc:
            log(f"skipping {name}: {exc}")
            rows.append([name, f"skipped: {exc}", "-", "-", "-", "-"])
            continue
        log(f"evaluating {name} ...")
        scores = evaluate(engine, data)
        engine.close()
        note = VARIANT_NOTES[name]
        if name == "searchsvc" and args.constants:
            note += f"; {format_constants(args.constants)}"
        rows.append(
            [
                name,
                note,
                f"{scores['ndcg@10']:.4f}",
                f"{scores['recall@100']:.4f}",
                scores["errors"],
                f"{scores['ms_per_query']:.1f}",
            ]
        )
    print_section(
        "nDCG@10 and Recall@100",
        format_table(["engine", "what", "nDCG@10", "Recall@100", "query errors", "ms/query"], rows),
    )
    if args.sweep:
        sweep(data)
    if args.fusion_sweep:
        fusion_sweep(data)
    return 0


FUSION_WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))
RRF_K = 60


def fusion_sweep(data: RelevanceSet) -> None:
    """Hybrid fusions over the same candidates (the lexical top FUSION_DEPTH with their BM25
    scores, the SEMANTIC_DEPTH nearest by vector, every candidate's cosine): searchsvc's
    weighted fusion (hybrid.fused_score) at each LEXICAL_WEIGHT, min-max normalised scores, and
    reciprocal-rank fusion, best first. Train split only: the weight is picked here."""
    import numpy as np

    from searchsvc.domain import modes as hybrid
    from searchsvc.domain.query import SearchRequest
    from searchsvc.embeddings.scan import cosines

    engine = open_variant("searchsvc_hybrid", data)
    backend, encoder = engine.backend, engine.encoder
    with backend._searchers.view() as view:
        table = view.vectors
        allowed = view.facets.live
        ids = [view.searcher.stored_fields(d)["id"] for d in range(len(table.present))]
    candidates = []
    for query_id, text in data.queries.items():
        request = SearchRequest(
            q=text, per_page=hybrid.FUSION_DEPTH, facets=(), highlight=False, mode="lexical"
        )
        lexical = [(h.record.id, float(h.score or 0.0)) for h in backend.search(request).hits]
        query = encoder.embed_query(text)
        scores = cosines(table.vectors, query)
        near, _ = table.nearest(query, allowed, hybrid.SEMANTIC_DEPTH)
        cosine_of = {ids[d]: float(scores[d]) for d in range(len(ids))}
        semantic = [ids[d] for d in near]
        candidates.append((query_id, lexical, semantic, cosine_of))
    engine.close()

    def score(rank) -> tuple[float, float]:
        ndcgs, recalls = [], []
        for query_id, lexical, semantic, cosine_of in candidates:
            ranked = rank(lexical, semantic, cosine_of)
            ndcgs.append(ndcg_at(ranked, data.qrels[query_id]))
            recalls.append(recall_at(ranked, data.qrels[query_id], DEPTH))
        return statistics.fmean(ndcgs), statistics.fmean(recalls)

    def weighted(weight: float):
        def rank(lexical, semantic, cosine_of):
            hybrid.LEXICAL_WEIGHT = weight
            pool = {doc for doc, _ in lexical} | set(semantic)
            return [doc for doc, _ in hybrid.fuse(lexical, {d: cosine_of[d] for d in pool})]

        return rank

    def min_max(weight: float):
        def rank(lexical, semantic, cosine_of):
            pool = sorted({doc for doc, _ in lexical} | set(semantic))
            bm25 = dict(lexical)
            lex = np.array([bm25.get(d, 0.0) for d in pool])
            cos = np.array([cosine_of[d] for d in pool])

            def scaled(x):
                spread = x.max() - x.min()
                return (x - x.min()) / spread if spread > 0 else np.zeros_like(x)

            fused = weight * scaled(lex) + (1 - weight) * scaled(cos)
            return [pool[i] for i in np.argsort(-fused, kind="stable")]

        return rank

    def reciprocal_rank(lexical, semantic, cosine_of):
        fused: dict[str, float] = {}
        for ranking in ([d for d, _ in lexical], semantic):
            for rank, doc in enumerate(ranking):
                fused[doc] = fused.get(doc, 0.0) + 1.0 / (RRF_K + rank + 1)
        return sorted(fused, key=lambda d: -fused[d])

    kept = hybrid.LEXICAL_WEIGHT
    rows = []
    for weight in FUSION_WEIGHTS:
        rows.append(
            (*score(weighted(weight)), "searchsvc (lexical / best lexical, cosine)", weight)
        )
        rows.append((*score(min_max(weight)), "min-max of both", weight))
    hybrid.LEXICAL_WEIGHT = kept
    rows.append((*score(reciprocal_rank), f"reciprocal rank, k={RRF_K}", "-"))
    rows.append((*score(lambda lexical, s, c: [d for d, _ in lexical]), "lexical alone", "-"))
    rows.append((*score(lambda lexical, semantic, c: semantic), "semantic alone", "-"))
    rows.sort(key=lambda row: -row[0])
    print_section(
        "Fusion sweep (train split), best first",
        format_table(
            ["nDCG@10", "Recall@100", "fusion", "LEXICAL_WEIGHT"],
            [[f"{n:.4f}", f"{r:.4f}", *rest] for n, r, *rest in rows],
        )
        + f"\n\nCandidates per claim: the lexical top {hybrid.FUSION_DEPTH} and the "
        f"{hybrid.SEMANTIC_DEPTH} nearest by vector (int8 all-MiniLM-L6-v2). The current "
        f"LEXICAL_WEIGHT is {kept}.",
    )


def sweep(data: RelevanceSet) -> None:
    """Grid over BM25_B x BM25_K1, best first, scored by `Bm25Grid` (seconds, not hours)."""
    engine = open_variant("searchsvc", data)
    combined = Bm25Grid(engine.index_dir)
    separate = Bm25Grid(engine.index_dir, fields=("title", "abstract"))
    engine.close()
    rows = []
    grids = [(combined, IDFS, SWEEP_B, SWEEP_K1), (separate, ("whoosh", "lucene"), (0.75,), (1.2,))]
    for grid, idfs, bs, k1s in grids:
        for idf, b, k1 in itertools.product(idfs, bs, k1s):
            ndcgs, recalls = [], []
            for query_id, text in data.queries.items():
                ranked = grid.rank(text, b, k1, DEPTH, idf=idf)
                ndcgs.append(ndcg_at(ranked, data.qrels[query_id]))
                recalls.append(recall_at(ranked, data.qrels[query_id], DEPTH))
            fields = "+".join(grid.fields)
            rows.append((statistics.fmean(ndcgs), statistics.fmean(recalls), fields, idf, b, k1))
    rows.sort(key=lambda row: -row[0])
    print_section(
        "Sweep of fields x IDF x BM25_B x BM25_K1 (train split), best first",
        format_table(
            ["nDCG@10", "Recall@100", "fields", "IDF", "BM25_B", "BM25_K1"],
            [[f"{n:.4f}", f"{r:.4f}", *rest] for n, r, *rest in rows],
        )
        + f"\n\nScored by Whoosh's BM25F formula over searchsvc's ranked field ({GRID_FIELD}), "
        "or title and abstract as separate fields (plain Whoosh's BM25F), in numpy, from the "
        "searchsvc index's postings and (quantised) field lengths. Until 2026-12-01 the "
        "backend ranked by BM25 with the `lucene` IDF, B 0.6, K1 1.2 (0.7014 then); it now "
        "ranks by divergence from randomness, which beat every row here (benchmarks/README.md). "
        "IDF `whoosh` is Whoosh's log(N/(n+1))+1; `lucene` is log(1+(N-n+0.5)/(n+0.5)) "
        "(Lucene, Anserini's BEIR baseline); `fts5` is FTS5's log((N-n+0.5)/(n+0.5)), at "
        "least 1e-6. Both weigh common words far less than Whoosh's. The backend's own "
        "constant: `--engines searchsvc --set DFR_C=...`.",
    )


GRID_FIELD = "content"


class Bm25Grid:
    """Whoosh's BM25F, vectorised: the sum over fields of per-field BM25 with Whoosh's own
    statistics (its idf per field, quantised field lengths). Ranks a query for any (B, K1) in
    milliseconds, so a parameter sweep needs no re-search through Whoosh."""

    def __init__(self, index_dir, fields: Sequence[str] = (GRID_FIELD,)) -> None:
        import numpy as np

        from searchsvc.backends.whoosh.store import IndexDirectory

        self.np = np
        self.fields = tuple(fields)
        index = IndexDirectory(index_dir).open()
        self.searcher = index.searcher()
        count = self.searcher.doc_count_all()
        self.count = count
        self.average_length = {f: self.searcher.avg_field_length(f) or 1 for f in self.fields}
        self.lengths = {
            f: np.array([self.searcher.doc_field_length(d, f, 1) for d in range(count)], float)
            for f in self.fields
        }
        self.ids = [self.searcher.stored_fields(d)["id"] for d in range(count)]
        self.analyzers = {f: self.searcher.schema[f].analyzer for f in self.fields}
        self._postings: dict[tuple[str, str], tuple] = {}

    def idf(self, frequency: int, kind: str) -> float:
        if kind == "whoosh":
            return math.log(self.count / (frequency + 1)) + 1
        if kind == "lucene":
            return math.log(1 + (self.count - frequency + 0.5) / (frequency + 0.5))
        if kind == "fts5":
            return max(math.log((self.count - frequency + 0.5) / (frequency + 0.5)), 1e-6)
        raise ValueError(f"unknown idf {kind!r}")

    def postings(self, field: str, term: str):
        if (field, term) not in self._postings:
            np = self.np
            docs, weights = [], []
            reader = self.searcher.reader()
            if reader.doc_frequency(field, term):
                matcher = reader.postings(field, term)
                while matcher.is_active():
                    docs.append(matcher.id())
                    weights.append(matcher.weight())
                    matcher.next()
            self._postings[field, term] = (np.array(docs, dtype=np.int64), np.array(weights))
        return self._postings[field, term]

    def rank(self, text: str, b: float, k1: float, depth: int, idf: str = "whoosh") -> list[str]:
        np = self.np
        scores = np.zeros(self.count)
        matched = np.zeros(self.count, dtype=bool)
        for field in self.fields:
            norms = k1 * ((1 - b) + b * self.lengths[field] / self.average_length[field])
            # Every occurrence of a word counts, as in the parser's OR of the query's words.
            for token in self.analyzers[field](text):
                docs, tf = self.postings(field, token.text)
                if not len(docs):
                    continue
                weight = self.idf(len(docs), idf)
                scores[docs] += weight * tf * (k1 + 1) / (tf + norms[docs])
                matched[docs] = True
        candidates = np.flatnonzero(matched & (scores > 0))
        # Best score first, ties by document number (as Whoosh's collector breaks them).
        order = np.lexsort((candidates, -scores[candidates]))[:depth]
        return [self.ids[d] for d in candidates[order]]


def format_constants(constants: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in constants.items())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--engines",
        type=lambda text: [p.strip() for p in text.split(",") if p.strip()],
        default=list(DEFAULT_VARIANTS),
        help=f"comma-separated, from {', '.join(VARIANTS)}",
    )
    parser.add_argument("--split", default="train", help="BEIR split (default train)")
    parser.add_argument(
        "--set",
        dest="constants",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a backend module constant for searchsvc (Python literal value)",
    )
    parser.add_argument("--sweep", action="store_true", help="grid-search searchsvc's constants")
    parser.add_argument(
        "--fusion-sweep",
        action="store_true",
        help="grid-search hybrid fusion (LEXICAL_WEIGHT, and other fusions for comparison)",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.engines if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {list(VARIANTS)}")
    constants = {}
    for item in args.constants:
        name, _, value = item.partition("=")
        constants[name.strip()] = ast.literal_eval(value.strip())
    args.constants = constants
    return args


if __name__ == "__main__":
    sys.exit(main())
