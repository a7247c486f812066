"""HTTP speed of /api/v1/search through gunicorn, beside the same queries in-process.

    .venv/bin/python -m benchmarks.bench_http --index-dir index
    .venv/bin/python -m benchmarks.bench_http --index-dir benchmarks/.cache/... --duration 20

Starts gunicorn with searchsvc/gunicorn_conf.py (workers = CPU count unless SEARCHSVC_WORKERS
says otherwise) on a free 127.0.0.1 port over the given index, drives it with wrk (Debian:
`apt-get install wrk`) at 1, 8 and 32 concurrent connections with a Lua script cycling through a
seeded query set (facets + highlights, gzip accepted), and prints throughput and p50/p99 latency
next to the in-process figures of the same queries (SearchService.search, one thread). The HTTP
overhead per request is given two ways: p50 over HTTP with one client minus p50 in-process, and
within each request, from its Server-Timing header (client latency minus the engine's time).
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import shutil
import signal
import socket
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
from searchsvc.query import FACETS
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


def search_path(text: str) -> str:
    params = {"q": text, "facets": ",".join(FACETS), "highlight": "true"}
    return "/api/v1/search?" + urlencode(params)


def in_process(index_dir: Path, texts: list[str], rounds: int) -> list[float]:
    """Milliseconds per query of SearchService.search, after one warm-up pass."""
    with SearchService.open(index_dir) as service:
        for text in texts:
            service.search(text, facets=FACETS, highlight=True)
        return [
            timed(lambda t=text: service.search(t, facets=FACETS, highlight=True))[0]
            for _ in range(rounds)
            for text in texts
        ]


def overhead_samples(port: int, texts: list[str], rounds: int, gzip_ok: bool) -> list[dict]:
    """Sequential requests, each split by its Server-Timing header into engine, app and rest.

    The split is taken within each request, so it holds even when other work on the machine
    makes whole-request times swing far more than the overhead being measured.
    """
    headers = {"Accept-Encoding": "gzip"} if gzip_ok else {}
    samples = []
    for _ in range(rounds):
        for text in texts:
            started = time.perf_counter()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", search_path(text), headers=headers)
            response = connection.getresponse()
            body = response.read()
            if response.getheader("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            json.loads(body)
            connection.close()
            client_ms = (time.perf_counter() - started) * 1000
            timing = dict(
                part.strip().split(";dur=")
                for part in response.getheader("Server-Timing").split(",")
            )
            samples.append(
                {
                    "client": client_ms,
                    "app": float(timing["app"]),
                    "search": float(timing["search"]),
                }
            )
    return samples


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_gunicorn(index_dir: Path, port: int, log_path: Path) -> subprocess.Popen:
    env = {**os.environ, "SEARCHSVC_INDEX_DIR": str(index_dir)}
    gunicorn = Path(sys.executable).with_name("gunicorn")
    command = [str(gunicorn), "--config", "searchsvc/gunicorn_conf.py"]
    command += ["--bind", f"127.0.0.1:{port}", "wsgi:app"]
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


def run_wrk(url: str, script: Path, connections: int, seconds: float) -> dict:
    threads = min(connections, os.cpu_count() or 1)
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "30s"]
    command += ["-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next(line for line in output.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-dir", type=Path, default=ROOT / "index")
    parser.add_argument("--queries", type=int, default=100, help="query set size")
    parser.add_argument("--rounds", type=int, default=3, help="in-process passes")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    parser.add_argument("--concurrency", default="1,8,32", help="comma list of clients")
    parser.add_argument("--no-gzip", action="store_true", help="do not send Accept-Encoding")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")

    with SearchService.open(args.index_dir) as service:
        records = list(service.records())
    texts = [query.text for query in make_queries(records, args.queries)]
    log(f"{len(records)} records, {len(texts)} queries; in-process pass...")
    local = in_process(args.index_dir, texts, args.rounds)

    workdir = Path(tempfile.mkdtemp(prefix="bench-http-"))
    headers = "" if args.no_gzip else 'wrk.headers["Accept-Encoding"] = "gzip"'
    paths = ", ".join(json.dumps(search_path(text)) for text in texts)
    script = workdir / "queries.lua"
    script.write_text(LUA % {"paths": paths, "headers": headers})
    port = free_port()
    server = start_gunicorn(args.index_dir, port, workdir / "gunicorn.log")
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        log("warm-up (every worker opens the index)...")
        run_wrk(url, script, os.cpu_count() or 1, 3)
        for clients in (int(c) for c in args.concurrency.split(",")):
            log(f"wrk with {clients} connections for {args.duration:g} s...")
            result = run_wrk(url, script, clients, args.duration)
            rows.append((clients, result))
        log("sequential requests, split by Server-Timing...")
        samples = overhead_samples(port, texts, args.rounds, not args.no_gzip)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)

    local_p50 = percentile(local, 50)
    table = [
        (
            "in-process, 1 thread",
            f"{1000 / (sum(local) / len(local)):.1f}",
            f"{local_p50:.2f}",
            f"{percentile(local, 99):.2f}",
            "-",
        )
    ]
    for clients, result in rows:
        table.append(
            (
                f"HTTP, {clients} client{'s' * (clients > 1)}",
                f"{result['requests'] / (result['duration_us'] / 1e6):.1f}",
                f"{result['p50_us'] / 1000:.2f}",
                f"{result['p99_us'] / 1000:.2f}",
                str(result["errors"]),
            )
        )
    workers = os.environ.get("SEARCHSVC_WORKERS") or str(len(os.sched_getaffinity(0)))
    print_section(
        f"/api/v1/search, facets + highlights: {len(records)} records, {len(texts)} queries, "
        f"gunicorn {workers} workers, {'no gzip' if args.no_gzip else 'gzip'}"
    )
    print(format_table(("", "req/s", "p50 ms", "p99 ms", "errors"), table))
    single = next((result for clients, result in rows if clients == 1), None)
    if single is not None:
        overhead = single["p50_us"] / 1000 - local_p50
        print(f"\nHTTP overhead per request (p50 HTTP 1 client - in-process): {overhead:.2f} ms")
    split = [
        ("client latency - engine time (the HTTP overhead)", "client", "search"),
        ("  of which in the app (parse, JSON, gzip, headers)", "app", "search"),
        ("  of which gunicorn, sockets and the client", "client", "app"),
    ]
    print("\nHTTP overhead within each request (Server-Timing), 1 client, sequential:\n")
    rows = []
    for label, whole, part in split:
        values = [sample[whole] - sample[part] for sample in samples]
        rows.append((label, f"{percentile(values, 50):.2f}", f"{percentile(values, 90):.2f}"))
    print(format_table(("", "p50 ms", "p90 ms"), rows))


if __name__ == "__main__":
    main()
