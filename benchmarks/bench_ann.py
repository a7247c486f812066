"""Nearest-neighbour search at a million vectors: the per-segment HNSW graphs against the exact
scan, recall and latency, unfiltered and filtered.

    python -m benchmarks.bench_ann [--size 1000000] [--queries 100]

Embedding a million records takes about seven hours on these two cores, so the vectors are
made from the real ones: the 40,717 arXiv-2025 vectors of bench_hybrid's index (run it first),
each repeated with Gaussian noise (sigma 0.5 per unit vector's norm spread over 384 dimensions)
until `--size`, normalised and quantised as the index keeps them. Queries are search_speed's
query texts, embedded by the model. The vectors are cut into segments of 100,000 (the Whoosh
writer's largest), each with its graph, as accel/vector_table.py searches them; "exact" is the
same VectorTable without graphs. Recall@100 counts how many of the exact 100 nearest the graphs
return.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import (
    CACHE_DIR,
    format_table,
    latency_summary,
    load_arxiv,
    log,
    make_queries,
    print_section,
)

SEGMENT = 100_000
NOISE = 0.5
FILTERS = {"none": 1.0, "30% allowed": 0.3, "2% allowed": 0.02}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)

    from searchsvc.backends.whoosh.accel.vector_table import SegmentVectors, VectorTable
    from searchsvc.embeddings import quantise, shared_encoder
    from searchsvc.embeddings.ann import Graph, write_graph

    base = _real_vectors()
    rng = np.random.default_rng(2025)
    vectors = np.empty((args.size, base.shape[1]), dtype=np.int8)
    for start in range(0, args.size, SEGMENT):
        stop = min(start + SEGMENT, args.size)
        rows = base[np.arange(start, stop) % len(base)].astype(np.float32) / 127.0
        rows += NOISE / np.sqrt(base.shape[1]) * rng.standard_normal(rows.shape)
        vectors[start:stop] = quantise(rows / np.linalg.norm(rows, axis=1, keepdims=True))
    folder = CACHE_DIR / "ann" / f"{args.size}"
    folder.mkdir(parents=True, exist_ok=True)
    segments, build_seconds = [], 0.0
    for start in range(0, args.size, SEGMENT):
        count = min(SEGMENT, args.size - start)
        path = folder / f"segment-{start // SEGMENT}.vectorgraph"
        graph = Graph.open(path, base.shape[1], count)
        if graph is None:
            log(f"building the graph of vectors {start:,} to {start + count:,} ...")
            began = time.perf_counter()
            write_graph(path, vectors[start : start + count], np.arange(count))
            build_seconds += time.perf_counter() - began
            graph = Graph.open(path, base.shape[1], count)
        segments.append(SegmentVectors(start, count, graph))
    present = np.ones(args.size, dtype=bool)
    with_graphs = VectorTable(vectors, present, tuple(segments))
    exact = VectorTable(
        vectors, present, tuple(SegmentVectors(s.offset, s.count, None) for s in segments)
    )

    encoder = shared_encoder(threads=1)
    texts = [q.text for q in make_queries(load_arxiv().records, args.queries, seed=2025)]
    queries = encoder.embed(texts)
    rows = []
    for label, share in FILTERS.items():
        allowed = rng.random(args.size) < share if share < 1 else present
        recalls, graph_ms, exact_ms = [], [], []
        for query in queries:
            began = time.perf_counter()
            found, _ = with_graphs.nearest(query, allowed, 100)
            graph_ms.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            truth, _ = exact.nearest(query, allowed, 100)
            exact_ms.append((time.perf_counter() - began) * 1000)
            recalls.append(len(set(found.tolist()) & set(truth.tolist())) / max(1, len(truth)))
        rows.append(
            [
                label,
                f"{np.mean(recalls):.4f} (min {np.min(recalls):.2f})",
                latency_summary(graph_ms),
                latency_summary(exact_ms),
            ]
        )
    size_mb = sum(p.stat().st_size for p in folder.glob("*.vectorgraph")) / 1e6
    print("# Nearest neighbours at scale")
    print(
        f"\n{args.size:,} int8 vectors (the 40,717 real arXiv-2025 ones, repeated with noise), "
        f"{len(segments)} segments of up to {SEGMENT:,}; {len(queries)} embedded queries; "
        "one thread."
    )
    print_section(
        "Recall@100 and latency",
        format_table(
            ["filter", "recall@100", "graphs p50/p95/p99 ms", "exact p50/p95/p99 ms"], rows
        ),
    )
    print(
        f"\nGraphs: {size_mb:,.0f} MB on disk ({size_mb * 1e6 / args.size:,.0f} bytes a vector, "
        f"vectors included); built in {build_seconds:,.0f} s this run "
        f"({'cached' if not build_seconds else 'all cores'})."
    )
    return 0


def _real_vectors() -> np.ndarray:
    from searchsvc.backends import open_backend

    index = next((CACHE_DIR / "indexes" / "searchsvc-vectors").glob("*/index"), None)
    if index is None:
        raise SystemExit("run `python -m benchmarks.bench_hybrid` first: its vectors are the base")
    backend = open_backend(index)
    with backend._searchers.view() as view:
        table = view.vectors
        vectors = table.vectors[table.present & view.facets.live].copy()
    backend.close()
    return vectors


if __name__ == "__main__":
    raise SystemExit(main())
