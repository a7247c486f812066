r"""HTTP speed of /api/v1/search through gunicorn, beside the same queries in-process.

The issue's figures are on the arXiv-2025 index (40,717 records). Build it once, then run:

    .venv/bin/searchsvc index ../shared/data/arxiv-2025/arxiv-2025-kaggle-format.jsonl.gz \
        --index-dir /tmp/arxiv-2025-index
    .venv/bin/python -m benchmarks.bench_http --index-dir /tmp/arxiv-2025-index

(`--index-dir` defaults to SEARCHSVC_INDEX_DIR, else `index/`: the seed corpus of `make run`.)

Starts gunicorn with searchsvc/serving/gunicorn_conf.py (workers = CPU count unless
SEARCHSVC_WORKERS says otherwise; `--gunicorn-args "--threads 2"` to try other settings) on a
free 127.0.0.1 port over the index, drives it with wrk (Debian: `apt-get install wrk`) at 1, 8
and 32 concurrent connections (kept alive if the worker class does) with a Lua script cycling
through a seeded query set (facets + highlights, gzip accepted), and prints throughput, p50/p99
latency and the workers' CPU time per request next to the in-process figures of the same
queries (SearchService.search with the same facets and highlights, one thread).

The HTTP overhead per request is p50 over HTTP with one client minus p50 in-process. On a shared
machine whole-request times drift by more than the overhead within a minute, so the two are
measured in alternation: `--pairs` rounds, each whole in-process passes over the query set for
half of `--duration` and then wrk with one connection for as long; the overhead is the median of
the rounds' differences, and the 1-client row gives the medians of the rounds' figures. Then
splits: the workers' CPU time per request minus the in-process CPU time per query; the
platform's part, from the same gunicorn settings serving benchmarks/spin_app.py, an app that
only spins for the in-process p50 and answers as many bytes as a search; and, within each
request, its Server-Timing header (client latency minus the engine's time). Every worker is
warmed up on the whole query set first, as the in-process side is.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.common import (
    ROOT,
    format_table,
    log,
    make_queries,
    percentile,
    print_section,
    timed,
)
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.service import SearchService

LUA = """
local paths = {%(paths)s}
local threads = 0
function setup(thread)
  thread:set("offset", threads * 17)
  threads = threads + 1
end
function init(args)
  counter = offset or 0
  %(headers)s
end
function request()
  counter = counter + 1
  return wrk.format("GET", paths[(counter %% #paths) + 1])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %%d, "duration_us": %%d, "p50_us": %%d, "p99_us": %%d, "errors": %%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


WARM_UP_PASSES = 8


def search_path(text: str) -> str:
    params = {"q": text, "facets": ",".join(FACET_NAMES), "highlight": "true"}
    return "/api/v1/search?" + urlencode(params)


def in_process(service: SearchService, texts: list[str]) -> list[tuple[float, float]]:
    """(wall, CPU) milliseconds per query of SearchService.search, one pass over `texts`."""
    return [
        timed(lambda t=text: service.search(t, facets=FACET_NAMES, highlight=True))[:2]
        for text in texts
    ]


def in_process_for(
    service: SearchService, texts: list[str], seconds: float
) -> list[tuple[float, float]]:
    """Whole passes over `texts` until `seconds` have gone by: as long as the wrk run it pairs
    with, so each side's p50 rests on as many queries, taken over as long a stretch of the
    machine's drift (a single pass took under a second, and its p50 swung with that second)."""
    samples = []
    deadline = time.perf_counter() + seconds
    while not samples or time.perf_counter() < deadline:
        samples += in_process(service, texts)
    return samples


def overhead_samples(port: int, texts: list[str], rounds: int, gzip_ok: bool) -> list[dict]:
    """Sequential requests on one keep-alive connection, each split by its Server-Timing header.

    The split is taken within each request, so it holds even when other work on the machine
    makes whole-request times swing far more than the overhead being measured. The client's
    time ends when the body is read, as wrk's does (decoding it is the client's business).
    """
    headers = {"Accept-Encoding": "gzip"} if gzip_ok else {}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    samples = []
    for _ in range(rounds):
        for text in texts:
            started = time.perf_counter()
            connection.request("GET", search_path(text), headers=headers)
            response = connection.getresponse()
            body = response.read()
            client_ms = (time.perf_counter() - started) * 1000
            wire_bytes = len(body)
            if response.getheader("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            json.loads(body)
            if response.will_close:
                connection.close()  # the next request connects again
            timing = dict(
                part.strip().split(";dur=")
                for part in response.getheader("Server-Timing").split(",")
            )
            samples.append(
                {
                    "client": client_ms,
                    "app": float(timing["app"]),
                    "search": float(timing["search"]),
                    "bytes": wire_bytes,
                }
            )
    connection.close()
    return samples


def workers_cpu_seconds(master_pid: int) -> float:
    """CPU time (user + system) used so far by the gunicorn workers of `master_pid` (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # Fields after the parenthesised command: state, ppid, ... utime (14), stime (15).
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        if int(fields[1]) == master_pid:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_gunicorn(
    index_dir: Path,
    port: int,
    log_path: Path,
    extra_args: list[str],
    app: str = "wsgi:app",
    extra_env: dict[str, str] | None = None,
) -> subprocess.Popen:
    env = {**os.environ, "SEARCHSVC_INDEX_DIR": str(index_dir), **(extra_env or {})}
    gunicorn = Path(sys.executable).with_name("gunicorn")
    command = [str(gunicorn), "--config", "python:searchsvc.serving.gunicorn_conf", *extra_args]
    command += ["--bind", f"127.0.0.1:{port}", app]
    with open(log_path, "wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5):
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"gunicorn did not get ready; see {log_path}")


def stop_gunicorn(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)  # nothing happens once it has exited
    process.wait(timeout=30)


def platform_floor(
    workdir: Path, extra_args: list[str], spin_ms: float, body_bytes: int, seconds: float
) -> tuple[float, float]:
    """1-client p50 (ms) of gunicorn, with the service's settings, serving benchmarks.spin_app:
    answering at once, and after spinning `spin_ms`, with answers of `body_bytes`."""
    script = workdir / "spin.lua"
    script.write_text(LUA % {"paths": '"/"', "headers": ""})
    p50s = []
    for spin in (0.0, spin_ms):
        port = free_port()
        env = {"BENCH_SPIN_MS": f"{spin:.3f}", "BENCH_SPIN_BYTES": str(body_bytes)}
        server = start_gunicorn(
            Path("."), port, workdir / "spin.log", extra_args, "benchmarks.spin_app:app", env
        )
        try:
            url = f"http://127.0.0.1:{port}"
            run_wrk(url, script, 1, 1)
            p50s.append(run_wrk(url, script, 1, seconds)["p50_us"] / 1000)
        finally:
            stop_gunicorn(server)
    at_once, after_spin = p50s
    return at_once, after_spin


def run_wrk(url: str, script: Path, connections: int, seconds: float) -> dict:
    threads = min(connections, os.cpu_count() or 1)
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "30s",
    ]
    command += ["-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next(line for line in output.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.add_argument(
        "--index-dir",
        type=Path,
        default=Path(os.environ.get("SEARCHSVC_INDEX_DIR") or ROOT / "index"),
        help="the index to serve, read-only (default: $SEARCHSVC_INDEX_DIR, else index/)",
    )
    parser.add_argument("--queries", type=int, default=100, help="query set size")
    parser.add_argument(
        "--pairs", type=int, default=6, help="rounds of in-process queries + 1-client wrk run"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=10.0,
        help="seconds per wrk run; a round of the pairs runs half in-process, half over HTTP",
    )
    parser.add_argument(
        "--concurrency", default="8,32", help="comma list of clients beyond the 1 of the pairs"
    )
    parser.add_argument("--no-gzip", action="store_true", help="do not send Accept-Encoding")
    parser.add_argument(
        "--gunicorn-args",
        default="",
        help='extra gunicorn options over the config file, e.g. "--threads 2"',
    )
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    if args.pairs < 1:
        raise SystemExit("--pairs must be at least 1")

    service = SearchService.open(args.index_dir)
    records = list(service.records())
    texts = [query.text for query in make_queries(records, args.queries)]
    log(f"{len(records)} records, {len(texts)} queries; in-process warm-up pass...")
    local = in_process(service, texts)  # warm-up, not counted
    mean_ms = sum(wall for wall, _ in local) / len(local)

    workdir = Path(tempfile.mkdtemp(prefix="bench-http-"))
    headers = "" if args.no_gzip else 'wrk.headers["Accept-Encoding"] = "gzip"'
    paths = ", ".join(json.dumps(search_path(text)) for text in texts)
    script = workdir / "queries.lua"
    script.write_text(LUA % {"paths": paths, "headers": headers})
    port = free_port()
    extra_args = shlex.split(args.gunicorn_args)
    server = start_gunicorn(args.index_dir, port, workdir / "gunicorn.log", extra_args)
    url = f"http://127.0.0.1:{port}"
    workers = int(os.environ.get("SEARCHSVC_WORKERS") or len(os.sched_getaffinity(0)))
    local = []
    pairs = []  # (in-process p50, wrk result) per round
    local_p99s = []
    rows = []
    try:
        # The engine caches per process (posting lists among others) and the in-process
        # figures are of warm queries, so every worker must have answered every query before
        # the timed runs. Which worker answers a request is chance: the time of eight passes of
        # the query set one at a time (more passes with several workers) leaves a (worker,
        # query) pair unseen with odds under 1 in 2**8 with two workers.
        warm_up = max(5.0, WARM_UP_PASSES * len(texts) * mean_ms / 1000)
        log(f"warm-up: {4 * workers} connections for {warm_up:.0f} s...")
        run_wrk(url, script, 4 * workers, warm_up)
        seconds = max(2.0, args.duration / 2)
        log(f"{args.pairs} rounds: {seconds:g} s in-process, then 1 connection as long...")
        for _ in range(args.pairs):
            round_local = in_process_for(service, texts, seconds)
            local += round_local
            cpu_before = workers_cpu_seconds(server.pid)
            result = run_wrk(url, script, 1, seconds)
            result["cpu_ms"] = (workers_cpu_seconds(server.pid) - cpu_before) * 1000
            walls = [wall for wall, _ in round_local]
            local_p99s.append(percentile(walls, 99))
            pairs.append((percentile(walls, 50), result))
        rows.append((1, _one_client_summary([result for _, result in pairs]), load_average()))
        for clients in (int(c) for c in args.concurrency.split(",") if c.strip()):
            log(f"wrk with {clients} connections for {args.duration:g} s...")
            cpu_before = workers_cpu_seconds(server.pid)
            result = run_wrk(url, script, clients, args.duration)
            result["cpu_ms"] = (workers_cpu_seconds(server.pid) - cpu_before) * 1000
            rows.append((clients, result, load_average()))
        log("sequential requests, split by Server-Timing...")
        samples = overhead_samples(port, texts, 3, not args.no_gzip)
        stop_gunicorn(server)  # before the platform's part, which starts its own
        local_p50 = statistics.median(p50 for p50, _ in pairs)
        body_bytes = round(statistics.median(sample["bytes"] for sample in samples))
        log(f"the platform's part: an app that only spins {local_p50:.2f} ms...")
        at_once, after_spin = platform_floor(workdir, extra_args, local_p50, body_bytes, seconds)
    finally:
        stop_gunicorn(server)
        shutil.rmtree(workdir, ignore_errors=True)
        service.close()

    local_wall = [wall for wall, _ in local]
    local_cpu = sum(cpu for _, cpu in local) / len(local)
    table = [
        (
            "in-process, 1 thread",
            f"{1000 / (sum(local_wall) / len(local_wall)):.1f}",
            f"{local_p50:.2f}",
            f"{statistics.median(local_p99s):.2f}",
            f"{local_cpu:.2f}",
            "-",
            "-",
        )
    ]
    for clients, result, load in rows:
        table.append(
            (
                f"HTTP, {clients} client{'s' * (clients > 1)}",
                f"{result['requests'] / (result['duration_us'] / 1e6):.1f}",
                f"{result['p50_us'] / 1000:.2f}",
                f"{result['p99_us'] / 1000:.2f}",
                f"{result['cpu_ms'] / max(result['requests'], 1):.2f}",
                str(result["errors"]),
                load,
            )
        )
    settings = f"gunicorn {workers} workers {args.gunicorn_args}".strip()
    print_section(
        f"/api/v1/search, facets + highlights: {len(records)} records, {len(texts)} queries, "
        f"{settings}, {'no gzip' if args.no_gzip else 'gzip'}"
    )
    headers = ("", "req/s", "p50 ms", "p99 ms", "CPU ms/req", "errors", "loadavg")
    print(format_table(headers, table))
    print(
        f"\n(in-process and 1 client: medians of {args.pairs} alternating rounds' p50 and p99;"
        " CPU ms/req: the workers' CPU time per answered request, in-process: per query.)"
    )
    differences = [result["p50_us"] / 1000 - p50 for p50, result in pairs]
    print(
        f"\nHTTP overhead per request (p50 HTTP 1 client - p50 in-process, median of"
        f" {len(pairs)} rounds): {statistics.median(differences):.2f} ms"
    )
    rounds = ", ".join(f"{result['p50_us'] / 1000:.2f}-{p50:.2f}" for p50, result in pairs)
    print(f"  rounds in order, HTTP p50 - in-process p50: {rounds}")
    single = rows[0][1]
    cpu_overhead = single["cpu_ms"] / max(single["requests"], 1) - local_cpu
    print(f"CPU overhead per request (worker CPU - in-process CPU): {cpu_overhead:.2f} ms")
    print(
        f"The platform's part: gunicorn as above serving benchmarks/spin_app.py ({body_bytes:,}"
        f"-byte answers), 1 client: p50 {at_once:.2f} ms answering at once, p50 - spin"
        f" {after_spin - local_p50:.2f} ms spinning {local_p50:.2f} ms (the in-process"
        " p50) first; the rest of the HTTP overhead is the service's app."
    )
    split = [
        ("client latency - engine time (the HTTP overhead)", "client", "search"),
        ("  of which in the app (parse, JSON, gzip, headers)", "app", "search"),
        ("  of which gunicorn, sockets and the client", "client", "app"),
    ]
    print("\nHTTP overhead within each request (Server-Timing), 1 client, sequential:\n")
    split_rows = []
    for label, whole, part in split:
        values = [sample[whole] - sample[part] for sample in samples]
        split_rows.append((label, *_p50_p90(values)))
    # The engine's own time in a worker beside in-process: a gap here is the machine (or the
    # worker's state), not HTTP, yet it lands in the p50 difference above.
    engine = [sample["search"] for sample in samples]
    split_rows.append(
        ("engine time in the worker (Server-Timing search)", *_p50_p90(engine)),
    )
    split_rows.append(("engine time in-process (for comparison)", *_p50_p90(local_wall)))
    print(format_table(("", "p50 ms", "p90 ms"), split_rows))


def _one_client_summary(results: list[dict]) -> dict:
    """The 1-client rounds as one row: summed counts, the medians of the rounds' percentiles."""
    return {
        "requests": sum(result["requests"] for result in results),
        "duration_us": sum(result["duration_us"] for result in results),
        "p50_us": statistics.median(result["p50_us"] for result in results),
        "p99_us": statistics.median(result["p99_us"] for result in results),
        "errors": sum(result["errors"] for result in results),
        "cpu_ms": sum(result["cpu_ms"] for result in results),
    }


def _p50_p90(values: list[float]) -> tuple[str, str]:
    return f"{percentile(values, 50):.2f}", f"{percentile(values, 90):.2f}"


if __name__ == "__main__":
    main()
