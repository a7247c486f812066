r"""Searches during an attack on the service as the README runs it (issue 19's acceptance).

    .venv/bin/python -m benchmarks.bench_attack            # `searchsvc serve`, 2 workers
    .venv/bin/python -m benchmarks.bench_attack --target gunicorn   # gunicorn alone, for contrast

Indexes seeds/ into a temporary directory and starts the service on a free 127.0.0.1 port with
2 workers. The attack, all at once: 8 clients each sending 16 MB request lines, one after the
other, and 64 connections that send half a request line and then nothing. While it runs, one
client makes 100 ordinary searches in a row (`q=learning`, facets and highlights, each on a new
connection); then the senders stop. Printed: p50/p99/max latency of the searches during the
attack (the acceptance: p99 within 1 s), and for every attack connection how long it took to be
answered or closed (the acceptance: within the configured timeouts, which are printed too).

`--target gunicorn` runs the same against gunicorn alone with the project config, where each
idle connection holds a sync worker until its timeout: searches there time out after
`--search-timeout` seconds, and the run stops after `--max-seconds`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import requests

from benchmarks.common import ROOT, format_table, log, percentile, print_section
from searchsvc.serving import limits
from tests.raw_http import free_port, huge_request_line, send_raw, serve

SEARCHSVC = Path(sys.executable).with_name("searchsvc")
GUNICORN = Path(sys.executable).with_name("gunicorn")
SEARCH = {"q": "learning", "facets": "author,year,category", "per_page": "10"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("serve", "gunicorn"), default="serve")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--senders", type=int, default=8, help="clients sending 16 MB lines")
    parser.add_argument("--idle", type=int, default=64, help="half-open idle connections")
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--search-timeout", type=float, default=35.0)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-attack-") as tmp:
        root = Path(tmp)
        index = str(root / "index")
        subprocess.run(
            [str(SEARCHSVC), "index", str(ROOT / "seeds"), "--index", index],
            check=True,
            capture_output=True,
        )
        log(f"starting {args.target} with {args.workers} workers over the seed corpus")
        env = {
            "PROMETHEUS_MULTIPROC_DIR": str(root / "metrics"),
            "SEARCHSVC_ACCESS_LOG": "",
            # Every client here is 127.0.0.1: the front's per-address request rate would refuse
            # the attack's requests and the searches alike (bench_trickle.py measures the
            # per-address limits, from addresses of their own).
            "SEARCHSVC_FRONT_REQUESTS_PER_SECOND": "0",
        }
        with _started(args.target, index, root / "server.log", args.workers, env) as port:
            run(port, args)


@contextlib.contextmanager
def _started(
    target: str, index: str, log_path: Path, workers: int, env: dict[str, str]
) -> Iterator[int]:
    if target == "serve":
        with serve(index, log_path, workers=workers, env=env) as (port, _):
            yield port
        return
    port = free_port()
    command = [str(GUNICORN), "--config", "python:searchsvc.serving.gunicorn_conf"]
    command += ["--bind", f"127.0.0.1:{port}", "wsgi:app"]
    environ = {**os.environ, **env, "SEARCHSVC_INDEX": index, "SEARCHSVC_WORKERS": str(workers)}
    with open(log_path, "ab") as output:
        process = subprocess.Popen(command, cwd=ROOT, env=environ, stdout=output, stderr=output)
    try:
        deadline = time.monotonic() + 60
        while not _ready(port):
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"gunicorn did not start:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def _ready(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).ok
    except requests.RequestException:
        return False


def run(port: int, args: argparse.Namespace) -> None:
    url = f"http://127.0.0.1:{port}/api/v1/search"
    for _ in range(10):  # warm up both workers
        requests.get(url, params=SEARCH, timeout=args.search_timeout)
    log(f"{args.searches} searches before the attack")
    quiet, quiet_failures = _searches(url, args)

    stop = threading.Event()
    huge: list[tuple[float, int | None, str]] = []
    senders = [
        threading.Thread(target=_send_huge_lines, args=(port, stop, huge), daemon=True)
        for _ in range(args.senders)
    ]
    idle = _IdleConnections(port, args.idle)
    for sender in senders:
        sender.start()
    time.sleep(0.5)  # the attack under way

    log(f"{args.searches} searches during the attack")
    latencies, failures = _searches(url, args)
    stop.set()
    for sender in senders:
        sender.join()
    closed_idle = idle.wait_closed(max(limits.CLIENT_HEADER_TIMEOUT * 3, 60))

    print_section(f"Searches, one client ({_target_label(args)})")
    rows = [
        _search_row("before the attack", quiet, quiet_failures),
        _search_row("during the attack", latencies, failures),
    ]
    print(format_table(["searches", "made", "ok", "failed", "p50", "p99", "max"], rows))

    print_section("Attack connections: time to be answered or closed")
    statuses = sorted({str(status) for _, status, _ in huge})
    endings = sorted({ending for _, _, ending in huge})
    huge_seconds = [seconds for seconds, _, _ in huge]
    idle_seconds = [seconds for seconds in closed_idle if seconds is not None]
    rows = [
        [
            f"{args.senders} clients, 16 MB request lines",
            len(huge),
            f"{', '.join(statuses)} ({', '.join(endings)})",
            _fmt_s(percentile(huge_seconds, 50)),
            _fmt_s(max(huge_seconds, default=float("nan"))),
            0,
        ],
        [
            f"{args.idle} idle half-open connections",
            len(closed_idle),
            "closed",
            _fmt_s(percentile(idle_seconds, 50)),
            _fmt_s(max(idle_seconds, default=float("nan"))),
            sum(seconds is None for seconds in closed_idle),
        ],
    ]
    print(format_table(["attack", "connections", "answer", "p50", "max", "still open"], rows))
    print(
        f"\nConfigured (searchsvc/serving/limits.py): headers within "
        f"{limits.CLIENT_HEADER_TIMEOUT} s, each body read within {limits.CLIENT_BODY_TIMEOUT} s, "
        f"a refused body drained for at most {limits.LINGERING_TIME} s; request line at most "
        f"{limits.HEADER_BUFFER_KB} KB."
    )


def _searches(url: str, args: argparse.Namespace) -> tuple[list[float], list[str]]:
    """Seconds of each successful search in a row, and what each failed one got."""
    started = time.monotonic()
    latencies, failures = [], []
    for _ in range(args.searches):
        began = time.perf_counter()
        try:
            response = requests.get(url, params=SEARCH, timeout=args.search_timeout)
            if response.status_code == 200:
                latencies.append(time.perf_counter() - began)
            else:
                failures.append(str(response.status_code))
        except requests.RequestException as exc:
            failures.append(type(exc).__name__)
        if time.monotonic() - started > args.max_seconds:
            log(f"stopped after {args.max_seconds:.0f} s")
            break
    return latencies, failures


def _search_row(label: str, latencies: list[float], failures: list[str]) -> list[object]:
    ms = [value * 1000 for value in latencies]
    return [
        label,
        len(latencies) + len(failures),
        len(latencies),
        ", ".join(sorted(set(failures))) or "-",
        _fmt_ms(percentile(ms, 50)),
        _fmt_ms(percentile(ms, 99)),
        _fmt_ms(max(ms, default=float("nan"))),
    ]


def _target_label(args: argparse.Namespace) -> str:
    front = "searchsvc serve: nginx + gunicorn" if args.target == "serve" else "gunicorn alone"
    return f"{front}, {args.workers} workers"


def _send_huge_lines(
    port: int, stop: threading.Event, results: list[tuple[float, int | None, str]]
) -> None:
    line = huge_request_line()
    while not stop.is_set():
        began = time.monotonic()
        answer = send_raw(port, line, timeout=120)
        results.append((time.monotonic() - began, answer.status, answer.ending))


class _IdleConnections:
    """Connections that send half a request line and then nothing, watched (in a thread) until
    the server closes them."""

    def __init__(self, port: int, count: int) -> None:
        self.opened: list[float] = []
        self.closed: list[float | None] = [None] * count
        self.selector = selectors.DefaultSelector()
        for index in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET /api/v1/search?q=")
            sock.setblocking(False)
            self.opened.append(time.monotonic())
            self.selector.register(sock, selectors.EVENT_READ, index)
        self.give_up = threading.Event()
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def _watch(self) -> None:
        while self.selector.get_map() and not self.give_up.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionResetError:
                    data = b""
                if not data:  # anything else is an answer (408): wait for the close
                    self.closed[key.data] = time.monotonic() - self.opened[key.data]
                    self.selector.unregister(sock)
                    sock.close()

    def wait_closed(self, seconds: float) -> list[float | None]:
        """Seconds from opening to closing of each connection (None: still open)."""
        self.watcher.join(seconds)
        self.give_up.set()
        self.watcher.join()
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
        return self.closed


def _fmt_ms(value: float) -> str:
    return f"{value:.1f} ms"


def _fmt_s(value: float) -> str:
    return f"{value:.2f} s"


if __name__ == "__main__":
    main()
