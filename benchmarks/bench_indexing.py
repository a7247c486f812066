"""Index build speed and peak memory: searchsvc's `build_index` beside a plain Whoosh build.

    .venv/bin/python benchmarks/bench_indexing.py [--limit N] [--data FILE] [--modes ...]

Both builds index the same records (read with searchsvc.sources) into the same schema and fields;
"plain" writes them with one `index.writer()`, as a Whoosh tutorial would. Each build runs in a
fresh subprocess, so its peak memory is its own: the parent's ru_maxrss and the largest worker's
(RUSAGE_CHILDREN; the multi-process writer's workers are children of the build process).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The shared data folder, or SEARCHSVC_BENCH_DATA as for every benchmark (benchmarks/common.py).
DATA_DIR = Path(os.environ.get("SEARCHSVC_BENCH_DATA", ROOT.parent / "shared" / "data"))
DEFAULT_DATA = DATA_DIR / "arxiv-2025" / "arxiv-2025-kaggle-format.jsonl.gz"
MODES = ("searchsvc", "searchsvc-1proc", "plain")
MODE_LABELS = {
    "searchsvc": "searchsvc build_index (auto writer)",
    "searchsvc-1proc": "searchsvc build_index --procs 1",
    "plain": "plain Whoosh, one index.writer()",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="index only the first N records")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["searchsvc", "plain"])
    parser.add_argument("--run", choices=MODES, help=argparse.SUPPRESS)  # one build, in a child
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_build(args.run, args.data, args.limit)))
        return
    rows = [measure_in_subprocess(mode, args.data, args.limit) for mode in args.modes]
    print_table(rows, args.data)


def measure_in_subprocess(mode: str, data: Path, limit: int | None) -> dict:
    command = [sys.executable, __file__, "--run", mode, "--data", str(data)]
    if limit:
        command += ["--limit", str(limit)]
    print(f"building: {MODE_LABELS[mode]} ...", file=sys.stderr, flush=True)
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    figures = json.loads(output.strip().splitlines()[-1])
    print(f"  {figures}", file=sys.stderr, flush=True)  # each row as soon as it is known
    return figures


def run_build(mode: str, data: Path, limit: int | None) -> dict:
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench-index-") as scratch:
        index_dir = Path(scratch) / "index"
        if mode == "plain":
            figures = plain_build(data, limit, index_dir)
        else:
            figures = searchsvc_build(
                data, limit, index_dir, 1 if mode == "searchsvc-1proc" else None
            )
        figures["size_mb"] = _tree_size(index_dir) / 1024 / 1024
    own, workers = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    figures["mode"] = mode
    figures["parent_rss_mb"] = own.ru_maxrss / 1024
    figures["worker_rss_mb"] = workers.ru_maxrss / 1024
    # CPU time of the whole process tree: a figure a busy machine distorts far less than wall time.
    figures["cpu_seconds"] = sum(u.ru_utime + u.ru_stime for u in (own, workers))
    return figures


def searchsvc_build(data: Path, limit: int | None, index_dir: Path, procs: int | None) -> dict:
    from searchsvc.indexing.indexer import build_index

    source = data
    if limit:
        # build_index reads files: hand it the first `limit` lines as a file of their own.
        source = index_dir.parent / f"head{data.suffix}"
        _write_head(data, source, limit)
    summary = build_index([source], index_dir, progress=False, procs=procs)
    return {
        "records": summary.indexed,
        "seconds": summary.seconds,
        "read_seconds": summary.read_seconds,
        "writer": summary.writer,
    }


def plain_build(data: Path, limit: int | None, index_dir: Path) -> dict:
    from whoosh import index as whoosh_index

    from searchsvc.backends.whoosh.documents import to_document
    from searchsvc.backends.whoosh.schema import build_schema
    from searchsvc.domain.records import Deduplicator
    from searchsvc.sources import read_records

    started = time.perf_counter()
    dedupe = Deduplicator()
    for record in itertools.islice(read_records([data]), limit):
        dedupe.add(record)
    records = list(dedupe.records())
    read_seconds = time.perf_counter() - started
    index_dir.mkdir()
    index = whoosh_index.create_in(str(index_dir), build_schema())
    writer = index.writer()
    for record in records:
        writer.add_document(**to_document(record))
    writer.commit()
    return {
        "records": len(records),
        "seconds": time.perf_counter() - started,
        "read_seconds": read_seconds,
        "writer": "single writer",
    }


def print_table(rows: list[dict], data: Path) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\n{rows[0]['records']:,} records from {data.name}, {os.cpu_count()} CPUs, load {load}\n"
    )
    header = (
        "| build | writer | total s | records/s | write s | write records/s | CPU s "
        "| peak RSS parent MB | peak RSS largest worker MB | index MB |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        write_seconds = row["seconds"] - row["read_seconds"]
        workers = f"{row['worker_rss_mb']:.0f}" if row["worker_rss_mb"] else "-"
        print(
            f"| {MODE_LABELS[row['mode']]} | {row['writer']} | {row['seconds']:.1f} "
            f"| {row['records'] / row['seconds']:.0f} | {write_seconds:.1f} "
            f"| {row['records'] / write_seconds:.0f} | {row['cpu_seconds']:.0f} "
            f"| {row['parent_rss_mb']:.0f} | {workers} "
            f"| {row['size_mb']:.0f} |"
        )


def _write_head(data: Path, target: Path, limit: int) -> None:
    import gzip

    opener = gzip.open if data.suffix == ".gz" else open
    with (
        opener(data, "rt", encoding="utf-8") as source,
        opener(target, "wt", encoding="utf-8") as out,
    ):
        out.writelines(itertools.islice(source, limit))


def _tree_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


if __name__ == "__main__":
    main()
