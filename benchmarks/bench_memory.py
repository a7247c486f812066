"""Where an index's bytes go, on disk and in the serving workers (issue 20).

    .venv/bin/python -m benchmarks.bench_memory --index-dir DIR [--queries 200] [--workers 2]
    .venv/bin/python -m benchmarks.bench_memory --size 1M       # bench_scale's index of 1M

Disk: the live generation's bytes by part, per record: postings (Whoosh's .pst, with
positions), the term index (.trm), stored fields, the document columns (facet values, title sort
keys, field lengths), posting arrays (.postarrays), the saved facet arrays and lexicons, vector
graphs, the rest. Segments are compound files: their parts are read from the compound file's
directory.

Serving: gunicorn with the service's settings (searchsvc/serving/gunicorn_conf.py) and
`--workers` sync workers on a free 127.0.0.1 port, driven by as many client threads as workers
through search_speed.py's query set in mode (c) (top 10 + author/year/category counts +
highlights), so every worker answers a share of it. Then each worker's RSS, PSS and USS
(private clean + private dirty pages, what the worker alone holds) from /proc/PID/smaps_rollup,
and the file-backed part of its RSS (index files mapped, shared between workers). bench_scale.py
records the same figures in its rows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.bench_http import free_port, start_gunicorn, stop_gunicorn
from benchmarks.common import format_table, log

FACETS = ("author", "year", "category")
# How long the workers are left idle before their memory is read (the figures right after the
# last answer are kept too, as `workers_busy`).
IDLE_SECONDS = 2.5
_COLUMNS = ("rss_mb", "pss_mb", "uss_mb", "uss_anonymous_mb", "uss_file_mb", "file_mb")
_SMAPS_FIELD = re.compile(r"^(\w+):\s+(\d+) kB$")
# Compound-file members and files by what they hold.
_PARTS = (
    ("postings (.pst)", re.compile(r"\.pst$")),
    ("term index (.trm)", re.compile(r"\.trm$")),
    ("stored fields", re.compile(r"\._stored\.col$")),
    ("document columns", re.compile(r"\.col$")),
    ("posting arrays", re.compile(r"\.postarrays$")),
    ("facet arrays", re.compile(r"^facets\.npz$")),
    ("lexicons", re.compile(r"^lexicons\.npz$")),
    ("vector graphs", re.compile(r"\.vectorgraph$")),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--index-dir", type=Path)
    where.add_argument("--size", help="bench_scale.py's index of this size (e.g. 1M)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    index_dir = args.index_dir or scale_index(args.size)
    disk = disk_parts(index_dir)
    print_disk(disk)
    texts = query_texts(args.queries)
    workers = worker_memory(index_dir, texts, args.workers)
    print_workers(workers)
    print_heap(heap_by_source(index_dir, texts))
    return 0


def query_texts(count: int = 200) -> list[str]:
    """bench_scale.py's timed query set (search_speed.py's queries over arXiv-2025)."""
    from benchmarks.bench_scale import query_file

    settings = argparse.Namespace(queries=count, warm_up=50, query_seed=2025)
    data = json.loads(query_file(settings).read_text(encoding="utf-8"))
    return [text for _, text in data["queries"]]


def scale_index(size: str) -> Path:
    from benchmarks.make_corpus import DEFAULT_SEED, SCALE_DIR, corpus_path, parse_size

    corpus = corpus_path(parse_size(size), DEFAULT_SEED)
    return SCALE_DIR / "indexes" / corpus.name.removesuffix(".jsonl.gz")


# -- disk -------------------------------------------------------------------------------------
def disk_parts(index_dir: Path) -> dict:
    """Bytes of the live generation by part, and its document count."""
    from whoosh.filedb.compound import CompoundStorage
    from whoosh.filedb.filestore import FileStorage

    live = index_dir / (index_dir / "CURRENT").read_text(encoding="utf-8").strip()
    sizes: Counter[str] = Counter()
    storage = FileStorage(str(live))
    for path in live.iterdir():
        if not path.is_file():
            continue
        if path.suffix == ".seg":
            compound = CompoundStorage(storage.open_file(path.name), use_mmap=False)
            for member in compound.list():
                sizes[_part(member)] += compound.file_length(member)
            compound.close()
        else:
            sizes[_part(path.name)] += path.stat().st_size
    metadata = json.loads((live / "searchsvc.json").read_text(encoding="utf-8"))
    documents = int(metadata.get("documents") or metadata.get("counts", {}).get("indexed", 0))
    return {"documents": documents, "bytes": dict(sizes), "total": sum(sizes.values())}


def _part(name: str) -> str:
    for part, pattern in _PARTS:
        if pattern.search(name):
            return part
    return "other"


def print_disk(disk: dict) -> None:
    documents = max(1, disk["documents"])
    rows = [
        [
            part,
            f"{size / 1e6:,.1f}",
            f"{size / documents:,.0f}",
            f"{100 * size / disk['total']:.0f}%",
        ]
        for part, size in sorted(disk["bytes"].items(), key=lambda item: -item[1])
    ]
    rows.append(["all", f"{disk['total'] / 1e6:,.1f}", f"{disk['total'] / documents:,.0f}", ""])
    print(f"\nIndex on disk, {disk['documents']:,} records\n")
    print(format_table(["part", "MB", "bytes/record", "share"], rows))


# -- serving workers --------------------------------------------------------------------------
def smaps(pid: int) -> dict[str, float]:
    """RSS, PSS and USS of a process, in MB, and how much of its USS is anonymous memory (its
    heap: what it holds alone) and how much file pages that no other process has mapped yet
    (index files this worker alone has read so far: page cache, not a copy)."""
    totals: Counter[str] = Counter()
    anonymous = True
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            head = line.split(maxsplit=6)
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                # A mapping's first line: address range, perms, offset, device, inode, path.
                anonymous = len(head) < 6 or head[4] == "0"
                continue
            match = _SMAPS_FIELD.match(line.strip())
            if not match:
                continue
            name, kb = match.group(1), int(match.group(2))
            totals[name] += kb
            if name in ("Private_Clean", "Private_Dirty"):
                totals["uss_anonymous" if anonymous else "uss_file"] += kb
    return {
        "rss_mb": totals["Rss"] / 1024,
        "pss_mb": totals["Pss"] / 1024,
        "uss_mb": (totals["Private_Clean"] + totals["Private_Dirty"]) / 1024,
        "uss_anonymous_mb": totals["uss_anonymous"] / 1024,
        "uss_file_mb": totals["uss_file"] / 1024,
        "file_mb": (totals["Rss"] - totals["Anonymous"]) / 1024,
    }


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return sorted(found)


def worker_memory(index_dir: Path, texts: list[str], workers: int = 2) -> dict:
    """Each worker's memory after `workers` clients sent every query of `texts` between them."""
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        server = start_gunicorn(
            index_dir,
            port,
            Path(workdir) / "gunicorn.log",
            [],
            extra_env={"SEARCHSVC_WORKERS": str(workers), "SEARCHSVC_VECTORS": "off"},
        )
        try:
            started = time.perf_counter()
            errors = _send_all(port, texts, workers)
            seconds = time.perf_counter() - started
            pids = children(server.pid)
            busy = [smaps(pid) for pid in pids]
            # A worker idle for a second gives back what its searches freed (serving/worker.py).
            time.sleep(IDLE_SECONDS)
            figures = {
                "workers": [smaps(pid) for pid in pids],
                "workers_busy": busy,
                "master": smaps(server.pid),
            }
        finally:
            stop_gunicorn(server)
    figures.update(queries=len(texts), errors=errors, seconds=seconds)
    return figures


def _send_all(port: int, texts: list[str], clients: int) -> int:
    errors = 0
    lock = threading.Lock()

    def send(share: list[str]) -> None:
        nonlocal errors
        for text in share:
            params = {"q": text, "facets": ",".join(FACETS), "highlight": "true", "per_page": 10}
            url = f"http://127.0.0.1:{port}/api/v1/search?{urlencode(params)}"
            try:
                with urllib.request.urlopen(url, timeout=120) as response:
                    response.read()
            except OSError:
                with lock:
                    errors += 1

    threads = [threading.Thread(target=send, args=(texts[n::clients],)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def print_workers(figures: dict) -> None:
    named = [(f"worker {n + 1}, busy", w) for n, w in enumerate(figures.get("workers_busy", []))]
    named += [(f"worker {n + 1}, idle", w) for n, w in enumerate(figures["workers"])]
    named.append(("master", figures["master"]))
    rows = [[name, *(f"{one.get(key, 0):,.0f}" for key in _COLUMNS)] for name, one in named]
    print(
        f"\nServing memory after {figures['queries']} mode (c) queries over HTTP "
        f"({figures['errors']} errors, {figures['seconds']:.0f} s): right after the last answer"
        f" (busy) and after {IDLE_SECONDS} s without a request (idle)\n"
    )
    headers = ["process", "RSS MB", "PSS MB", "USS MB", "of it anonymous", "of it file pages"]
    print(format_table([*headers, "file-backed RSS MB"], rows))


# -- what the heap holds ------------------------------------------------------------------------
def heap_by_source(index_dir: Path, texts: list[str]) -> dict:
    """In this process, traced: the service opened on the index and the queries answered, then
    the Python and numpy memory still held, by the source file that allocated it (memory-mapped
    index files are not traced: they are shared between workers)."""
    import tracemalloc

    import searchsvc.backends.whoosh.backend  # noqa: F401  (imports are not the index's)
    from searchsvc.service import SearchService

    tracemalloc.start()
    service = SearchService.open(index_dir)
    for text in texts:
        service.search(q=text, facets=FACETS, facet_size=10, per_page=10, highlight=True)
    snapshot = tracemalloc.take_snapshot()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    by_file: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename
        short = name.split("site-packages/")[-1].split("/work/main/")[-1]
        by_file[short] += stat.size
    service.close()
    return {"held": held, "by_file": dict(by_file.most_common(12))}


def print_heap(heap: dict) -> None:
    print(f"\nPython and numpy memory held after the queries: {heap['held'] / 1e6:,.1f} MB\n")
    rows = [[name, f"{size / 1e6:,.1f}"] for name, size in heap["by_file"].items()]
    print(format_table(["allocated in", "MB"], rows))


if __name__ == "__main__":
    log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    sys.exit(main())
