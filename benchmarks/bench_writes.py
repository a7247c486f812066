r"""Figures of the write API through real gunicorn: bulk ingest, write acknowledgement,
write-to-searchable latency, and searches while writes stream.

    .venv/bin/python -m benchmarks.bench_writes                    # 40,717 records, ~6 min
    .venv/bin/python -m benchmarks.bench_writes --records 5000     # a quicker run

Each run makes a fresh index directory in a temporary directory (the seed corpus `seeds/` built
by `searchsvc index`, or `--start empty`), creates an API key with KeyStore, and serves it with
gunicorn and searchsvc/serving/gunicorn_conf.py (`--workers`, default 2) on a free 127.0.0.1
port, with SEARCHSVC_WRITE_RATE_LIMIT="" (no per-key limit) and no access log. Then, in order,
on the same growing index:

  a. bulk ingest: the arXiv-2025 records (`--records N` for the first N) as NDJSON requests of
     `--batch` records, sent by `--clients` clients; then every task is waited for. Records/s
     from the first request sent to the last task's `finished_at` (the service's clock; the
     same machine's), and the ack-only rate (first request sent to the last 202 received).
  b. write acknowledgement: `--ack-writes` single-record POSTs from `--ack-clients` concurrent
     clients, each timed from sending to its 202.
  c. write-to-searchable: `--visible-writes` single-record POSTs one after another, each with a
     unique word in its title, timed from sending the POST until `/api/v1/search?q=<word>`
     (polled every `--poll-ms`, through gunicorn) returns the record; and until every later
     poll does (a worker that has not yet refreshed answers without it).
  d. searches: `--search-clients` clients cycle through faceted, highlighted searches of the
     corpus's most common title words for `--search-seconds`, once idle and once while one
     writer client streams single-record and 100-record writes in turn, `--stream-pause`
     seconds apart (0.1: about 500 records/s; 0 sends each as soon as the last is
     acknowledged, thousands of records a second, far more than the writer applies).

Every phase waits for its tasks before the next (reading the queue's SQLite file read-only),
and the index's document count is printed after each. Latencies are client-side (Python's
http.client, a new connection per request, as the sync workers close each one). Nothing is
asserted: the figures are printed as Markdown tables (or `--json`), with the command that
reproduces them. write_faults.py imports the server and client helpers here.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import itertools
import os
import random
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import orjson

from benchmarks.common import (
    ROOT,
    content_words,
    format_table,
    load_arxiv,
    log,
    percentile,
    print_section,
)
from searchsvc.domain.records import Record
from searchsvc.tasks import MAX_WAIT_SECONDS, TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore

GUNICORN = Path(sys.executable).with_name("gunicorn")
SEARCHSVC = Path(sys.executable).with_name("searchsvc")
WRITER_LOCK = "searchsvc.sqlite3.writer.lock"
# Longer than gunicorn's worker timeout (30 s): an attempt the client gave up on is then never
# still running in the server when the client retries or moves on.
WRITE_TIMEOUT = 60.0
# What a client sees when the server is down or a worker died mid-request.
CONNECTION_ERRORS = (OSError, http.client.HTTPException)
SEARCH_FACETS = "author,year,category"


# -- HTTP ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None

    @property
    def code(self) -> str:
        """The error code of an error reply ('' for other replies)."""
        try:
            return self.json()["error"]["code"]
        except (ValueError, TypeError, KeyError):
            return ""


def call(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = WRITE_TIMEOUT,
) -> Reply:
    """One request on a new connection; raises one of CONNECTION_ERRORS when there is no reply."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        if response.getheader("Content-Encoding") == "gzip":
            data = gzip.decompress(data)
        return Reply(response.status, data)
    finally:
        connection.close()


class Api:
    """The service's HTTP API as the benchmarks use it, with an API key."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.auth = {"Authorization": f"Bearer {token}"}

    def post_records(self, records: dict | list) -> Reply:
        headers = {**self.auth, "Content-Type": "application/json"}
        return call(self.port, "POST", "/api/v1/records", orjson.dumps(records), headers)

    def post_ndjson(self, body: bytes) -> Reply:
        headers = {**self.auth, "Content-Type": "application/x-ndjson"}
        return call(self.port, "POST", "/api/v1/records", body, headers)

    def delete_record(self, record_id: str) -> Reply:
        return call(self.port, "DELETE", f"/api/v1/records/{quote(record_id)}", None, self.auth)

    def task(self, task_id: int, wait: float = 0.0) -> Reply:
        path = f"/api/v1/tasks/{task_id}" + (f"?wait={wait:g}" if wait else "")
        return call(self.port, "GET", path, None, self.auth)

    def record(self, record_id: str) -> Reply:
        return call(self.port, "GET", f"/api/v1/records/{quote(record_id)}", timeout=30)

    def search(self, timeout: float = 30, **params: Any) -> Reply:
        headers = {"Accept-Encoding": "gzip"}
        path = f"/api/v1/search?{urlencode(params)}"
        return call(self.port, "GET", path, None, headers, timeout=timeout)

    def total(self, q: str) -> int:
        """How many records a search finds (no facets, no highlights)."""
        reply = self.search(q=q, per_page=1, facets="", highlight="false")
        if reply.status != 200:
            raise RuntimeError(f"search {q!r}: HTTP {reply.status} {reply.body[:200]!r}")
        return reply.json()["total"]

    def documents(self) -> int:
        """The index's document count (every record: an empty query)."""
        return self.total("")


# -- the server ----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build_seed_index(index_dir: Path) -> None:
    """`searchsvc index seeds/` into `index_dir`."""
    subprocess.run(
        [str(SEARCHSVC), "index", str(ROOT / "seeds"), "--index", str(index_dir)],
        check=True,
        capture_output=True,
    )


def create_key(index_dir: Path) -> str:
    """A new API key with the read and write scopes (its token)."""
    queue = TaskQueue(queue_path(str(index_dir)))
    try:
        return KeyStore(queue).create("bench", ("read", "write"))[1]
    finally:
        queue.close()


def process_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class Gunicorn:
    """gunicorn with the service's config over one index directory, on one port."""

    def __init__(
        self,
        index_dir: Path,
        workdir: Path,
        workers: int,
        port: int | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.index_dir = index_dir
        self.workers = workers
        self.port = port or free_port()
        self.log_path = workdir / "gunicorn.log"
        self.metrics_dir = workdir / "metrics"
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen | None = None
        self.starts = 0

    @property
    def master_pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, ready_seconds: float = 60.0) -> float:
        """Start it and wait until a worker answers /readyz (/healthz while there is no index
        yet); the seconds that took."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHSVC_")}
        env.update(
            {
                "SEARCHSVC_INDEX": str(self.index_dir),
                "SEARCHSVC_WORKERS": str(self.workers),
                "SEARCHSVC_WRITE_RATE_LIMIT": "",
                "SEARCHSVC_ACCESS_LOG": "",
                "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
                **self.extra_env,
            }
        )
        command = [str(GUNICORN), "--config", "python:searchsvc.serving.gunicorn_conf"]
        command += ["--bind", f"127.0.0.1:{self.port}", "wsgi:app"]
        started = time.perf_counter()
        with open(self.log_path, "ab") as output:
            output.write(f"\n=== start {self.starts + 1} at {time.ctime()}\n".encode())
            output.flush()
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
            )
        self.starts += 1
        probe = "/readyz" if (self.index_dir / "CURRENT").exists() else "/healthz"
        deadline = started + ready_seconds
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if call(self.port, "GET", probe, timeout=5).status == 200:
                    return time.perf_counter() - started
            except CONNECTION_ERRORS:
                pass
            time.sleep(0.1)
        self.stop()
        raise SystemExit(f"gunicorn did not get ready; see {self.log_path}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s; workers left by a killed master are killed too."""
        if self.process is None:
            return
        workers = self.worker_pids()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                if process_alive(pid):
                    os.kill(pid, signal.SIGKILL)
        wait_gone(workers)

    def worker_pids(self) -> list[int]:
        """The master's child processes (its workers), from /proc."""
        master = self.master_pid
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if master is not None and int(fields[1]) == master and fields[0] not in ("Z", "X"):
                pids.append(int(stat.parent.name))
        return sorted(pids)

    def writer_pid(self) -> int | None:
        """The worker holding the writer lock, from /proc/locks (see flock_holder)."""
        return flock_holder(queue_path(str(self.index_dir)).with_name(WRITER_LOCK))

    def kill_master(self) -> list[int]:
        """kill -9 the master, then every worker it left; returns the workers' pids."""
        assert self.process is not None
        workers = self.worker_pids()
        self.process.kill()
        self.process.wait()
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_gone(workers)
        return workers

    def log_errors(self) -> list[str]:
        """The log's lines other than gunicorn's INFO lines (the app's warnings, errors,
        tracebacks' last lines), each once with how often it came, in order of appearance."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        found: Counter[str] = Counter()
        for number, line in enumerate(lines):
            if not line.strip() or line.startswith("===") or "] [INFO] " in line:
                continue
            if line.startswith(" "):
                continue  # inside a traceback: its last line stands for it
            if line.startswith("Traceback"):
                end = next((x for x in lines[number + 1 :] if not x.startswith(" ")), "")
                line = f"Traceback ... {end}"
            # Timestamps and pids differ from line to line: count the messages.
            found[re.sub(r"^\[[^]]*\] \[\d+\] ", "", line)[:300]] += 1
        return [f"{n} x {line}" if n > 1 else line for line, n in found.items()]


def wait_gone(pids: Sequence[int], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while any(process_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


def flock_holder(path: Path) -> int | None:
    """The pid holding an exclusive flock on `path`, from /proc/locks (Linux), or None.

    /proc/locks lists each lock as `N: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`
    (waiters have `->` after the number); the file is matched by device and inode.
    """
    try:
        stat = path.stat()
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    wanted = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1:4:2] == ["FLOCK", "WRITE"] and fields[5] == wanted:
            return int(fields[4])
    return None


# -- the task queue (read-only) ------------------------------------------------------------------
def task_statuses(index_dir: Path, task_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Status, finished_at and error of tasks, read from the queue's SQLite file (read-only)."""
    path = queue_path(str(index_dir))
    found: dict[int, dict[str, Any]] = {}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        ids = sorted(set(task_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = connection.execute(
                "SELECT id, status, finished_at, error FROM tasks "
                f"WHERE id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            for task_id, status, finished_at, error in rows:
                found[task_id] = {"status": status, "finished_at": finished_at, "error": error}
    finally:
        connection.close()
    return found


def queue_counts(index_dir: Path) -> dict[str, int]:
    """Tasks per status in the queue's SQLite file."""
    connection = sqlite3.connect(f"file:{queue_path(str(index_dir))}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status")
        return dict(rows.fetchall())
    finally:
        connection.close()


def wait_for_tasks(
    index_dir: Path, task_ids: Sequence[int], timeout: float = 300.0, stall: float | None = None
) -> dict[int, dict[str, Any]]:
    """The tasks' statuses once all are succeeded or failed, or as they are after `timeout`
    seconds, or after `stall` seconds in which none of them changed."""
    deadline = time.monotonic() + timeout
    last, changed = None, time.monotonic()
    while True:
        statuses = task_statuses(index_dir, task_ids)
        done = all(
            statuses.get(task_id, {}).get("status") in ("succeeded", "failed")
            for task_id in task_ids
        )
        now = time.monotonic()
        if statuses != last:
            last, changed = statuses, now
        if done or now > deadline or (stall is not None and now - changed > stall):
            return statuses
        time.sleep(0.1)


def finished_at(statuses: dict[int, dict[str, Any]]) -> float:
    """The latest finished_at of the tasks, as a Unix time."""
    stamps = [s["finished_at"] for s in statuses.values() if s.get("finished_at")]
    return max(datetime.fromisoformat(stamp).timestamp() for stamp in stamps)


def status_counts(statuses: dict[int, dict[str, Any]], task_ids: Sequence[int]) -> Counter[str]:
    return Counter(statuses.get(task_id, {}).get("status", "missing") for task_id in task_ids)


# -- figures -------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    value = seconds * 1000
    return "-" if value != value else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def p50_p99(seconds: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(seconds),
        "p50_ms": round(percentile(seconds, 50) * 1000, 2),
        "p99_ms": round(percentile(seconds, 99) * 1000, 2),
        "max_ms": round(max(seconds) * 1000, 2) if seconds else float("nan"),
    }


def run_threads(count: int, target: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=target, args=(n,), daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@dataclass
class Results:
    """Figures of one run, printed as tables or JSON."""

    setup: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)


def copy_record(record: Record, record_id: str, title: str | None = None) -> dict[str, Any]:
    data = record.to_dict()
    data["id"] = record_id
    if title is not None:
        data["title"] = title
    return data


# -- a. bulk ingest ------------------------------------------------------------------------------
def bulk_ingest(
    api: Api, index_dir: Path, records: Sequence[Record], batch: int, clients: int
) -> dict[str, Any]:
    batches = [records[start : start + batch] for start in range(0, len(records), batch)]
    bodies = [ndjson(part) for part in batches]
    next_batch = itertools.count()
    lock = threading.Lock()
    tasks: list[int] = []
    acks: list[float] = []
    refused: list[str] = []
    refused_ids: list[str] = []
    acked_records = 0
    log(f"a. posting {len(records):,} records in {len(bodies)} NDJSON requests, {clients} clients")

    def client(_: int) -> None:
        nonlocal acked_records
        while (number := next(next_batch)) < len(bodies):
            part, body = list(batches[number]), bodies[number]
            while part:
                sent = time.perf_counter()
                reply = api.post_ndjson(body)
                with lock:
                    acks.append(time.perf_counter() - sent)
                if reply.status == 202:
                    with lock:
                        tasks.append(reply.json()["id"])
                        acked_records += len(part)
                    break
                # A batch is all-or-nothing: drop the records it names and send the rest again,
                # as a client loading a corpus would.
                bad = bad_positions(reply)
                with lock:
                    refused.extend(
                        f"{part[p].id}: {reason}" for p, reason in bad.items() if p < len(part)
                    )
                    refused_ids.extend(part[p].id for p in bad if p < len(part))
                    if not bad:
                        refused.append(f"HTTP {reply.status} {reply.body[:300]!r}")
                if not bad:
                    break
                part = [record for p, record in enumerate(part) if p not in bad]
                body = ndjson(part)

    started_wall, started = time.time(), time.perf_counter()
    run_threads(clients, client)
    acked_seconds = time.perf_counter() - started
    log(f"   acknowledged in {acked_seconds:.1f} s; waiting for {len(tasks)} tasks")
    # The API's own wait, task by task in id order (the writer applies them in that order).
    for task_id in sorted(tasks):
        while True:
            reply = api.task(task_id, wait=MAX_WAIT_SECONDS)
            if reply.status != 200:
                raise RuntimeError(f"task {task_id}: HTTP {reply.status} {reply.body[:300]!r}")
            if reply.json()["status"] not in ("enqueued", "processing"):
                break
    seen_seconds = time.perf_counter() - started
    statuses = task_statuses(index_dir, tasks)
    applied_seconds = finished_at(statuses) - started_wall if statuses else float("nan")
    return {
        "records": acked_records,
        "requests": len(bodies),
        "batch": batch,
        "clients": clients,
        "body_mb": round(sum(map(len, bodies)) / 2**20, 1),
        "refused": refused,
        "refused_ids": refused_ids,
        "task_status": dict(status_counts(statuses, tasks)),
        "ack_seconds": round(acked_seconds, 2),
        "ack_records_per_s": round(acked_records / acked_seconds),
        "request_p50_ms": round(percentile(acks, 50) * 1000),
        "request_max_ms": round(max(acks) * 1000) if acks else None,
        "applied_seconds": round(applied_seconds, 2),
        "records_per_s": round(acked_records / applied_seconds),
        "client_saw_done_seconds": round(seen_seconds, 2),
    }


def ndjson(records: Sequence[Record]) -> bytes:
    return b"".join(orjson.dumps(record.to_dict()) + b"\n" for record in records)


def bad_positions(reply: Reply) -> dict[int, str]:
    """Positions of the records a 400 names (the error's `details.errors`), with reasons."""
    if reply.status != 400:
        return {}
    try:
        errors = reply.json()["error"]["details"]["errors"]
        return {e["position"]: f"{e['field']}: {e['reason']}" for e in errors}
    except (ValueError, TypeError, KeyError):
        return {}


# -- b. write acknowledgement --------------------------------------------------------------------
def ack_latency(
    api: Api, index_dir: Path, records: Sequence[Record], writes: int, clients: int
) -> dict[str, Any]:
    log(f"b. {writes} single-record writes from {clients} clients")
    numbers = itertools.count()
    lock = threading.Lock()
    latencies: list[float] = []
    tasks: list[int] = []
    statuses: Counter[int] = Counter()

    def client(_: int) -> None:
        while (n := next(numbers)) < writes:
            body = copy_record(records[n % len(records)], f"bench-ack/{n}")
            sent = time.perf_counter()
            reply = api.post_records(body)
            elapsed = time.perf_counter() - sent
            with lock:
                statuses[reply.status] += 1
                if reply.status == 202:
                    latencies.append(elapsed)
                    tasks.append(reply.json()["id"])

    started = time.perf_counter()
    run_threads(clients, client)
    seconds = time.perf_counter() - started
    applied = wait_for_tasks(index_dir, tasks)
    return {
        "writes": writes,
        "clients": clients,
        "http_status": {str(k): v for k, v in sorted(statuses.items())},
        "writes_per_s": round(writes / seconds),
        **p50_p99(latencies),
        "task_status": dict(status_counts(applied, tasks)),
    }


# -- c. write to searchable ----------------------------------------------------------------------
def write_to_searchable(
    api: Api,
    index_dir: Path,
    records: Sequence[Record],
    writes: int,
    poll_seconds: float,
    seed: int,
    give_up: float = 30.0,
) -> dict[str, Any]:
    log(f"c. {writes} writes, each searched for until found (every {poll_seconds * 1000:g} ms)")
    rng = random.Random(seed)
    first_seen: list[float] = []
    always_seen: list[float] = []
    not_found: list[str] = []
    polls = 0
    tasks = []
    for n in range(writes):
        word = "wq" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))
        record = records[(n * 7919) % len(records)]
        record_id = f"bench-visible/{n}"
        body = copy_record(record, record_id, title=f"{word} {record.title}")
        sent = time.perf_counter()
        reply = api.post_records(body)
        if reply.status != 202:
            not_found.append(f"{record_id}: HTTP {reply.status}")
            continue
        tasks.append(reply.json()["id"])
        found_at = streak_from = None  # the first hit, the first of the hits since a miss
        hits_in_a_row = 0
        # After the first hit, poll until 10 polls in a row find it (both workers, most likely).
        while hits_in_a_row < 10 and time.perf_counter() - sent < give_up:
            answer = api.search(q=word, facets="", highlight="false", per_page=5)
            polls += 1
            now = time.perf_counter()
            hit = answer.status == 200 and any(h["id"] == record_id for h in answer.json()["hits"])
            if hit:
                found_at = found_at or now
                streak_from = streak_from or now
                hits_in_a_row += 1
            else:
                streak_from, hits_in_a_row = None, 0
            time.sleep(poll_seconds)
        if found_at is None:
            not_found.append(f"{record_id}: not found in {give_up:g} s")
            continue
        first_seen.append(found_at - sent)
        always_seen.append((streak_from or found_at) - sent)
    wait_for_tasks(index_dir, tasks)
    return {
        "writes": writes,
        "poll_ms": poll_seconds * 1000,
        "polls": polls,
        "first_seen": p50_p99(first_seen),
        "every_poll_after": p50_p99(always_seen),
        "not_found": not_found,
    }


# -- d. searches idle and under writes -----------------------------------------------------------
def search_queries(records: Sequence[Record], count: int) -> list[str]:
    """The `count` most common content words of the titles (one-word searches)."""
    frequency: Counter[str] = Counter()
    for record in records:
        frequency.update(set(content_words(record.title)))
    return [word for word, _ in frequency.most_common(count)]


def search_load(api: Api, queries: Sequence[str], clients: int, seconds: float) -> dict[str, Any]:
    """Faceted, highlighted searches from `clients` clients cycling through `queries`."""
    latencies: list[float] = []
    failures: Counter[str] = Counter()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(number: int) -> None:
        position = number * 7
        while time.perf_counter() < deadline:
            query = queries[position % len(queries)]
            position += 1
            sent = time.perf_counter()
            try:
                reply = api.search(q=query, facets=SEARCH_FACETS, highlight="true", per_page=10)
                failure = "" if reply.status == 200 else f"HTTP {reply.status}"
            except CONNECTION_ERRORS as exc:
                failure = type(exc).__name__
            elapsed = time.perf_counter() - sent
            with lock:
                if failure:
                    failures[failure] += 1
                else:
                    latencies.append(elapsed)

    run_threads(clients, client)
    return {**p50_p99(latencies), "searches_per_s": round(len(latencies) / seconds, 1),
            "failed": dict(failures)}  # fmt: skip


class WriteStream:
    """One client streaming writes, alternating one record and `batch` records, until stopped."""

    def __init__(self, api: Api, records: Sequence[Record], batch: int, pause: float) -> None:
        self.api, self.records, self.batch, self.pause = api, records, batch, pause
        self.stop = threading.Event()
        self.tasks: list[int] = []
        self.records_acked = 0
        self.statuses: Counter[int] = Counter()
        self.latencies: list[float] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        for request in itertools.count():
            if self.stop.is_set():
                return
            size = 1 if request % 2 == 0 else self.batch
            body = [
                copy_record(self.records[(n + i) % len(self.records)], f"bench-stream/{n + i}")
                for i in range(size)
            ]
            n += size
            sent = time.perf_counter()
            reply = self.api.post_records(body[0] if size == 1 else body)
            self.latencies.append(time.perf_counter() - sent)
            self.statuses[reply.status] += 1
            if reply.status == 202:
                self.tasks.append(reply.json()["id"])
                self.records_acked += size
            self.stop.wait(self.pause)


def searches_under_writes(
    api: Api,
    index_dir: Path,
    records: Sequence[Record],
    queries: Sequence[str],
    clients: int,
    seconds: float,
    pause: float,
) -> dict[str, Any]:
    log(f"d. warming up, then {clients} search clients for {seconds:g} s idle, then under writes")
    search_load(api, queries, clients, min(seconds, 2 * len(queries) * 0.02 + 1))  # warm-up
    idle = search_load(api, queries, clients, seconds)
    stream = WriteStream(api, records, 100, pause)
    started_wall = time.time()
    stream.thread.start()
    loaded = search_load(api, queries, clients, seconds)
    stream.stop.set()
    stream.thread.join()
    stopped = time.perf_counter()
    statuses = wait_for_tasks(index_dir, stream.tasks, timeout=600)
    drain = time.perf_counter() - stopped
    applied_by_end = sum(
        1
        for s in statuses.values()
        if s.get("finished_at")
        and datetime.fromisoformat(s["finished_at"]).timestamp() <= started_wall + seconds
    )
    return {
        "queries": len(queries),
        "clients": clients,
        "seconds": seconds,
        "idle": idle,
        "under_writes": loaded,
        "writes": {
            "requests": sum(stream.statuses.values()),
            "http_status": {str(k): v for k, v in sorted(stream.statuses.items())},
            "records_acked": stream.records_acked,
            "records_per_s": round(stream.records_acked / seconds),
            "ack": p50_p99(stream.latencies),
            "tasks_applied_during": applied_by_end,
            "tasks": len(stream.tasks),
            "drain_seconds": round(drain, 1),
            "task_status": dict(status_counts(statuses, stream.tasks)),
        },
    }


# -- the run -------------------------------------------------------------------------------------
def prepare_index(index_dir: Path, start: str) -> int:
    """A fresh index directory (seed corpus or none); its document count."""
    if start == "empty":
        index_dir.mkdir(parents=True)
        return 0
    build_seed_index(index_dir)
    from searchsvc.service import SearchService

    with contextlib.closing(SearchService.open(index_dir)) as service:
        return service.stats().documents


def run(args: argparse.Namespace, workdir: Path) -> Results:
    results = Results()
    corpus = load_arxiv(limit=args.records)
    records = corpus.records
    index_dir = workdir / "index"
    documents = prepare_index(index_dir, args.start)
    token = create_key(index_dir)
    writer_env = {"SEARCHSVC_WRITER": "off"} if args.separate_writer else {}
    server = Gunicorn(index_dir, workdir, args.workers, extra_env=writer_env)
    startup = server.start()
    writer = start_separate_writer(index_dir, workdir) if args.separate_writer else None
    api = Api(server.port, token)
    results.setup = {
        "records": len(records),
        "workers": args.workers,
        "writer": "searchsvc writer process" if writer else "a thread in a worker",
        "start": args.start,
        "documents_at_start": documents,
        "startup_seconds": round(startup, 1),
        "cpus": os.cpu_count(),
        "load_average": Path("/proc/loadavg").read_text().split()[:3],
        "workdir": str(workdir),
    }
    try:
        phases = results.phases
        phases["bulk"] = bulk_ingest(api, index_dir, records, args.batch, args.clients)
        phases["bulk"]["documents"] = api.documents()
        # The later phases write copies of the records: not of those the API refuses.
        refused = set(phases["bulk"]["refused_ids"])
        records = tuple(record for record in records if record.id not in refused)
        if args.clients_compare and args.clients_compare != args.clients:
            # The same records again (replacing them), from another number of clients.
            phases["bulk_again"] = bulk_ingest(
                api, index_dir, records, args.batch, args.clients_compare
            )
            phases["bulk_again"]["documents"] = api.documents()
        phases["ack"] = ack_latency(api, index_dir, records, args.ack_writes, args.ack_clients)
        phases["ack"]["documents"] = api.documents()
        phases["visible"] = write_to_searchable(
            api, index_dir, records, args.visible_writes, args.poll_ms / 1000, args.seed
        )
        phases["visible"]["documents"] = api.documents()
        queries = search_queries(records, args.queries)
        phases["search"] = searches_under_writes(
            api,
            index_dir,
            records,
            queries,
            args.search_clients,
            args.search_seconds,
            args.stream_pause,
        )
        phases["search"]["documents"] = api.documents()
        results.setup["log_errors"] = server.log_errors()[:20]
    finally:
        server.stop()
        if writer is not None:
            writer.terminate()
            writer.wait(timeout=30)
    return results


def start_separate_writer(index_dir: Path, workdir: Path) -> subprocess.Popen:
    """`searchsvc writer` on the index, for gunicorn started with SEARCHSVC_WRITER=off."""
    with open(workdir / "writer.log", "ab") as log:
        return subprocess.Popen(
            [str(GUNICORN.with_name("searchsvc")), "writer", "--index", str(index_dir)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def print_tables(results: Results, command: str) -> None:
    setup, phases = results.setup, results.phases
    print_section(
        "Write API through gunicorn",
        f"{setup['records']:,} arXiv-2025 records, {setup['workers']} workers, writer: "
        f"{setup['writer']}, {setup['cpus']} CPUs, load {' '.join(setup['load_average'])}; "
        f"index started {setup['start']} ({setup['documents_at_start']} documents), "
        f"server ready in {setup['startup_seconds']} s.\n\n    {command}",
    )
    rows = []
    for name in ("bulk", "bulk_again"):
        if name in phases:
            b = phases[name]
            rows.append(
                (
                    f"{b['records']:,} records, {b['clients']} client(s), "
                    f"{b['requests']} x {b['batch']} ({b['body_mb']} MB)",
                    f"{b['records_per_s']:,}",
                    f"{b['applied_seconds']:.1f}",
                    f"{b['ack_records_per_s']:,}",
                    f"{b['ack_seconds']:.1f}",
                    f"{b['request_p50_ms']:,} / {b['request_max_ms']:,}",
                    ", ".join(f"{k} {v}" for k, v in b["task_status"].items()),
                    f"{b['documents']:,}",
                )
            )
    headers = (
        "a. bulk NDJSON ingest",
        "records/s (to last task succeeded)",
        "s",
        "ack-only records/s",
        "s",
        "request p50 / max ms",
        "tasks",
        "documents after",
    )
    print_section("a. Bulk ingest (goal >= 1,000 records/s)", format_table(headers, rows))
    for name in ("bulk", "bulk_again"):
        if name in phases and phases[name]["refused"]:
            refused = phases[name]["refused"]
            print(
                f"\n{name}: {len(refused)} records refused by the API's validation (left out, "
                f"the rest of their request sent again): {refused[:5]}"
            )

    a, v = phases["ack"], phases["visible"]
    rows = [
        (
            f"b. ack of a single-record write ({a['clients']} clients)",
            a["n"],
            a["p50_ms"],
            a["p99_ms"],
            a["max_ms"],
            f"{a['writes_per_s']} writes/s; HTTP {a['http_status']}; tasks {a['task_status']}",
            f"{a['documents']:,}",
        ),
        (
            "c. write to searchable: first poll that finds it",
            v["first_seen"]["n"],
            v["first_seen"]["p50_ms"],
            v["first_seen"]["p99_ms"],
            v["first_seen"]["max_ms"],
            f"poll every {v['poll_ms']:g} ms; not found: {len(v['not_found'])}",
            f"{v['documents']:,}",
        ),
        (
            "c. write to searchable: every later poll finds it",
            v["every_poll_after"]["n"],
            v["every_poll_after"]["p50_ms"],
            v["every_poll_after"]["p99_ms"],
            v["every_poll_after"]["max_ms"],
            "10 polls in a row after the last miss",
            f"{v['documents']:,}",
        ),
    ]
    headers = ("single-record writes", "n", "p50 ms", "p99 ms", "max ms", "notes", "documents")
    print_section("b./c. Write latency (goal: searchable p99 < 2 s)", format_table(headers, rows))
    if v["not_found"]:
        print(f"\nnot found: {v['not_found'][:10]}")

    s = phases["search"]
    w = s["writes"]
    rows = [
        (
            name,
            part["n"],
            part["searches_per_s"],
            part["p50_ms"],
            part["p99_ms"],
            part["max_ms"],
            part["failed"] or "none",
        )
        for name, part in (("idle", s["idle"]), ("under writes", s["under_writes"]))
    ]
    headers = ("searches", "n", "per s", "p50 ms", "p99 ms", "max ms", "failed")
    print_section(
        f"d. Faceted, highlighted searches ({s['queries']} common title words, "
        f"{s['clients']} client(s), {s['seconds']:g} s each)",
        format_table(headers, rows),
    )
    print(
        f"\nThe writer client meanwhile: {w['requests']} requests (1 and 100 records, "
        f"alternating; HTTP {w['http_status']}), {w['records_acked']:,} records acknowledged "
        f"({w['records_per_s']:,}/s), ack p50 {w['ack']['p50_ms']} ms / p99 "
        f"{w['ack']['p99_ms']} ms; {w['tasks_applied_during']} of its {w['tasks']} tasks "
        f"applied within the phase, the rest {w['drain_seconds']} s after it "
        f"(tasks {w['task_status']}). Documents after: {s['documents']:,}."
    )
    if setup.get("log_errors"):
        print("\ngunicorn log errors and warnings (first 20):")
        for line in setup["log_errors"]:
            print(f"    {line}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.add_argument("--records", type=int, default=None, help="first N records (all)")
    parser.add_argument("--batch", type=int, default=5000, help="records per request (5000)")
    parser.add_argument("--clients", type=int, default=1, help="bulk clients (1)")
    parser.add_argument(
        "--clients-compare",
        type=int,
        default=0,
        metavar="N",
        help="ingest the records again (replacing them) from N clients, for comparison",
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument(
        "--separate-writer",
        action="store_true",
        help="apply writes in a `searchsvc writer` process (SEARCHSVC_WRITER=off), not a "
        "worker's thread",
    )
    parser.add_argument("--start", choices=("seeds", "empty"), default="seeds")
    parser.add_argument("--ack-writes", type=int, default=300)
    parser.add_argument("--ack-clients", type=int, default=4)
    parser.add_argument("--visible-writes", type=int, default=100)
    parser.add_argument("--poll-ms", type=float, default=20.0)
    parser.add_argument("--queries", type=int, default=50, help="search words (50)")
    parser.add_argument("--search-clients", type=int, default=1)
    parser.add_argument("--search-seconds", type=float, default=20.0)
    parser.add_argument(
        "--stream-pause",
        type=float,
        default=0.1,
        help="seconds between the streamed writes of d (0.1; 0: each as soon as the last is "
        "acknowledged, which queues far more than the writer applies)",
    )
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--workdir", type=Path, help="keep the index and logs here (a temp dir)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    command = " ".join(
        [".venv/bin/python -m benchmarks.bench_writes", *map(shlex.quote, sys.argv[1:])]
    )
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=False)
        results = run(args, args.workdir)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="bench-writes-"))
        try:
            results = run(args, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        payload = {"command": command, "setup": results.setup, "phases": results.phases}
        print(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    else:
        print_tables(results, command)


if __name__ == "__main__":
    main()
