"""The array-based relevance fast path beside Whoosh's own ranking, on the arXiv-2025 corpus.

    python -m benchmarks.bench_fast_scoring [--queries N] [--k K] [--limit N] [--index-dir DIR]

Builds (once, cached under benchmarks/.cache/fast-scoring/) a single-writer index of the 40,717
records, parses the seeded query set of `benchmarks.common.make_queries` (two-word titles, rare
words, five-word abstract runs) with the search core's parser, and times per query kind, with
no filter and with a seeded filter allowing 30% of the documents:

- Whoosh: `searcher.search(query, limit=k, filter=...)` (top-k with block-quality skipping),
  and what execute.py does today: `docs_for_query` for the match mask, then `search`;
- the fast path: `scoring.rank(arrays, reader, terms, k=k, mask=...)`, which gives both, warm
  (posting lists cached) and uncached (every posting list decoded in the timed call).

Latency is printed twice: wall clock, and the thread's CPU time (which leaves out waiting for a
core on a shared machine). Also printed: the cold costs (live mask, length columns, posting
decoding, each measured two ways), a fresh process's first query, how often the fast path's
top-k, scores and match set agree with Whoosh's, and the memory of the caches.
Figures go to stdout as Markdown tables, progress to stderr.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.common import (
    CACHE_DIR,
    QUERY_KINDS,
    code_digest,
    format_table,
    latency_summary,
    load_arxiv,
    log,
    make_queries,
    print_section,
)

# The code that decides what is on disk: a change here means a rebuild of the cached index.
_INDEX_CODE = (
    "searchsvc/backends/whoosh/schema.py",
    "searchsvc/backends/whoosh/documents.py",
)


def ensure_index(records, name: str) -> Path:
    """A single-writer index of `records` under benchmarks/.cache/, built when missing.

    Keyed by the corpus name and size and by the code that lays documents out, not by the
    records' content: a change in how sources clean text should not cost a 40k rebuild for a
    speed benchmark (the queries are drawn from the records of the run either way).
    """
    from searchsvc.backends.whoosh.documents import to_document
    from searchsvc.backends.whoosh.store import IndexDirectory

    root = CACHE_DIR / "fast-scoring" / f"{name}-n{len(records)}-{code_digest(_INDEX_CODE)}"
    directory = IndexDirectory(root)
    if directory.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    log(f"building the index of {len(records)} records in {root} ...")
    started = time.perf_counter()
    with directory.build() as index:
        writer = index.writer(limitmb=256)
        for record in records:
            writer.add_document(**to_document(record))
        writer.commit()
    seconds = time.perf_counter() - started
    log(f"  built in {seconds:.0f} s ({len(records) / seconds:,.0f} records/s)")
    return root


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200, help="queries in the timed set")
    parser.add_argument("--k", type=int, default=10, help="hits ranked per query")
    parser.add_argument("--limit", type=int, default=None, help="use the first N records only")
    parser.add_argument("--build-only", action="store_true", help="build the index and stop")
    parser.add_argument("--index-dir", type=Path, help="an existing searchsvc index to use")
    args = parser.parse_args(argv)

    corpus = load_arxiv(limit=args.limit)
    root = args.index_dir or ensure_index(corpus.records, corpus.name)
    if args.build_only:
        return
    run(root, corpus, args.queries, args.k)


SEARCH_FIELDS = ("title", "abstract", "authors")
FILTER_DENSITY = 0.3  # the filtered mode allows a seeded 30% of the documents


def run(root: Path, corpus, count: int, k: int) -> None:
    import numpy as np

    from searchsvc.backends.whoosh.accel.array_scoring import extract_terms, model_of, rank
    from searchsvc.backends.whoosh.accel.lexicon import Lexicon
    from searchsvc.backends.whoosh.accel.snapshot_postings import SnapshotArrays
    from searchsvc.backends.whoosh.queries.compile import compile_query
    from searchsvc.backends.whoosh.ranking import weighting
    from searchsvc.backends.whoosh.store import IndexDirectory
    from searchsvc.domain.querylang import parse_query

    index = IndexDirectory(root).open()
    searcher = index.searcher(weighting=weighting())
    reader = searcher.reader()
    model = model_of(searcher.weighting)
    doc_count = reader.doc_count_all()

    lexicons: dict[str, Lexicon] = {}

    def lexicon(field: str) -> Lexicon:
        if field not in lexicons:
            lexicons[field] = Lexicon(reader, field)
        return lexicons[field]

    def parsed_set(queries):
        out = []
        for q in queries:
            tree = parse_query(q.text)
            parsed = compile_query(tree, SEARCH_FIELDS, reader, lambda field, value: value, lexicon)
            out.append((q, parsed.query, extract_terms(parsed.query)))
        return out

    timed_set = parsed_set(make_queries(corpus.records, count))
    warm_up = parsed_set(make_queries(corpus.records, 40, seed=2026))
    unsupported = [q.text for q, _, terms in timed_set if terms is None]
    timed_set = [item for item in timed_set if item[2] is not None]
    filter_mask = np.random.default_rng(2025).random(doc_count) < FILTER_DENSITY

    print_section(
        "Fast path vs Whoosh",
        f"{doc_count:,} documents, {len(reader.leaf_readers())} segment(s); "
        f"{len(timed_set)} queries ({len(unsupported)} of a shape the fast path leaves to "
        f"Whoosh); top {k}; one thread; load average {os.getloadavg()[0]:.1f} at start",
    )

    # -- cold costs ---------------------------------------------------------------------------
    cold = cold_costs(reader, timed_set, SnapshotArrays)
    print_section("Cold cost of the per-snapshot arrays", cold["table"])
    print_section(
        "Cold start: a fresh process opens the index and ranks one query", cold_start(root)
    )

    # -- latency --------------------------------------------------------------------------------
    arrays = SnapshotArrays(reader)
    for _, _, terms in warm_up + timed_set:
        rank(arrays, reader, terms, k=k, model=model)  # warm: every posting list cached
    for _, q, _ in warm_up:
        searcher.search(q, limit=k)

    def whoosh_top(q, terms, mask):
        allowed = None if mask is None else set(np.flatnonzero(mask).tolist())
        return searcher.search(q, limit=k, filter=allowed)

    def whoosh_core(q, terms, mask):
        # What execute.py does today: the match mask from docs_for_query, then Whoosh's page.
        matched = np.zeros(doc_count, dtype=bool)
        matched[np.fromiter(searcher.docs_for_query(q), dtype=np.int64)] = True
        selected = matched if mask is None else matched & mask
        allowed = None if mask is None else set(np.flatnonzero(selected).tolist())
        return searcher.search(q, limit=k, filter=allowed)

    def fast(q, terms, mask):
        return rank(arrays, reader, terms, mask=mask, k=k, model=model)

    def fast_uncached(q, terms, mask):
        arrays.clear_postings()
        return rank(arrays, reader, terms, mask=mask, k=k, model=model)

    modes = [
        ("Whoosh search(limit=k)", whoosh_top, None),
        ("Whoosh docs_for_query + search (core today)", whoosh_core, None),
        ("fast rank (warm cache)", fast, None),
        ("fast rank (posting lists decoded in the call)", fast_uncached, None),
        ("Whoosh search(limit=k, filter=30% set)", whoosh_top, filter_mask),
        ("Whoosh core today, filtered 30%", whoosh_core, filter_mask),
        ("fast rank, filtered 30% (warm)", fast, filter_mask),
    ]
    wall_rows, cpu_rows = [], []
    for label, function, mask in modes:
        log(f"timing: {label} ...")
        if function is fast:
            for _, _, terms in timed_set:  # the uncached mode emptied the cache
                rank(arrays, reader, terms, k=k, model=model)
        wall: dict[str, list[float]] = defaultdict(list)
        cpu: dict[str, list[float]] = defaultdict(list)
        gc.collect()
        for q, whoosh_query, terms in timed_set:
            started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
            function(whoosh_query, terms, mask)
            cpu[q.kind].append((time.thread_time_ns() - started_cpu) / 1e6)
            wall[q.kind].append((time.perf_counter_ns() - started) / 1e6)
        for rows, by_kind in ((wall_rows, wall), (cpu_rows, cpu)):
            every = [ms for values in by_kind.values() for ms in values]
            rows.append(
                [label, latency_summary(every)]
                + [latency_summary(by_kind[kind]) for kind in QUERY_KINDS]
            )
    headers = ["mode", "all", *QUERY_KINDS]
    print_section("Latency, wall clock, ms (p50 / p95 / p99)", format_table(headers, wall_rows))
    print_section(
        "Latency, CPU time of the thread, ms (p50 / p95 / p99)",
        "Leaves out the time spent waiting for a core, which a shared machine adds.\n\n"
        + format_table(headers, cpu_rows),
    )

    # -- agreement ------------------------------------------------------------------------------
    agreement(searcher, arrays, reader, timed_set, k, model, rank)

    # -- memory -----------------------------------------------------------------------------------
    memory(reader, arrays, SnapshotArrays, timed_set, k, model, rank)
    searcher.close()
    index.close()


def cold_costs(reader, timed_set, snapshot_arrays) -> dict:
    """Time the one-off work: live mask, length columns, posting lists (two ways each)."""
    from searchsvc.backends.whoosh.accel import posting_blocks

    rows = []
    started = time.perf_counter()
    arrays = snapshot_arrays(reader)
    rows.append(
        ["SnapshotArrays(reader): live mask", f"{(time.perf_counter() - started) * 1e3:.1f}"]
    )
    for field in ("content", "author_names"):
        started = time.perf_counter()
        arrays.length_bytes(reader, field)
        seconds = time.perf_counter() - started
        rows.append([f"length bytes of {field}: whole column, one read", f"{seconds * 1e3:.2f}"])
    leaf = reader.leaf_readers()[0][0]
    count = leaf.doc_count_all()
    started = time.perf_counter()
    for docnum in range(count):
        leaf.doc_field_length(docnum, "content")
    seconds = time.perf_counter() - started
    rows.append(["length of content: doc_field_length per document", f"{seconds * 1e3:.1f}"])

    terms = sorted({(f, t) for _, _, tq in timed_set for f, t, _ in tq.terms})
    btexts = [(f, reader.schema[f].to_bytes(t)) for f, t in terms]
    btexts = [(f, b) for f, b in btexts if (f, b) in reader]
    postings_count = sum(reader.doc_frequency(f, b) for f, b in btexts)
    for label, decode in (
        (
            "block by block, ids and weights read from the block bytes",
            posting_blocks.decode_blocks,
        ),
        ("per posting via the Matcher (id/weight/next)", posting_blocks.decode_matcher),
    ):
        started = time.perf_counter()
        for field, btext in btexts:
            for leaf, _ in reader.leaf_readers():
                if (field, btext) in leaf:
                    matcher = leaf.postings(field, btext)
                    if label.startswith("block") and not isinstance(
                        matcher, posting_blocks.W3LeafMatcher
                    ):
                        posting_blocks.decode_matcher(matcher)
                    else:
                        decode(matcher)
        seconds = time.perf_counter() - started
        rows.append(
            [
                f"decode {len(btexts)} posting lists ({postings_count:,} postings): {label}",
                f"{seconds * 1e3:.0f} ({seconds / max(postings_count, 1) * 1e9:.0f} ns/posting)",
            ]
        )
    return {"table": format_table(["step", "ms"], rows)}


_COLD_START = """
import json, sys, time
started = time.perf_counter()
from searchsvc.backends.whoosh.accel.snapshot_postings import arrays_for
from searchsvc.backends.whoosh.ranking import weighting
from searchsvc.backends.whoosh.accel.array_scoring import TermQuery, model_of, rank
from searchsvc.backends.whoosh.store import IndexDirectory
imported = time.perf_counter()
searcher = IndexDirectory(sys.argv[1]).open().searcher(weighting=weighting())
reader = searcher.reader()
opened = time.perf_counter()
fields = (("content", 1.0), ("author_names", 0.5))
terms = TermQuery.any_of([(f, w, b) for w in sys.argv[2].split() for f, b in fields])
model = model_of(searcher.weighting)
first_started = time.perf_counter()
page = rank(arrays_for(reader), reader, terms, k=10, model=model)
ranked = time.perf_counter()
page = rank(arrays_for(reader), reader, terms, k=10, model=model)
again = time.perf_counter()
print(json.dumps({"import_ms": (imported - started) * 1e3, "open_ms": (opened - imported) * 1e3,
                  "first_rank_ms": (ranked - first_started) * 1e3,
                  "second_rank_ms": (again - ranked) * 1e3, "matched": int(page.total)}))
"""
# Stems of a five-word abstract run: a worst case for the first query (five long lists).
_COLD_QUERY = "model learn network propos result"


def cold_start(root: Path) -> str:
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _COLD_START, str(root), _COLD_QUERY],
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(out.stdout)
    rows = [
        [name, f"{value:.1f}" if name.endswith("_ms") else value] for name, value in figures.items()
    ]
    return f"query stems: `{_COLD_QUERY}`\n\n" + format_table(["figure", "value"], rows)


def agreement(searcher, arrays, reader, timed_set, k, model, rank) -> None:
    """How often the fast top-k is Whoosh's, exactly and up to ties; largest score difference."""
    import numpy as np

    same, same_up_to_ties, same_totals = 0, 0, 0
    max_relative = 0.0
    for _, q, terms in timed_set:
        page = rank(arrays, reader, terms, k=k, model=model)
        results = searcher.search(q, limit=k)
        whoosh_docs = [docnum for _, docnum in results.top_n]
        whoosh_scores = np.asarray([score for score, _ in results.top_n])
        same += page.docnums.tolist() == whoosh_docs
        if len(whoosh_scores) == len(page.scores):
            close = np.allclose(page.scores, whoosh_scores, rtol=1e-9, atol=0)
            same_up_to_ties += bool(close)
            if len(whoosh_scores):
                diff = np.abs(page.scores - whoosh_scores) / np.abs(whoosh_scores)
                max_relative = max(max_relative, float(diff.max()))
        matched = set(searcher.docs_for_query(q))
        same_totals += matched == set(np.flatnonzero(page.matched).tolist())
    n = len(timed_set)
    print_section(
        "Agreement with Whoosh (top-k of searcher.search, totals of docs_for_query)",
        format_table(
            ["check", "queries"],
            [
                ["identical top-k docnums", f"{same} / {n}"],
                ["same scores at every rank (rtol 1e-9)", f"{same_up_to_ties} / {n}"],
                ["identical match set (docs_for_query)", f"{same_totals} / {n}"],
                ["largest relative score difference", f"{max_relative:.1e}"],
            ],
        ),
    )


def memory(reader, arrays, snapshot_arrays, timed_set, k, model, rank) -> None:
    """Bytes held by the caches after the query set, and if every posting list were decoded."""
    rows = [
        ["posting lists cached after the query set", _mb(arrays.postings_nbytes)],
        ["length bytes (fields used) + live mask", _mb(arrays.nbytes - arrays.postings_nbytes)],
    ]
    for field in ("content", "author_names", "title", "abstract"):
        postings = sum(terminfo.doc_frequency() for _, terminfo in reader.iter_field(field))
        rows.append([f"every posting list of {field} (8 bytes a posting)", _mb(postings * 8)])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rows.append(["peak RSS of this benchmark process", _mb(rss)])
    print_section("Memory", format_table(["what", "MB"], rows))


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f}"


if __name__ == "__main__":
    main()
