"""What hybrid and semantic search cost at scale: latency beside lexical, vector build rate and
memory, on the arXiv-2025 records.

    python -m benchmarks.bench_hybrid [--limit N] [--queries N]

One index of the records is built with vectors (cached under benchmarks' cache folder, like the
other benchmarks' indexes; the embedding is most of its build time), then the same seeded query
set as search_speed.py runs in-process, one thread, in search_speed's mode (c) (top 10, exact
total, author/year/category/subject counts, highlighted title and abstract), as lexical, hybrid
and semantic searches, through SearchService as the API runs them, the three modes taking turns
on each query. The hybrid and semantic times include embedding the query. Prints p50/p95/p99
per search mode (wall clock and the process's CPU time), what hybrid and semantic add to
lexical on the same query, the build's embedding rate, and the memory the vectors take per
1,000 records (on disk in the index, and in a serving process).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

from benchmarks.common import (
    CACHE_DIR,
    format_table,
    latency_summary,
    load_arxiv,
    log,
    make_queries,
    print_section,
    timed,
)
from benchmarks.engines import BUILD_INFO
from searchsvc.domain.modes import MODES

WARM_UP = 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="index the first N records")
    parser.add_argument("--queries", type=int, default=200, help="timed queries (default 200)")
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args(argv)

    from searchsvc.backends import open_backend
    from searchsvc.domain.query import SearchRequest
    from searchsvc.embeddings import shared_encoder
    from searchsvc.service import SearchService

    corpus = load_arxiv(limit=args.limit)
    index_dir = CACHE_DIR / "indexes" / "searchsvc-vectors" / corpus.key
    info_path = index_dir / BUILD_INFO
    if not info_path.exists():
        log(f"building an index of {len(corpus):,} records with vectors ...")
        index_dir.mkdir(parents=True, exist_ok=True)
        stages: dict[str, float] = {}

        class Stages:
            started = time.perf_counter()
            current = "embedding"

            def advance(self, count: int) -> None:
                pass

            def stage(self, name: str) -> None:
                now = time.perf_counter()
                stages[self.current] = stages.get(self.current, 0.0) + now - self.started
                self.current, self.started = name, now

        progress = Stages()
        started = time.perf_counter()
        with open_backend(index_dir / "index") as backend:
            backend.rebuild(list(corpus.records), vectors=True, progress=progress)
        total = time.perf_counter() - started
        progress.stage("done")
        info = {
            "records": len(corpus),
            "seconds": total,
            "embedding_seconds": stages.get("embedding", 0.0),
        }
        info_path.write_text(json.dumps(info))
    info = json.loads(info_path.read_text())

    queries = make_queries(corpus.records, args.queries, seed=args.seed)
    warm_up = make_queries(corpus.records, WARM_UP, seed=args.seed + 1)
    encoder = shared_encoder(threads=1)
    rss_before = _rss_mb()
    backend = open_backend(index_dir / "index")
    # Through the service, as the API searches: it resolves the mode and embeds the query.
    service = SearchService(backend)
    facets = ("author", "year", "category", "subject")

    def search(text: str, mode: str):
        return service.search_request(SearchRequest(q=text, per_page=10, facets=facets, mode=mode))

    for query in warm_up:
        for mode in MODES:
            search(query.text, mode)
    # The modes take turns on each query, each first in a third of them: this machine's speed
    # drifts by milliseconds within a minute, which would land on whichever mode ran then.
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    for number, query in enumerate(queries):
        turn = number % len(MODES)
        for mode in MODES[turn:] + MODES[:turn]:
            # Each search embeds its query afresh (the encoder keeps recent queries' vectors:
            # without this, every mode after the first would time a cache hit).
            encoder.forget_queries()
            wall_ms, cpu_ms, _ = timed(lambda text=query.text, mode=mode: search(text, mode))
            wall[mode].append(wall_ms)
            cpu[mode].append(cpu_ms)
    rows = [[mode, latency_summary(wall[mode]), latency_summary(cpu[mode])] for mode in MODES]
    for mode in ("hybrid", "semantic"):
        added = [a - b for a, b in zip(wall[mode], wall["lexical"], strict=True)]
        added_cpu = [a - b for a, b in zip(cpu[mode], cpu["lexical"], strict=True)]
        rows.append(
            [
                f"{mode} minus lexical, same query",
                latency_summary(added),
                latency_summary(added_cpu),
            ]
        )
    rss_after = _rss_mb()
    embed_wall, embed_cpu = [], []
    for query in queries[:100]:
        encoder.forget_queries()
        wall_ms, cpu_ms, _ = timed(lambda text=query.text: encoder.embed_query(text))
        embed_wall.append(wall_ms)
        embed_cpu.append(cpu_ms)
    rows.append(
        ["(query embedding alone)", latency_summary(embed_wall), latency_summary(embed_cpu)]
    )
    backend.close()

    print("# Hybrid and semantic search at scale")
    print(
        f"\n{len(corpus):,} records ({corpus.name}); {len(queries)} queries (search_speed's "
        f"set, seed {args.seed}), {WARM_UP} warm-up queries per mode; one thread, in-process; "
        f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}."
    )
    print_section(
        "Latency, mode (c): top 10, total, four facets, highlights",
        format_table(["search mode", "wall p50 / p95 / p99 ms", "CPU p50 / p95 / p99 ms"], rows),
    )
    embedding = info.get("embedding_seconds") or 0.0
    per_thousand_disk = 384 * 1000 / 1024  # an int8 vector per record in the index column
    print_section(
        "Vectors",
        format_table(
            ["figure", "value"],
            [
                ["build, all stages", f"{info['seconds']:.0f} s"],
                [
                    "embedding stage",
                    f"{embedding:.0f} s ({len(corpus) / embedding:,.1f} records/s)"
                    if embedding
                    else "-",
                ],
                ["vector bytes per 1,000 records (index column)", f"{per_thousand_disk:.0f} KiB"],
                [
                    "serving process growth after the searches (vectors, model, caches)",
                    f"{rss_after - rss_before:,.0f} MB",
                ],
            ],
        ),
    )
    return 0


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    raise SystemExit(main())
