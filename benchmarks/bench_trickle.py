r"""Searches while one address trickles thousands of write bodies (issue 33, item 12).

    .venv/bin/python -m benchmarks.bench_trickle                      # 2000 connections, limits on
    .venv/bin/python -m benchmarks.bench_trickle --no-address-limits  # the same, no limits
    # more connections than nginx's 4,096, each replaced when it ends:
    .venv/bin/python -m benchmarks.bench_trickle --connections 5000 --reopen [--no-address-limits]

Indexes seeds/ into a temporary directory and starts `searchsvc serve --workers 2` on a free
127.0.0.1 port, with the default per-address limits (FRONT_CONNECTIONS_PER_ADDRESS,
FRONT_REQUESTS_PER_SECOND) or, with `--no-address-limits`, none. Four searchers, each from an
address of its own (127.0.0.3 to 127.0.0.6), make searches in a row (`q=learning`, three
facets, highlights, a new connection each; at most `--search-rate` a second each, within
their address's request rate) for `--quiet-seconds` before the attack and `--seconds` during
it. The attacker, from 127.0.0.2, opens `--connections` connections, each sending the head of
a record write (`POST /api/v1/records` with an `Authorization` header, so that the front reads
the body, and a Content-Length of 1 MB) and then one byte of its body every `--interval` seconds
(within nginx's client_body_timeout, which is per read): a body that never ends. With
`--reopen` the attacker replaces each connection that ends (refused, closed) with a new one a
second later, as a determined one would. Printed: the searches' count, failures and
p50/p99/max before and during the attack; what became of the attacker's connections (held to
the end, refused with 429, answered otherwise, closed, or not even connected); and the RSS of
nginx's workers. benchmarks/README.md has the figures.

Needs nginx, and as many open files as connections (the soft limit is raised to the hard one).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import ROOT, format_table, log, percentile, print_section
from searchsvc import config
from searchsvc.serving import limits
from tests.raw_http import serve

SEARCHSVC = Path(sys.executable).with_name("searchsvc")
SEARCH_PATH = "/api/v1/search?q=learning&facets=author,year,category&per_page=10"
ATTACKER = "127.0.0.2"
SEARCHERS = ("127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6")
HEAD = (
    b"POST /api/v1/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer trickle\r\n"
    b"Content-Type: application/x-ndjson\r\nContent-Length: 1000000\r\n\r\n"
)
# Open files besides the attacker's connections: the searchers', the interpreter's.
SPARE_FILES = 256
# With --reopen, how soon the attacker replaces a connection that was refused or closed (the
# front's 429 says Retry-After: 1).
REOPEN_AFTER = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--interval", type=float, default=4.0, help="seconds between bytes")
    parser.add_argument("--seconds", type=float, default=30.0, help="searching under attack")
    parser.add_argument("--quiet-seconds", type=float, default=10.0)
    parser.add_argument("--search-timeout", type=float, default=10.0)
    parser.add_argument(
        "--search-rate",
        type=float,
        default=25.0,
        help="searches a second per searcher at most (0: back to back); the default is a "
        "quarter of an address's request rate",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--reopen",
        action="store_true",
        help=f"replace each attacker connection that ends with a new one {REOPEN_AFTER:g} s later",
    )
    parser.add_argument(
        "--no-address-limits",
        action="store_true",
        help="serve with FRONT_CONNECTIONS_PER_ADDRESS=0 and FRONT_REQUESTS_PER_SECOND=0",
    )
    args = parser.parse_args()
    _raise_open_files(args.connections + SPARE_FILES)

    with tempfile.TemporaryDirectory(prefix="bench-trickle-") as tmp:
        root = Path(tmp)
        index = str(root / "index")
        subprocess.run(
            [str(SEARCHSVC), "index", str(ROOT / "seeds"), "--index", index],
            check=True,
            capture_output=True,
        )
        env = {"PROMETHEUS_MULTIPROC_DIR": str(root / "metrics"), "SEARCHSVC_ACCESS_LOG": ""}
        if args.no_address_limits:
            env["SEARCHSVC_FRONT_CONNECTIONS_PER_ADDRESS"] = "0"
            env["SEARCHSVC_FRONT_REQUESTS_PER_SECOND"] = "0"
        settings = config.load({"INDEX": index}, {**env, "SEARCHSVC_INDEX": index})
        label = (
            "no per-address limits"
            if args.no_address_limits
            else f"{settings['FRONT_CONNECTIONS_PER_ADDRESS']} connections and "
            f"{settings['FRONT_REQUESTS_PER_SECOND']} requests/s per address"
        )
        log(f"starting searchsvc serve ({args.workers} workers, {label})")
        with serve(index, root / "serve.log", workers=args.workers, env=env) as (port, process):
            run(port, process.pid, args, label)


def _raise_open_files(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        sys.exit(f"{needed} open files needed, the hard limit is {hard}: fewer --connections")
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run(port: int, serve_pid: int, args: argparse.Namespace, label: str) -> None:
    for source in SEARCHERS:  # warm up both workers, from every searcher's address
        _search(port, source, args.search_timeout)
    log(f"searching for {args.quiet_seconds:.0f} s before the attack")
    quiet = _Searches(port, args.search_timeout, args.search_rate).run_for(args.quiet_seconds)
    rss_before = _nginx_workers_rss(serve_pid)

    attacker = _Trickler(port, args.connections, args.interval, args.reopen)
    log(f"opening {args.connections} trickling connections from {ATTACKER}")
    opened_in = attacker.open_all()
    attacker.start()
    log(f"opened in {opened_in:.1f} s; searching for {args.seconds:.0f} s during the attack")
    during = _Searches(port, args.search_timeout, args.search_rate).run_for(args.seconds)
    rss_during = _nginx_workers_rss(serve_pid)
    outcome = attacker.stop()

    pace = f"at most {args.search_rate:g}/s each" if args.search_rate > 0 else "back to back"
    print_section(
        f"Searches, 4 clients on addresses of their own, {pace} (searchsvc serve, {label})"
    )
    rows = [_search_row("before the attack", quiet), _search_row("during the attack", during)]
    print(format_table(["searches", "made", "ok", "failed", "p50", "p99", "max"], rows))

    reopened = f", each replaced {REOPEN_AFTER:g} s after it ended" if args.reopen else ""
    print_section(
        f"The attacker from {ATTACKER}: {args.connections} connections{reopened}, each a record "
        f"write sending one body byte every {args.interval:g} s"
    )
    others = sorted((status, n) for status, n in outcome.answers.items() if status != 429)
    answered = ", ".join(f"{status}: {n}" for status, n in others)
    rows = [
        ["opened (head sent)", outcome.opened],
        ["held to the end (accepted, body still coming)", outcome.held],
        ["refused with 429", outcome.answers.get(429, 0)],
        ["answered otherwise", answered or 0],
        ["closed by the front without an answer", outcome.closed],
        ["not connected (connect failed)", sum(outcome.connect_failures.values())],
    ]
    print(format_table(["connections", "count"], rows))
    print(
        f"\nnginx's workers: {rss_before / 1024:.1f} MiB RSS before the attack, "
        f"{rss_during / 1024:.1f} MiB during it. Opening the connections took {opened_in:.1f} s. "
        f"Configured (searchsvc/serving/limits.py): each body read within "
        f"{limits.CLIENT_BODY_TIMEOUT} s of the last, no deadline for a whole body."
    )


@dataclass
class _Outcome:
    opened: int = 0
    held: int = 0
    closed: int = 0
    answers: Counter[int] = field(default_factory=Counter)
    connect_failures: Counter[str] = field(default_factory=Counter)


class _Trickler:
    """`count` connections from ATTACKER, each sending a write's head and then one byte of its
    body every `interval` seconds, watched (in a thread) for answers and closes; with `reopen`,
    each one that ends is replaced by a new one REOPEN_AFTER seconds later."""

    def __init__(self, port: int, count: int, interval: float, reopen: bool) -> None:
        self.port = port
        self.count = count
        self.interval = interval
        self.reopen = reopen
        self.outcome = _Outcome()
        self.selector = selectors.DefaultSelector()
        self.next_byte: dict[socket.socket, float] = {}
        self.connecting: set[socket.socket] = set()
        self.reopen_at: list[float] = []
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def open_all(self) -> float:
        """Open the connections one after the other, each sending its head; seconds taken."""
        began = time.monotonic()
        for _ in range(self.count):
            sock = socket.socket()
            try:
                sock.bind((ATTACKER, 0))
                sock.settimeout(5)
                sock.connect(("127.0.0.1", self.port))
                sock.sendall(HEAD)
            except OSError as exc:
                self._failed(sock, exc)
                continue
            sock.setblocking(False)
            self._sent_head(sock)
        return time.monotonic() - began

    def _sent_head(self, sock: socket.socket) -> None:
        self.outcome.opened += 1
        self.selector.register(sock, selectors.EVENT_READ)
        self.next_byte[sock] = time.monotonic() + self.interval

    def _failed(self, sock: socket.socket, exc: OSError) -> None:
        self.outcome.connect_failures[type(exc).__name__] += 1
        sock.close()
        if self.reopen:
            self.reopen_at.append(time.monotonic() + REOPEN_AFTER)

    def start(self) -> None:
        self.thread.start()

    def _watch(self) -> None:
        while not self.halt.is_set():
            for key, _ in self.selector.select(timeout=0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock in self.connecting:
                    self._connected(sock)
                    continue
                try:
                    data = sock.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data.startswith(b"HTTP/"):
                    self.outcome.answers[int(data.split()[1])] += 1
                else:
                    self.outcome.closed += 1
                self._drop(sock)
                if self.reopen:
                    self.reopen_at.append(time.monotonic() + REOPEN_AFTER)
            now = time.monotonic()
            for sock, due in list(self.next_byte.items()):
                if due <= now:
                    try:
                        sock.send(b" ")
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        continue  # ended: the watch above reads how
                    self.next_byte[sock] = now + self.interval
            due_now = [at for at in self.reopen_at if at <= now]
            self.reopen_at = [at for at in self.reopen_at if at > now]
            for _ in due_now:
                self._connect_soon()

    def _connect_soon(self) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        try:
            sock.bind((ATTACKER, 0))
            sock.connect_ex(("127.0.0.1", self.port))
        except OSError as exc:
            self._failed(sock, exc)
            return
        self.connecting.add(sock)
        self.selector.register(sock, selectors.EVENT_WRITE)

    def _connected(self, sock: socket.socket) -> None:
        self.connecting.discard(sock)
        self.selector.unregister(sock)
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        try:
            if error:
                raise OSError(error, os.strerror(error))
            sock.send(HEAD)  # some 150 bytes: into an empty send buffer at once
        except OSError as exc:
            self._failed(sock, exc)
            return
        self._sent_head(sock)

    def _drop(self, sock: socket.socket) -> None:
        self.selector.unregister(sock)
        self.next_byte.pop(sock, None)
        sock.close()

    def stop(self) -> _Outcome:
        self.halt.set()
        self.thread.join()
        # What the watch had not read yet: an answer or a close waiting is not a held connection.
        for sock in list(self.next_byte):
            try:
                data = sock.recv(4096)
            except (BlockingIOError, InterruptedError):
                self.outcome.held += 1
            except OSError:
                self.outcome.closed += 1
            else:
                if data.startswith(b"HTTP/"):
                    self.outcome.answers[int(data.split()[1])] += 1
                else:
                    self.outcome.closed += 1
            self._drop(sock)
        for sock in list(self.connecting):
            self.selector.unregister(sock)
            sock.close()
        return self.outcome


@dataclass
class _Results:
    latencies: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)


class _Searches:
    """One searcher per address of SEARCHERS, each searching in a row, starting at most `rate`
    searches a second (a client alone at its address, as the front's limits assume)."""

    def __init__(self, port: int, timeout: float, rate: float) -> None:
        self.port = port
        self.timeout = timeout
        self.gap = 1 / rate if rate > 0 else 0.0

    def run_for(self, seconds: float) -> _Results:
        results = _Results()
        lock = threading.Lock()
        deadline = time.monotonic() + seconds

        def searcher(source: str) -> None:
            while time.monotonic() < deadline:
                began = time.perf_counter()
                outcome = _search(self.port, source, self.timeout)
                elapsed = time.perf_counter() - began
                time.sleep(max(0.0, self.gap - elapsed))
                with lock:
                    if outcome == "200":
                        results.latencies.append(elapsed)
                    else:
                        results.failures[outcome] += 1

        threads = [threading.Thread(target=searcher, args=(source,)) for source in SEARCHERS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results


def _search(port: int, source: str, timeout: float) -> str:
    """One search on a new connection from `source`: its status, or the error's name."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=timeout, source_address=(source, 0)
    )
    try:
        connection.request("GET", SEARCH_PATH)
        response = connection.getresponse()
        response.read()
        return str(response.status)
    except (OSError, http.client.HTTPException) as exc:
        return type(exc).__name__
    finally:
        connection.close()


def _search_row(label: str, results: _Results) -> list[object]:
    ms = [value * 1000 for value in results.latencies]
    failed = ", ".join(f"{kind}: {n}" for kind, n in sorted(results.failures.items()))
    return [
        label,
        len(ms) + sum(results.failures.values()),
        len(ms),
        failed or "-",
        f"{percentile(ms, 50):.1f} ms",
        f"{percentile(ms, 99):.1f} ms",
        f"{max(ms, default=float('nan')):.1f} ms",
    ]


def _nginx_workers_rss(serve_pid: int) -> int:
    """KiB resident in nginx's worker processes (children of the master that `searchsvc serve`
    runs)."""
    total = 0
    for child in _children(serve_pid):
        if "nginx" not in _command(child):
            continue
        for worker in _children(child):
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{worker}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
    return total


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    return []


def _command(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


if __name__ == "__main__":
    main()
