"""SolrCloud beside embedded Whoosh, through the engine contract, on the arXiv-2025 records.

    python -m benchmarks.bench_solr [--records N] [--keep-data DIR]

One run, both engines side by side, on the same Record list and the same query set:

- the local SolrCloud (`searchsvc.devtools.solrcluster.LocalCluster`: ZooKeeper and two Solr nodes,
  one JVM each, on free ports, data in a temporary directory): time from `start()` until every node
  is live, and the time to create the collection (configset upload + CREATE of SHARDS x REPLICAS,
  waiting for its final state), both as the backend's first `rebuild()` does them;
- ingest through `backend.rebuild(records)`: records/s into the SolrCloud collection and into a
  Whoosh index directory (split for Solr into collection creation, sending, commit);
- search_speed.py's query set in its mode (c), faceted (author, year, category; exact counts)
  and highlighted, through each backend's `search()` in this process, one thread: a warm-up
  pass of other queries, then `--passes` passes over the timed set, the engines alternating;
  p50/p99 of wall-clock and CPU time, for the first pass (nothing cached) and for all passes,
  with Solr's QTime of the select request, the HTTP requests a search made and the JVMs' CPU
  per search; a line fitted to time against the matches of each query (what grows with the
  corpus); Solr's totals and top-10 facet counts against Whoosh's;
- the cluster's memory (VmRSS of each JVM from /proc after the ingest and after the queries;
  Java heap from `jcmd PID GC.heap_info`, the live set after a full GC at the end) and disk
  (du of each node's directory; each core's documents, segments and index size from the core
  admin API and `/admin/segments`).

Figures go to stdout as Markdown tables, progress to stderr. The load average is printed at
each phase: the machine is shared, so compare figures taken at similar loads.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    format_table,
    load_arxiv,
    log,
    make_queries,
    percentile,
    print_section,
    timed,
)
from benchmarks.engines import MODES, Answer, Task
from benchmarks.search_speed import (
    EXACTNESS_HEADERS,
    WARM_UP_SEED_OFFSET,
    compare_counts,
    kind_counts,
    load_average,
    top_overlap,
)
from searchsvc.domain.records import Record

COLLECTION = "bench"
# The timed mode of search_speed.py: faceted (exact counts) and highlighted, top 10.
MODE = "c"
ENGINES = ("whoosh", "solr")


# -- options ----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_solr",
        description=__doc__.split("\n\n")[0]
        + " Starts a local SolrCloud (ZooKeeper + 2 Solr JVMs) on free ports, builds both"
        " indexes from the same records, times faceted, highlighted searches on both, and"
        " reports the cluster's start, ingest, latency, memory and disk. 3-6 minutes on 2"
        " cores for the whole corpus.",
    )
    parser.add_argument(
        "--records", type=int, default=None, metavar="N", help="index the first N records only"
    )
    parser.add_argument(
        "--keep-data",
        metavar="DIR",
        help="put the cluster's data (DIR/solr) and the Whoosh index (DIR/whoosh) in DIR, a "
        "new or empty directory, and keep them afterwards (the JVMs are stopped either way; "
        "`searchsvc solr start --data DIR/solr` starts the cluster again); default: a "
        "temporary directory, removed at the end",
    )
    parser.add_argument(
        "--shards", type=int, default=2, help="shards of the collection (default 2)"
    )
    parser.add_argument(
        "--replicas", type=int, default=2, help="replicas of each shard (default 2)"
    )
    parser.add_argument(
        "--heap", default="512m", help="-Xmx of each Solr node (default 512m, LocalCluster's)"
    )
    parser.add_argument(
        "--java-options",
        default="",
        metavar="OPTS",
        help="more JVM options for ZooKeeper and the nodes, after LocalCluster's fast-start"
        " ones (-XX:+UseSerialGC -XX:TieredStopAtLevel=1), e.g. '-XX:TieredStopAtLevel=4' for"
        " the C2 compiler as a long-running server would use it (write it with =:"
        " --java-options='-XX:TieredStopAtLevel=4')",
    )
    parser.add_argument("--queries", type=int, default=200, help="timed queries (default 200)")
    parser.add_argument(
        "--warm-up",
        type=int,
        default=200,
        help="warm-up queries, disjoint from the timed ones, one pass per engine (default 200)",
    )
    parser.add_argument(
        "--passes", type=int, default=5, help="timed passes over the query set (default 5)"
    )
    parser.add_argument("--seed", type=int, default=2025, help="query set seed (default 2025)")
    parser.add_argument(
        "--reuse-records",
        action="store_true",
        help="use the newest converted records even if searchsvc.sources changed since "
        "(skips minutes of TeX conversion)",
    )
    args = parser.parse_args(argv)
    if args.passes < 1 or args.queries < 4:
        parser.error("--passes must be 1 or more and --queries 4 or more")
    return args


# -- /proc, disk, Solr's admin APIs -----------------------------------------------------------
def free_ports(count: int) -> list[int]:
    """`count` distinct free ports on 127.0.0.1 (held open together, so none repeats)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            probe = stack.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
        return ports


def proc_kib(pid: int, key: str) -> int | None:
    """A `key: N kB` line of /proc/PID/status (VmRSS, VmHWM); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a process has used (/proc/PID/stat); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command: state is field 3, utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) or 0.0 for name, pid in pids.items()}


def cpu_since(before: dict[str, float], pids: dict[str, int]) -> dict[str, float]:
    after = cpu_of(pids)
    return {name: after[name] - before.get(name, 0.0) for name in after}


def du_bytes(path: Path) -> int:
    """Bytes allocated on disk under `path`, as `du` counts them (each inode once)."""
    total, seen = 0, set()
    for root, _dirs, files in os.walk(path):
        for name in [".", *files]:
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # removed meanwhile (merges, tlog rolls)
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total


def solr_json(url: str, params: dict[str, str]) -> dict[str, Any] | None:
    import requests

    try:
        response = requests.get(url, params={**params, "wt": "json"}, timeout=30)
        response.raise_for_status()
        return response.json()
    except (requests.RequestException, ValueError) as exc:
        log(f"  {url}: {exc}")
        return None


_HEAP_LINE = re.compile(r"^ (\S.*?)\s+total (\d+)K, used (\d+)K", re.MULTILINE)


def heap_mb(pid: int, collect: bool = False) -> tuple[float, float] | None:
    """(used, committed) Java heap of a JVM in MB, from `jcmd PID GC.heap_info` (the young and
    old generations; used includes garbage not yet collected). `collect` runs a full GC first
    (`jcmd PID GC.run`), so that used is the live set. None without jcmd or when it fails."""
    jcmd = shutil.which("jcmd")
    if jcmd is None:
        return None
    try:
        if collect:
            subprocess.run([jcmd, str(pid), "GC.run"], capture_output=True, timeout=120)
        output = subprocess.run(
            [jcmd, str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    spaces = [m for m in _HEAP_LINE.finditer(output) if not m.group(1).startswith("Metaspace")]
    if not spaces:
        return None
    used = sum(int(m.group(3)) for m in spaces) / 1024
    committed = sum(int(m.group(2)) for m in spaces) / 1024
    return used, committed


@dataclass
class Core:
    node: str
    name: str
    shard: str
    docs: int
    index_bytes: int  # the index directory (CoreAdmin STATUS): files of older segments too
    segments: int
    live_bytes: int  # the segments the current searcher reads (/admin/segments)


def node_cores(node_url: str, node: str) -> list[Core]:
    """Each core a node holds: its shard, documents and index size (core admin STATUS)."""
    answer = solr_json(node_url + "/admin/cores", {"action": "STATUS"}) or {}
    cores = []
    for name, status in sorted((answer.get("status") or {}).items()):
        index = status.get("index") or {}
        cloud = status.get("cloud") or {}
        match = re.search(r"_(shard\d+)_replica", name)
        shard = cloud.get("shard") or (match.group(1) if match else "?")
        segments = (solr_json(f"{node_url}/{name}/admin/segments", {}) or {}).get("segments", {})
        live = sum(int(segment.get("sizeInBytes", 0)) for segment in segments.values())
        cores.append(
            Core(
                node,
                name,
                shard,
                int(index.get("numDocs", 0)),
                int(index.get("sizeInBytes", 0)),
                int(index.get("segmentCount", 0)),
                live,
            )
        )
    return cores


# -- the cluster -------------------------------------------------------------------------------
@dataclass
class Snapshot:
    """The cluster's processes and disk at one moment."""

    label: str
    load: str
    rss_kib: dict[str, int | None] = field(default_factory=dict)
    hwm_kib: dict[str, int | None] = field(default_factory=dict)
    heap: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    live_heap: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    du: dict[str, int] = field(default_factory=dict)
    cores: list[Core] = field(default_factory=list)


def snapshot(label: str, cluster, pids: dict[str, int], live_heap: bool = False) -> Snapshot:
    """RSS first (nothing else touches the JVMs before), then heap, disk and cores; with
    `live_heap`, a full GC of each JVM at the end for its live set (it may shrink the heap,
    so only for the last snapshot)."""
    shot = Snapshot(label, load_average())
    for name, pid in pids.items():
        shot.rss_kib[name] = proc_kib(pid, "VmRSS")
        shot.hwm_kib[name] = proc_kib(pid, "VmHWM")
    for name, pid in pids.items():
        shot.heap[name] = heap_mb(pid)
    shot.du["zookeeper"] = du_bytes(cluster.data_dir / "zookeeper")
    for port, url in zip(cluster.node_ports, cluster.node_urls, strict=True):
        node = f"node-{port}"
        shot.du[node] = du_bytes(cluster.data_dir / node)
        shot.cores.extend(node_cores(url, node))
    if live_heap:
        for name, pid in pids.items():
            shot.live_heap[name] = heap_mb(pid, collect=True)
    return shot


def time_cluster_start(cluster) -> tuple[float, float | None]:
    """Seconds from `start()` until every node is live, and until ZooKeeper answered `ruok`."""
    from searchsvc.devtools.solrcluster.status import zookeeper_ok

    zk_ready: list[float] = []
    done = threading.Event()
    started = time.perf_counter()

    def watch_zookeeper() -> None:
        while not done.is_set():
            if zookeeper_ok(cluster.zk_port, timeout=0.5):
                zk_ready.append(time.perf_counter() - started)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_zookeeper, daemon=True)
    watcher.start()
    try:
        cluster.start()
    finally:
        done.set()
        watcher.join()
    return time.perf_counter() - started, (zk_ready[0] if zk_ready else None)


# -- ingest ------------------------------------------------------------------------------------
class Stages:
    """A contract Progress that keeps the time of each stage (and logs the advance)."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total, self.done = name, total, 0
        self.started = time.perf_counter()
        self.marks: dict[str, float] = {}
        self._logged = 0

    def advance(self, count: int) -> None:
        self.done += count
        if self.done - self._logged >= 10_000 or self.done == self.total:
            self._logged = self.done
            seconds = time.perf_counter() - self.started
            log(f"  {self.name}: {self.done:,} records sent, {seconds:.1f} s")

    def stage(self, name: str) -> None:
        self.marks.setdefault(name, time.perf_counter() - self.started)


@dataclass
class Ingest:
    engine: str
    records: int
    seconds: float
    cpu_seconds: float
    writer: str
    load: str
    parts: dict[str, float] = field(default_factory=dict)
    # CPU seconds of the other processes doing the work: the JVMs, or Whoosh's writers.
    other_cpu: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def wrap_timing(owner: object, method: str, into: dict[str, float], key: str) -> None:
    """Replace `owner.method` (on the instance only) by a wrapper adding its seconds to
    `into[key]`: the backend's own steps timed without changing its code."""
    original = getattr(owner, method)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[key] = into.get(key, 0.0) + time.perf_counter() - started

    setattr(owner, method, wrapper)


def ingest(
    engine: str, backend, records: Sequence[Record], jvms: dict[str, int] | None = None
) -> Ingest:
    """`backend.rebuild(records)` timed; the CPU of `jvms` (Solr) or of the child processes
    (Whoosh's writers) is counted too."""
    log(f"{engine}: rebuild with {len(records):,} records ...")
    parts: dict[str, float] = {}
    if engine == "solr":
        collections = backend.collections
        wrap_timing(collections, "ensure_configset", parts, "configset upload")
        wrap_timing(collections, "create_generation", parts, "create collection")
        wrap_timing(collections, "point_alias", parts, "alias")
    progress = Stages(engine, len(records))
    load = load_average()
    jvm_before = cpu_of(jvms or {})
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_started = time.process_time()
    started = time.perf_counter()
    result = backend.rebuild(records, progress=progress)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    if jvms:
        other_cpu = cpu_since(jvm_before, jvms)
    else:
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = now.ru_utime + now.ru_stime - children.ru_utime - children.ru_stime
        other_cpu = {"writer processes": max(0.0, used)}
    if "commit" in progress.marks:
        parts["commit (to the end)"] = seconds - progress.marks["commit"]
        label = "send records" if engine == "solr" else "index records"
        parts[label] = progress.marks["commit"] - parts.get("create collection", 0.0)
    log(f"  {seconds:.1f} s, {len(records) / seconds:,.0f} records/s ({result.writer})")
    return Ingest(engine, len(records), seconds, cpu, result.writer, load, parts, other_cpu)


# -- searches ----------------------------------------------------------------------------------
@dataclass
class Sample:
    wall_ms: float
    cpu_ms: float
    qtime_ms: float | None = None  # Solr's QTime of the select request
    requests: int = 0  # HTTP requests the search made (Solr)
    jvm_cpu_ms: float | None = None  # CPU the JVMs used meanwhile (in clock ticks: 10 ms)


class RequestLog:
    """Records Solr's QTime of every request a SolrConnection makes (wrapped on the instance)."""

    def __init__(self, connection) -> None:
        self.calls: list[tuple[str, int | None]] = []
        original = connection.request

        def request(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
            answer = original(method, path, *args, **kwargs)
            header = answer.get("responseHeader", {}) if isinstance(answer, dict) else {}
            self.calls.append((path, header.get("QTime")))
            return answer

        connection.request = request


def search_request(task: Task):
    from searchsvc.domain.query import SearchRequest

    return SearchRequest(
        q=task.query,
        per_page=task.limit,
        facets=task.facets,
        facet_size=task.facet_size,
        highlight=task.highlight,
    )


def to_answer(result) -> Answer:
    answer = Answer(ids=[hit.record.id for hit in result.hits], total=result.total)
    for name, values in result.facets.items():
        answer.facets[name] = [(v.value, v.count) for v in values]
    return answer


def one_search(
    backend, task: Task, requests: RequestLog | None, jvms: dict[str, int] | None = None
) -> tuple[Sample, Answer]:
    """One timed search; with `jvms`, the CPU those processes used meanwhile too (coarse: clock
    ticks, so only its mean over many searches means something)."""
    if requests is not None:
        requests.calls.clear()
    request = search_request(task)
    jvm_before = sum(cpu_of(jvms).values()) if jvms else 0.0
    wall, cpu, result = timed(lambda: backend.search(request))
    sample = Sample(wall, cpu)
    if jvms:
        sample.jvm_cpu_ms = (sum(cpu_of(jvms).values()) - jvm_before) * 1000
    if requests is not None:
        sample.requests = len(requests.calls)
        qtimes = [q for path, q in requests.calls if path == "select" and q is not None]
        sample.qtime_ms = float(qtimes[0]) if qtimes else None
    return sample, to_answer(result)


def run_searches(
    backends: dict[str, Any], request_logs, queries, warm_up, passes: int, jvms: dict[str, int]
):
    """Warm-up pass per engine, then `passes` timed passes, the engines' order alternating;
    also the CPU seconds the JVMs used during Solr's timed passes."""
    make_task = MODES[MODE]
    loads = [f"warm-up {load_average()}"]
    for name, backend in backends.items():
        log(f"{name}: warm-up, {len(warm_up)} queries ...")
        for query in warm_up:
            one_search(backend, make_task(query.text), request_logs.get(name))
    samples: dict[str, list[list[Sample]]] = {name: [] for name in backends}
    answers: dict[str, list[Answer]] = {}
    order = list(backends)
    jvm_cpu = dict.fromkeys(jvms, 0.0)
    for number in range(passes):
        loads.append(f"pass {number + 1} {load_average()}")
        for name in order if number % 2 == 0 else reversed(order):
            log(f"{name}: pass {number + 1}/{passes}, {len(queries)} queries ...")
            pass_samples, pass_answers = [], []
            jvm_before = cpu_of(jvms) if name == "solr" else {}
            for query in queries:
                sample, answer = one_search(
                    backends[name],
                    make_task(query.text),
                    request_logs.get(name),
                    jvms if name == "solr" else None,
                )
                pass_samples.append(sample)
                pass_answers.append(answer)
            if name == "solr":
                for process, used in cpu_since(jvm_before, jvms).items():
                    jvm_cpu[process] += used
            samples[name].append(pass_samples)
            answers.setdefault(name, pass_answers)
    return samples, answers, loads, jvm_cpu


# -- tables ------------------------------------------------------------------------------------
def p50_p99(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f}"


def mb(kib_or_bytes: float | None, unit: int) -> str:
    return "-" if kib_or_bytes is None else f"{kib_or_bytes / unit:,.0f}"


def print_cluster(ready: float, zk_ready: float | None, solr: Ingest, settings: str) -> None:
    rows = [
        ["ZooKeeper answers `ruok` (from start())", f"{zk_ready:.1f}" if zk_ready else "-"],
        ["cluster ready: every node live (start() returns)", f"{ready:.1f}"],
        ["configset upload (first rebuild)", f"{solr.parts.get('configset upload', 0):.2f}"],
        [
            f"create collection {settings}, incl. the upload, until its final state",
            f"{solr.parts.get('create collection', 0):.1f}",
        ],
    ]
    print_section("Cluster start and collection", format_table(["step", "seconds"], rows))


def print_ingest(ingests: list[Ingest]) -> None:
    rows = []
    for item in ingests:
        split = ", ".join(f"{k} {v:.1f} s" for k, v in item.parts.items() if k != "alias")
        others = ", ".join(f"{k} {v:.1f}" for k, v in item.other_cpu.items())
        total_cpu = item.cpu_seconds + sum(item.other_cpu.values())
        rows.append(
            [
                item.engine,
                f"{item.records:,}",
                f"{item.seconds:.1f}",
                f"{item.rate:,.0f}",
                f"{item.cpu_seconds:.1f}",
                others or "-",
                f"{item.records / total_cpu:,.0f}" if total_cpu else "-",
                item.writer,
                split or "-",
                item.load,
            ]
        )
    print_section(
        "Ingest: backend.rebuild(records), the same Record list",
        format_table(
            [
                "engine",
                "records",
                "seconds",
                "records/s",
                "CPU s of this process",
                "CPU s of the JVMs / writers",
                "records per CPU-s (all)",
                "writer",
                "split",
                "load avg at start",
            ],
            rows,
        )
        + "\n\nSolr: 500-document JSON update requests from one client thread (this process),"
        " then one commit; each document is indexed by one replica of its shard on each node,"
        " so with 2 replicas on 2 nodes every node indexes every record. CPU seconds (from"
        " /proc, whatever the load) are the steadier figure on a shared machine: records/s"
        " is what the wall clock gave with the other jobs running.",
    )


def print_search(samples: dict[str, list[list[Sample]]], queries, jvm_cpu) -> None:
    passes = len(next(iter(samples.values())))
    searches = passes * len(queries)
    rows = []
    for name, runs in samples.items():
        first = runs[0]
        every = [s for one in runs for s in one]
        qtimes_first = [s.qtime_ms for s in first if s.qtime_ms is not None]
        qtimes = [s.qtime_ms for s in every if s.qtime_ms is not None]
        requests = [s.requests for s in every]
        rows.append(
            [
                name,
                p50_p99([s.wall_ms for s in first]),
                p50_p99([s.wall_ms for s in every]),
                p50_p99([s.cpu_ms for s in every]),
                p50_p99(qtimes_first) if qtimes else "-",
                p50_p99(qtimes) if qtimes else "-",
                f"{sum(requests) / len(requests):.2f}" if any(requests) else "-",
                (
                    f"{sum(jvm_cpu.values()) * 1000 / searches:.1f}"
                    if name == "solr" and jvm_cpu
                    else "-"
                ),
            ]
        )
    print_section(
        f"Faceted + highlighted search (search_speed mode {MODE}), p50 / p99 ms, "
        f"{len(queries)} queries ({kind_counts(queries)})",
        format_table(
            [
                "engine",
                "wall, pass 1",
                f"wall, {passes} passes",
                f"CPU of this process, {passes} passes",
                "Solr QTime, pass 1",
                f"Solr QTime, {passes} passes",
                "HTTP requests / search",
                "JVMs' CPU ms / search (mean)",
            ],
            rows,
        )
        + "\n\nSolr JVMs' CPU over the timed passes: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in jvm_cpu.items())
        + ". Through `backend.search(SearchRequest(q, per_page=10, facets=(author, year, "
        "category), highlight=True))` in this process, one thread. Pass 1 is the first time "
        "each query is asked (after the warm-up set); later passes repeat it, so engine caches "
        "(Solr's queryResultCache and filterCache) may answer. QTime is the select request "
        "as the node that got it timed it (the shards' requests included); the rest of Solr's "
        "wall time is HTTP, JSON, the Python side of the backend (query compiling, "
        "highlighting, did-you-mean when a word is unknown: more requests) and waiting for a"
        " core.",
    )
    per_pass = [
        [name] + [p50_p99([s.wall_ms for s in one]) for one in runs]
        for name, runs in samples.items()
    ]
    print_section(
        "Wall p50 / p99 ms by pass (drift and caching)",
        format_table(["engine"] + [f"pass {i + 1}" for i in range(passes)], per_pass),
    )


def fit(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares intercept and slope of y on x; None when x does not vary."""
    if len(points) < 3 or len({x for x, _ in points}) < 2:
        return None
    slope, intercept = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return intercept, slope


def print_cost_by_matches(samples, answers: dict[str, list[Answer]], records: int) -> None:
    """How the time of a search grows with the records it matches (the exact facet counts go
    over every match): a line fitted over every timed search, per figure."""
    figures: list[tuple[str, str, Callable[[Sample], float | None]]] = [
        ("whoosh", "wall", lambda s: s.wall_ms),
        ("whoosh", "CPU of this process", lambda s: s.cpu_ms),
        ("solr", "wall", lambda s: s.wall_ms),
        ("solr", "QTime", lambda s: s.qtime_ms),
        ("solr", "JVMs' CPU (both nodes)", lambda s: s.jvm_cpu_ms),
        ("solr", "CPU of this process", lambda s: s.cpu_ms),
    ]
    rows = []
    for name, label, value in figures:
        if name not in samples or name not in answers:
            continue
        totals = [answer.total or 0 for answer in answers[name]]
        points = [
            (float(total), y)
            for run in samples[name]
            for total, sample in zip(totals, run, strict=True)
            if (y := value(sample)) is not None
        ]
        line = fit(points)
        if line is None:
            continue
        intercept, slope = line
        rows.append(
            [name, label, f"{intercept:.1f}", f"{slope * 10_000:.2f}", f"{slope * 1e6 / 1e3:.3f}"]
        )
    if not rows:
        return
    totals = sorted(answer.total or 0 for answer in next(iter(answers.values())))
    print_section(
        "Cost against matches: a line fitted over every timed search (ms = a + b x matches)",
        format_table(
            ["engine", "figure", "a: ms at 0 matches", "b: ms per 10,000 matches", "us per match"],
            rows,
        )
        + f"\n\nMatches per query: median {percentile(totals, 50):,.0f}, p90 "
        f"{percentile(totals, 90):,.0f}, max {totals[-1]:,} of {records:,} records (queries are"
        " an OR of their words, so a five-word query matches much of the corpus). Every match is"
        " counted for the exact facet counts, so b is what grows with the corpus: with S shards"
        " of a bigger index, each shard counts its own matches, in parallel when each has a"
        " core of its own. The JVMs' CPU is read in clock ticks per search: its line is right"
        " on average, not per search.",
    )


def print_agreement(answers: dict[str, list[Answer]], queries) -> None:
    if set(answers) != set(ENGINES):
        return
    row, examples = compare_counts(answers["solr"], answers["whoosh"], queries, "solr", "whoosh")
    overlap = top_overlap(answers["solr"], answers["whoosh"], "solr", "whoosh")
    print_section(
        "Same answers? Solr against Whoosh on the first pass",
        format_table(EXACTNESS_HEADERS, [row])
        + f"\n\nTop-10 ids: mean overlap {overlap[2]}, same set {overlap[3]}, same order "
        f"{overlap[4]} of {overlap[5]} queries.",
    )
    # Differing totals first: they say more than a facet's cut.
    examples.sort(key=lambda line: " total " not in line)
    for line in examples[:6]:
        print(f"- {line}")


def print_memory(shots: list[Snapshot], pids: dict[str, int]) -> None:
    def heap(figures: tuple[float, float] | None) -> str:
        return "-" if figures is None else f"{figures[0]:,.0f} / {figures[1]:,.0f}"

    rows = []
    for name, pid in pids.items():
        row = [name, pid]
        for shot in shots:
            row += [mb(shot.rss_kib.get(name), 1024), heap(shot.heap.get(name))]
        row.append(mb(shots[-1].hwm_kib.get(name), 1024))
        row.append(heap(shots[-1].live_heap.get(name)))
        rows.append(row)
    total: list[object] = ["all three", ""]
    for shot in shots:
        values = [v for v in shot.rss_kib.values() if v is not None]
        total += [mb(sum(values), 1024), ""]
    rows.append([*total, "", ""])
    headers = ["process", "pid"]
    for shot in shots:
        headers += [f"RSS MB {shot.label}", f"heap used / committed MB {shot.label}"]
    headers += ["peak RSS MB (VmHWM)", "live heap MB after a full GC / committed"]
    print_section(
        "Cluster memory: VmRSS of each JVM (/proc/PID/status), Java heap (jcmd GC.heap_info)",
        format_table(headers, rows)
        + "\n\nHeap used includes garbage not yet collected (serial GC); the live heap is what"
        " is left after a full GC (`jcmd PID GC.run`, at the very end). The nodes run with"
        " -Xms64m and the -Xmx above, ZooKeeper with -Xmx256m. RSS also holds metaspace, code,"
        " thread stacks and the mapped index files' resident pages; the OS page cache that"
        " holds the index is shared and not counted per process.",
    )


def print_disk(shots: list[Snapshot], whoosh_bytes: int, records: int, replicas: int) -> None:
    rows = []
    for shot in shots:
        rows.append([shot.label, "zookeeper", "-", "-", "-", "-", mb(shot.du["zookeeper"], 2**20)])
        for node in [n for n in shot.du if n != "zookeeper"]:
            cores = [c for c in shot.cores if c.node == node]
            rows.append(
                [
                    shot.label,
                    node,
                    ", ".join(f"{c.shard} ({c.name.rsplit('_', 1)[-1]})" for c in cores),
                    "+".join(f"{c.docs:,}" for c in cores),
                    "+".join(str(c.segments) for c in cores),
                    "; ".join(
                        f"{c.index_bytes / 2**20:,.0f} / {c.live_bytes / 2**20:,.0f}" for c in cores
                    ),
                    mb(shot.du[node], 2**20),
                ]
            )
    rows.append(["", "whoosh index", "-", f"{records:,}", "-", "-", mb(whoosh_bytes, 2**20)])
    last = shots[-1]
    live_per_record = sum(c.live_bytes for c in last.cores) / max(1, replicas) / max(1, records)
    dir_per_record = sum(c.index_bytes for c in last.cores) / max(1, replicas) / max(1, records)
    print_section(
        "Disk",
        format_table(
            [
                "when",
                "node",
                "cores (shard, replica)",
                "documents",
                "segments",
                "core index MB: directory / searcher's segments",
                "du of the node's directory MB",
            ],
            rows,
        )
        + f"\n\nSolr index bytes per record and copy {last.label}: {live_per_record:,.0f} B in"
        f" the segments the searchers read, {dir_per_record:,.0f} B in the index directories"
        f" (cores' sizes / {replicas} replicas / {records:,} records); Whoosh:"
        f" {whoosh_bytes / max(1, records):,.0f} B. An index directory also holds segments"
        " that merges replaced while a searcher still reads them (until the next searcher"
        " opens) and merges in progress; a node's directory also holds its update log (tlog).",
    )


# -- main --------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    from searchsvc.backends import open_backend
    from searchsvc.devtools.solrcluster import LocalCluster

    corpus = load_arxiv(limit=args.records, reuse_records=args.reuse_records)
    records = list(corpus.records)
    queries = make_queries(records, args.queries, seed=args.seed)
    warm_up = make_queries(records, args.warm_up, seed=args.seed + WARM_UP_SEED_OFFSET)
    settings = f"{args.shards} shards x {args.replicas} replicas"

    if args.keep_data:
        base = Path(args.keep_data).resolve()
        if base.exists() and any(base.iterdir()):
            raise SystemExit(f"--keep-data {base}: the directory is not empty")
        base.mkdir(parents=True, exist_ok=True)
    else:
        base = Path(tempfile.mkdtemp(prefix="bench-solr-"))
    zk_port, *node_ports = free_ports(3)
    cluster = LocalCluster(
        base / "solr",
        node_ports=node_ports,
        zk_port=zk_port,
        heap=args.heap,
        java_options=shlex.split(args.java_options),
    )

    print("# SolrCloud beside Whoosh")
    print(
        f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {len(records):,} records ({corpus.name}, "
        f"key {corpus.key}); SolrCloud of {settings} on 2 nodes (-Xmx{args.heap}"
        f"{' ' + args.java_options if args.java_options else ''}) + ZooKeeper, "
        f"one JVM each; {os.cpu_count()} CPUs. Load average at start: {load_average()}."
    )
    backends: dict[str, Any] = {}
    try:
        log("building/checking the Solr jars ...")
        cluster.build()
        log(f"starting the cluster in {cluster.data_dir} ...")
        ready, zk_ready = time_cluster_start(cluster)
        log(f"  live after {ready:.1f} s")
        pids = cluster.running()
        location = cluster.solr_location(COLLECTION)
        options = ["timeout=300"]
        if args.shards != 2:
            options.append(f"shards={args.shards}")
        if args.replicas != 2:
            options.append(f"replicas={args.replicas}")
        backends["whoosh"] = open_backend(base / "whoosh")
        backends["solr"] = open_backend(f"{location}?{'&'.join(options)}")
        request_logs = {"solr": RequestLog(backends["solr"].connection)}

        ingests = [ingest("solr", backends["solr"], records, pids)]
        shots = [snapshot("after ingest", cluster, pids)]
        ingests.append(ingest("whoosh", backends["whoosh"], records))
        whoosh_bytes = du_bytes(base / "whoosh")

        samples, answers, loads, jvm_cpu = run_searches(
            {"whoosh": backends["whoosh"], "solr": backends["solr"]},
            request_logs,
            queries,
            warm_up,
            args.passes,
            pids,
        )
        shots.append(snapshot("after queries", cluster, pids, live_heap=True))

        print_cluster(ready, zk_ready, ingests[0], settings)
        print_ingest(ingests)
        print_search(samples, queries, jvm_cpu)
        print(f"\nLoad average (1, 5, 15 min) by phase: {'; '.join(loads)}.")
        print_cost_by_matches(samples, answers, len(records))
        print_agreement(answers, queries)
        print_memory(shots, pids)
        print_disk(shots, whoosh_bytes, len(records), args.replicas)
    finally:
        for backend in backends.values():
            with contextlib.suppress(Exception):
                backend.close()
        log("stopping the cluster ...")
        cluster.stop()
        if args.keep_data:
            log(f"data kept in {base} (cluster: {base / 'solr'}, Whoosh index: {base / 'whoosh'})")
        else:
            shutil.rmtree(base, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\nLoad average at end: {load_average()}; peak RSS of this process {peak:,.0f} MB "
        f"(records, Whoosh searcher, client); run took {time.perf_counter() - started:.0f} s."
    )
    command = " ".join(["python -m benchmarks.bench_solr", *sys.argv[1:]])
    print(f"\nCommand: `{command}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
