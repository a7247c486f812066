r"""Reliability of the write API under faults: kill -9, sustained load, a read-only index
directory, a full disk. Every acknowledged write must end up applied, exactly once.

    .venv/bin/python -m benchmarks.write_faults                      # every part, ~20 min
    .venv/bin/python -m benchmarks.write_faults --part kill --trials 3
    .venv/bin/python -m benchmarks.write_faults --part load --duration 15

Each part serves a fresh copy of the seed index (`searchsvc index seeds/`) with gunicorn and
searchsvc/serving/gunicorn_conf.py on a free 127.0.0.1 port (SEARCHSVC_WRITE_RATE_LIMIT="").
Writer clients stream writes of disjoint ids, each one request at a time: one new record, a
replacement of one of its own records, a JSON array of 2-5 records, or a DELETE of one of its
own records. A client retries a request that got no reply (connection refused or reset) or a
5xx, with the same body, until a 202 arrives; only a 202 counts as acknowledged. Retrying is
safe because a write is an upsert or delete by id: applying it twice changes nothing. A
request still unanswered `--grace` seconds after the clients were told to stop leaves its
records uncertain: either their acknowledged state or the unanswered one is accepted.

Verification, after the streaming: every acknowledged task is waited for until succeeded (read
from the queue's SQLite file, read-only); each written id is fetched by `/api/v1/records/<id>`
and must hold its last acknowledged content (404 for a deleted one); a search for the run's
own word (in every record it wrote) must count exactly the records expected; then, with the
server stopped, the index must open (`SearchService.open`) and its records (what `searchsvc
export` writes) must hold each id once and the expected content. `lost` counts acknowledged
writes whose effect is missing (an upsert absent or with older content, or a deleted record
back); `dup` counts ids indexed more than once.

Parts (`--part`, repeatable; all by default):

  kill      `--trials` trials (4 workers). Writer clients stream while search clients search;
            at a random moment one process is killed with SIGKILL, in turn: a random worker
            that is not the writer, the elected writer, or the gunicorn master (then every
            worker it left is killed too and gunicorn restarted on the same port). The writer
            is the process holding the flock on `<index>/searchsvc.sqlite3.writer.lock`: the
            pid /proc/locks gives for that file's device and inode (checked to be a worker).
  load      `--duration` seconds, 4 workers, 8 writer clients, 16 search clients.
  readonly  the index directory made read-only for `--hold` s while writes stream, three
            times: its directories only (no file can be created, renamed or removed, existing
            files stay writable: what `chmod -R a-w` does to a service that is not root);
            every file too (like a read-only file system); and every file while gunicorn is
            restarted (its workers open the queue while it is read-only; another process
            keeps the queue's -wal and -shm files, as other workers would). After each, every
            acknowledged task must be applied and writes answered 202 again. As root, chmod
            does not stop writes, so `chattr +i` is used (ext4 refuses writes to an immutable
            file even through descriptors opened before); otherwise `chmod a-w`. SQLite's
            mapped `-shm` file is left writable while workers run (writing to a mapped
            immutable file is a SIGBUS). A bind mount `-o ro` cannot be made while the
            queue's database is open for writing (EBUSY), so it is not used.
  fulldisk  (root only: needs `mount -t tmpfs`) the index on a tmpfs of `--disk-mb` MB, filled
            with a file while writes stream, then freed. Writes should be refused with 507
            (below the free-disk floor, set to an eighth of the disk) or 503
            `task_queue_unavailable` (or queued), never 500; reads should keep answering; after
            freeing, every acknowledged write must be applied.

Nothing is asserted: each part prints a table (or `--json`), the command that reproduces it,
and the errors and warnings of gunicorn's log. A trial that found a problem keeps its directory
(index, queue, gunicorn.log) and names it.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_writes import (
    CONNECTION_ERRORS,
    SEARCH_FACETS,
    Api,
    Gunicorn,
    Reply,
    build_seed_index,
    create_key,
    ms,
    queue_counts,
    status_counts,
    task_statuses,
    wait_for_tasks,
)
from benchmarks.common import format_table, log, percentile, print_section
from searchsvc.domain.records import Record
from searchsvc.tasks import queue_path

PARTS = ("kill", "load", "readonly", "fulldisk")
KILLS = ("worker", "writer", "master")
# Words of the generated records and of the searches (the seed corpus has most of them).
# fmt: off
WORDS = (
    "distributed", "learning", "scheduling", "cluster", "memory", "network", "storage", "cache",
    "graph", "training", "inference", "serverless", "latency", "throughput", "placement",
    "consensus", "replication", "stream", "query", "index", "compression", "gpu", "kernel",
    "model", "data", "systems", "efficient", "scalable", "adaptive", "workload",
)
# fmt: on
COMPARED = ("title", "abstract", "authors", "year", "categories")
ABSENT = None  # the state of a deleted (or never written) record


def normalized(data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record as the service gives them back."""
    record = Record.from_dict(data).to_dict()
    return {name: record[name] for name in COMPARED}


# -- clients -------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What the clients saw, shared by their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: Counter[str] = field(default_factory=Counter)
    ack_seconds: list[float] = field(default_factory=list)
    ack_times: list[float] = field(default_factory=list)  # perf_counter of each 202
    search_seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add(self, name: str, count: int = 1) -> None:
        with self.lock:
            self.counts[name] += count

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.counts)

    def note(self, problem: str) -> None:
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(problem)


def classify(reply: Reply) -> str:
    """`http 503 task_queue_unavailable` and the like, for the tables."""
    return f"http {reply.status} {reply.code}".strip()


class WriterClient(threading.Thread):
    """Streams writes of its own ids, one request at a time, keeping a ledger of what the
    index must hold: `expected` (last acknowledged state of each id) and `uncertain` (states
    of requests never answered, any of which may have been applied after it)."""

    def __init__(
        self,
        api: Api,
        prefix: str,
        run_word: str,
        rng: random.Random,
        stop: threading.Event,
        tally: Tally,
        grace: float,
        pause: float = 0.0,
    ) -> None:
        super().__init__(daemon=True)
        self.api, self.prefix, self.run_word, self.rng = api, prefix, run_word, rng
        self.stop, self.tally, self.grace, self.pause = stop, tally, grace, pause
        self.expected: dict[str, dict[str, Any] | None] = {}
        self.uncertain: dict[str, list[dict[str, Any] | None]] = {}
        self.live: list[str] = []  # ids expected present and not uncertain
        self.tasks: list[int] = []
        self.acked_ops = 0
        self.acked_records = 0
        self.acked_deletes = 0
        self.numbers = 0
        self.versions = 0

    def _record(self, record_id: str) -> dict[str, Any]:
        self.versions += 1
        words = " ".join(self.rng.choices(WORDS, k=6))
        return {
            "id": record_id,
            "title": f"{words.title()} {self.prefix} v{self.versions}",
            "abstract": f"{self.run_word} {' '.join(self.rng.choices(WORDS, k=20))}",
            "authors": [f"Client {self.prefix}", "Fault Tester"],
            "year": self.rng.randint(1995, 2025),
            "categories": [self.rng.choice(("cs.DC", "cs.LG", "cs.DB", "cs.NI"))],
        }

    def _new_id(self) -> str:
        self.numbers += 1
        return f"{self.prefix}{self.numbers}"

    def _existing_id(self) -> str:
        return self.live.pop(self.rng.randrange(len(self.live)))

    def run(self) -> None:
        while not self.stop.is_set():
            roll = self.rng.random()
            if roll < 0.15 and self.live:
                record_id = self._existing_id()
                self._send("delete", [record_id], lambda i=record_id: self.api.delete_record(i))
            elif roll < 0.45:
                ids = [self._existing_id() if roll < 0.25 and self.live else self._new_id()]
                self._upsert(ids, single=True)
            else:
                ids = [self._new_id() for _ in range(self.rng.randint(2, 5))]
                if self.live and self.rng.random() < 0.3:
                    ids[0] = self._existing_id()
                self._upsert(ids, single=False)
            if self.pause:
                self.stop.wait(self.pause)

    def _upsert(self, ids: list[str], single: bool) -> None:
        records = [self._record(record_id) for record_id in ids]
        body: dict | list = records[0] if single else records
        self._send("upsert", records, lambda: self.api.post_records(body))

    def _send(self, kind: str, items: list, request) -> None:
        ids = items if kind == "delete" else [record["id"] for record in items]
        states = [ABSENT] * len(ids) if kind == "delete" else [normalized(r) for r in items]
        reply = self._until_answered(request)
        if reply is not None and reply.status == 202:
            self.tasks.append(reply.json()["id"])
            self.acked_ops += 1
            if kind == "delete":
                self.acked_deletes += 1
            else:
                self.acked_records += len(ids)
            for record_id, state in zip(ids, states, strict=True):
                self.expected[record_id] = state
                self.uncertain.pop(record_id, None)
                if state is not ABSENT:
                    self.live.append(record_id)
            return
        if reply is not None:
            # Refused (4xx): nothing was queued; the ids keep their state but are not reused.
            self.tally.note(f"{kind} refused: {reply.status} {reply.body[:200]!r}")
            return
        for record_id, state in zip(ids, states, strict=True):
            self.uncertain.setdefault(record_id, []).append(state)

    def _until_answered(self, request) -> Reply | None:
        """The first reply that is not a 5xx, retrying; None when given up (after stop)."""
        delay = 0.02
        stop_seen: float | None = None
        while True:
            sent = time.perf_counter()
            try:
                reply = request()
            except CONNECTION_ERRORS as exc:
                self.tally.add(f"write no reply ({type(exc).__name__})")
                reply = None
            if reply is not None:
                now = time.perf_counter()
                self.tally.add(f"write {classify(reply)}")
                if reply.status < 500:
                    if reply.status == 202:
                        with self.tally.lock:
                            self.tally.ack_seconds.append(now - sent)
                            self.tally.ack_times.append(now)
                    return reply
                # 503 (the queue cannot take it now) and 507 (below the free-disk floor) are
                # refusals to retry; any other 5xx is a problem.
                if reply.status not in (503, 507):
                    self.tally.note(f"write {reply.status}: {reply.body[:300]!r}")
            if self.stop.is_set():
                stop_seen = stop_seen or time.perf_counter()
                if time.perf_counter() - stop_seen > self.grace:
                    return None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class SearchClient(threading.Thread):
    """Faceted, highlighted searches of WORDS and the run's word until stopped."""

    def __init__(self, api: Api, run_word: str, stop: threading.Event, tally: Tally) -> None:
        super().__init__(daemon=True)
        self.api, self.words, self.stop, self.tally = api, [*WORDS, run_word], stop, tally

    def run(self) -> None:
        position = random.randrange(len(self.words))
        while not self.stop.is_set():
            query = self.words[position % len(self.words)]
            position += 1
            sent = time.perf_counter()
            try:
                reply = self.api.search(q=query, facets=SEARCH_FACETS, highlight="true")
            except CONNECTION_ERRORS as exc:
                self.tally.add(f"search no reply ({type(exc).__name__})")
                time.sleep(0.05)
                continue
            elapsed = time.perf_counter() - sent
            if reply.status == 200:
                self.tally.add("search ok")
                with self.tally.lock:
                    self.tally.search_seconds.append(elapsed)
            else:
                self.tally.add(f"search {classify(reply)}")
                self.tally.note(f"search {reply.status}: {reply.body[:300]!r}")


@dataclass
class Traffic:
    """Writer and search clients over one server."""

    writers: list[WriterClient]
    searchers: list[SearchClient]
    stop: threading.Event
    tally: Tally
    run_word: str
    started: float = 0.0

    @classmethod
    def start(
        cls, api: Api, name: str, writers: int, searchers: int, rng: random.Random, grace: float
    ) -> Traffic:
        stop, tally = threading.Event(), Tally()
        run_word = "fr" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
        traffic = cls(
            [
                WriterClient(
                    api, f"{name}/c{k}/", run_word, random.Random(rng.random()), stop, tally, grace
                )
                for k in range(writers)
            ],
            [SearchClient(api, run_word, stop, tally) for _ in range(searchers)],
            stop,
            tally,
            run_word,
        )
        traffic.started = time.perf_counter()
        for client in (*traffic.writers, *traffic.searchers):
            client.start()
        return traffic

    def finish(self) -> None:
        self.stop.set()
        for client in (*self.writers, *self.searchers):
            client.join()

    @property
    def tasks(self) -> list[int]:
        return [task for writer in self.writers for task in writer.tasks]

    def acked(self) -> dict[str, int]:
        return {
            "ops": sum(w.acked_ops for w in self.writers),
            "records": sum(w.acked_records for w in self.writers),
            "deletes": sum(w.acked_deletes for w in self.writers),
            "uncertain": sum(len(w.uncertain) for w in self.writers),
        }

    def longest_ack_gap(self, since: float, until: float) -> float:
        """The longest time without a 202 between `since` and `until` (perf_counter)."""
        with self.tally.lock:
            moments = sorted(t for t in self.tally.ack_times if since < t < until)
        edges = [since, *moments, until]
        return max(later - earlier for earlier, later in itertools.pairwise(edges))


# -- verification --------------------------------------------------------------------------------
def allowed_states(traffic: Traffic) -> dict[str, list[dict[str, Any] | None]]:
    """Each written id: its acknowledged state first, then the states of unanswered requests."""
    allowed: dict[str, list[dict[str, Any] | None]] = {}
    for writer in traffic.writers:
        for record_id in {*writer.expected, *writer.uncertain}:
            first = writer.expected.get(record_id, ABSENT)
            allowed[record_id] = [first, *writer.uncertain.get(record_id, [])]
    return allowed


def compare(
    record_id: str, actual: dict[str, Any] | None, allowed: list[dict[str, Any] | None]
) -> str:
    """'' when the actual state is allowed, else what is wrong."""
    if any(actual == state for state in allowed):
        return ""
    expected = allowed[0]
    if expected is ABSENT:
        return "deleted but present"
    if actual is ABSENT:
        return "missing"
    return "older or other content"


def fetch_state(api: Api, record_id: str) -> dict[str, Any] | str | None:
    for _ in range(5):
        try:
            reply = api.record(record_id)
        except CONNECTION_ERRORS:
            time.sleep(0.2)
            continue
        if reply.status == 200:
            data = reply.json()
            return {name: data[name] for name in COMPARED}
        if reply.status == 404:
            return ABSENT
        return f"HTTP {reply.status}"
    return "no reply"


def verify_live(api: Api, server: Gunicorn, traffic: Traffic) -> dict[str, Any]:
    """Tasks, records by HTTP and the run word's search count, with the server running.

    When some acknowledged tasks are still not done (none changed for 30 s), the records are
    checked as they are, then gunicorn is restarted to see whether a new writer applies them.
    """
    index_dir, tasks = server.index_dir, traffic.tasks
    started = time.perf_counter()
    statuses = wait_for_tasks(index_dir, tasks, timeout=180, stall=30)
    drain = time.perf_counter() - started
    task_status = status_counts(statuses, tasks)
    failed = [
        f"task {task_id}: {status}"
        for task_id, status in statuses.items()
        if status["status"] != "succeeded"
    ]
    allowed = allowed_states(traffic)
    problems: Counter[str] = Counter()
    examples: list[str] = []
    # A worker that is not the writer sees a batch within its refresh (a second or two): ids
    # found wrong are fetched again for up to 5 s, and count as lost only if still wrong.
    wrong_ids = list(allowed)
    stale_at_first: int | None = None
    deadline = time.monotonic() + 5
    while True:
        with ThreadPoolExecutor(4) as pool:
            fetched = pool.map(lambda record_id: fetch_state(api, record_id), wrong_ids)
            states = dict(zip(wrong_ids, fetched, strict=True))
        wrong_ids = [
            record_id
            for record_id, actual in states.items()
            if isinstance(actual, str) or compare(record_id, actual, allowed[record_id])
        ]
        if stale_at_first is None:
            stale_at_first = len(wrong_ids)
        if not wrong_ids or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for record_id in wrong_ids:
        actual = states[record_id]
        if isinstance(actual, str):
            problems[f"fetch {actual}"] += 1
            continue
        wrong = compare(record_id, actual, allowed[record_id])
        problems[wrong] += 1
        if len(examples) < 5:
            examples.append(f"{record_id}: {wrong}: {actual} (expected {allowed[record_id]})")
    low = sum(1 for states_ in allowed.values() if all(s is not ABSENT for s in states_))
    high = sum(1 for states_ in allowed.values() if any(s is not ABSENT for s in states_))
    # Workers other than the writer see a batch within their refresh: let them catch up.
    deadline = time.monotonic() + 5
    while True:
        try:
            found = api.total(traffic.run_word)
        except (*CONNECTION_ERRORS, RuntimeError) as exc:
            found = -1
            examples.append(f"search count failed: {exc}")
        if low <= found <= high or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    after_restart = None
    if failed:
        log(f"   {len(failed)} tasks not done: restarting gunicorn (does a new writer apply them?)")
        server.stop()
        server.start()
        again = wait_for_tasks(index_dir, tasks, timeout=120, stall=30)
        after_restart = dict(status_counts(again, tasks))
    return {
        "tasks": len(tasks),
        "task_status": dict(task_status),
        "tasks_not_succeeded": failed[:10],
        "tasks_after_restart": after_restart,
        "drain_seconds": round(drain, 2),
        "ids": len(allowed),
        "http_wrong_at_first": stale_at_first,
        "http_lost": sum(problems.values()),
        "http_problems": dict(problems),
        "examples": examples,
        "search_count": found,
        "search_expected": low if low == high else f"{low}-{high}",
        "search_count_ok": low <= found <= high,
    }


def verify_index(index_dir: Path, traffic: Traffic) -> dict[str, Any]:
    """With the server stopped: the index opens, each id once, expected content."""
    from searchsvc.service import SearchService

    try:
        with contextlib.closing(SearchService.open(index_dir)) as service:
            exported = list(service.records())
            total = service.search("", per_page=1, facets=()).total
    except Exception as exc:  # a corrupt index raises whatever Whoosh raises
        return {"opens": False, "error": f"{type(exc).__name__}: {exc}", "dup": 0, "lost": 0}
    counts = Counter(record.id for record in exported)
    duplicates = {record_id: n for record_id, n in counts.items() if n > 1}
    actual = {record.id: normalized(record.to_dict()) for record in exported}
    allowed = allowed_states(traffic)
    problems: Counter[str] = Counter()
    examples = []
    for record_id, states in allowed.items():
        wrong = compare(record_id, actual.get(record_id, ABSENT), states)
        if wrong:
            problems[wrong] += 1
            if len(examples) < 5:
                examples.append(f"{record_id}: {wrong}")
    return {
        "opens": True,
        "documents": len(exported),
        "search_total": total,
        "dup": sum(n - 1 for n in duplicates.values()),
        "dup_examples": list(duplicates.items())[:5],
        "lost": sum(problems.values()),
        "problems": dict(problems),
        "examples": examples,
    }


# -- the parts -----------------------------------------------------------------------------------
@dataclass
class Setup:
    args: argparse.Namespace
    root: Path
    seed_index: Path
    rng: random.Random
    kept: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def served(
        self,
        name: str,
        workers: int,
        index_dir: Path | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> Iterator[tuple[Gunicorn, Api, Path]]:
        """A copy of the seed index (in `index_dir` when given) served by gunicorn; the
        directory is removed afterwards unless something went wrong or --keep."""
        workdir = self.root / name
        workdir.mkdir(parents=True, exist_ok=True)
        index_dir = index_dir or workdir / "index"
        shutil.copytree(self.seed_index, index_dir)
        token = create_key(index_dir)
        server = Gunicorn(index_dir, workdir, workers, extra_env=extra_env)
        server.start()
        ok = False
        try:
            yield server, Api(server.port, token), workdir
            ok = True
        finally:
            server.stop()
            if not ok or self.args.keep:
                self.kept.append(str(workdir))

    def discard(self, workdir: Path, problem: bool) -> None:
        if problem or self.args.keep:
            if str(workdir) not in self.kept:
                self.kept.append(str(workdir))
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def search_figures(tally: Tally) -> dict[str, Any]:
    """Searches answered 200, answered otherwise (failed), and not answered (a killed worker)."""
    counts = tally.snapshot()
    return {
        "ok": counts["search ok"],
        "failed": counts_with(counts, "search http"),
        "no_reply": counts_with(counts, "search no reply"),
        "p50_ms": ms(percentile(tally.search_seconds, 50)),
        "p99_ms": ms(percentile(tally.search_seconds, 99)),
    }


def outcome(live: dict, index: dict, counts, traffic, log_errors: list) -> dict:
    """What a run or trial lost, doubled or failed: the fields every table row reports."""
    return {
        "lost": max(live["http_lost"], index["lost"]),
        "dup": index["dup"],
        "write_5xx": fives(counts, "write"),
        "search_5xx": fives(counts, "search"),
        "no_reply": counts_with(counts, "write no reply"),
        "searches": search_figures(traffic.tally),
        "live": live,
        "index": index,
        "client_problems": traffic.tally.problems[:5],
        "log_errors": log_errors[:10],
    }


def fives(counts: Counter[str], prefix: str) -> int:
    return sum(n for name, n in counts.items() if name.startswith(f"{prefix} http 5"))


def kill_one(server: Gunicorn, kind: str, rng: random.Random) -> tuple[str, float]:
    """SIGKILL a process of `kind`: what was killed, and when (perf_counter)."""
    workers = server.worker_pids()
    if kind == "master":
        master = server.master_pid
        killed_at = time.perf_counter()
        killed = server.kill_master()
        restart = server.start()
        return f"master {master} + {len(killed)} workers (restart {restart:.1f} s)", killed_at
    writer = None
    deadline = time.monotonic() + 3
    while writer not in workers and time.monotonic() < deadline:
        writer = server.writer_pid()
        workers = server.worker_pids()
        if writer not in workers:
            time.sleep(0.05)
    if kind == "writer" and writer in workers:
        victim, what = writer, "writer"
    elif kind == "writer":
        victim, what = rng.choice(workers), "worker (no writer found)"
    else:
        victim, what = rng.choice([pid for pid in workers if pid != writer] or workers), "worker"
    killed_at = time.perf_counter()
    os.kill(victim, signal.SIGKILL)
    return f"{what} {victim}", killed_at


def part_kill(setup: Setup) -> dict[str, Any]:
    args, rows = setup.args, []
    kinds = [kind for kind in args.kill.split(",") if kind]
    for trial in range(args.trials):
        kind = kinds[trial % len(kinds)]
        name = f"kill-{trial + 1:02d}"
        with setup.served(name, args.workers) as (server, api, workdir):
            traffic = Traffic.start(api, name, args.writers, args.searchers, setup.rng, args.grace)
            kill_after = setup.rng.uniform(1.0, max(1.5, args.trial_seconds - 2))
            time.sleep(kill_after)
            killed, killed_at = kill_one(server, kind, setup.rng)
            killed_wall = time.time() - (time.perf_counter() - killed_at)
            time.sleep(max(0.0, traffic.started + args.trial_seconds - time.perf_counter()))
            gap = traffic.longest_ack_gap(killed_at, time.perf_counter())
            ended_wall = time.time()
            traffic.finish()
            if not server.running():
                server.start()
            live = verify_live(api, server, traffic)
            apply_gap = longest_apply_gap(server.index_dir, traffic.tasks, killed_wall, ended_wall)
            log_errors = server.log_errors()
        index = verify_index(server.index_dir, traffic)
        counts = traffic.tally.snapshot()
        row = {
            "trial": trial + 1,
            "killed": killed,
            "at_s": round(kill_after, 1),
            "write_gap_s": round(gap, 2),
            "apply_gap_s": round(apply_gap, 2),
            "acked": traffic.acked(),
            **outcome(live, index, counts, traffic, log_errors),
        }
        problem = bool(
            row["lost"]
            or row["dup"]
            or row["write_5xx"]
            or row["search_5xx"]
            or not index["opens"]
            or not live["search_count_ok"]
            or live["tasks_not_succeeded"]
        )
        row["problem"] = problem
        setup.discard(workdir, problem)
        if problem:
            row["kept"] = str(workdir)
        rows.append(row)
        log(
            f"trial {trial + 1}: killed {killed} at {kill_after:.1f} s; acked {row['acked']}; "
            f"lost {row['lost']}, dup {row['dup']}, 5xx {row['write_5xx']}+{row['search_5xx']}"
        )
    return {"trials": rows}


def longest_apply_gap(index_dir: Path, tasks: Sequence[int], since: float, until: float) -> float:
    """The longest time between `since` and `until` (Unix times) in which no task finished."""
    statuses = task_statuses(index_dir, tasks)
    finished = sorted(
        stamp
        for status in statuses.values()
        if status["finished_at"]
        and since < (stamp := datetime.fromisoformat(status["finished_at"]).timestamp()) < until
    )
    edges = [since, *finished, until]
    return max(later - earlier for earlier, later in itertools.pairwise(edges))


def counts_with(counts: Counter[str], text: str) -> int:
    return sum(n for name, n in counts.items() if text in name)


def part_load(setup: Setup) -> dict[str, Any]:
    args = setup.args
    log(
        f"load: {args.load_workers} workers, {args.load_writers} writers, "
        f"{args.load_searchers} searchers, {args.duration:g} s"
    )
    with setup.served("load", args.load_workers) as (server, api, workdir):
        traffic = Traffic.start(
            api, "load", args.load_writers, args.load_searchers, setup.rng, args.grace
        )
        time.sleep(args.duration)
        traffic.finish()
        live = verify_live(api, server, traffic)
        log_errors = server.log_errors()
    index = verify_index(server.index_dir, traffic)
    counts = traffic.tally.snapshot()
    acked = traffic.acked()
    result = {
        "seconds": args.duration,
        "workers": args.load_workers,
        "writers": args.load_writers,
        "searchers": args.load_searchers,
        "acked": acked,
        "acked_ops_per_s": round(acked["ops"] / args.duration, 1),
        "ack_p50_ms": ms(percentile(traffic.tally.ack_seconds, 50)),
        "ack_p99_ms": ms(percentile(traffic.tally.ack_seconds, 99)),
        "expected_present": live["search_expected"],
        "present": live["search_count"],
        **outcome(live, index, counts, traffic, log_errors),
    }
    problem = result["lost"] or result["dup"] or result["write_5xx"] or result["search_5xx"]
    problem = problem or not index["opens"] or live["tasks_not_succeeded"]
    setup.discard(workdir, bool(problem))
    return result


# -- read-only directory and full disk ---------------------------------------------------------
def is_root() -> bool:
    return os.geteuid() == 0


def tree(path: Path, files: bool, shm: bool = False) -> list[Path]:
    """A directory, its subdirectories and (`files`) their files, but SQLite's `-shm` files
    unless `shm`: the kernel sends SIGBUS to every process writing to a mapped file made
    immutable, a fault of the method (a read-only file system cannot be switched on while a
    file is mapped writable). With no server running, the `-shm` file can be included."""
    found = [path]
    for root, directories, names in os.walk(path):
        found += [Path(root, name) for name in directories]
        if files:
            found += [Path(root, n) for n in names if shm or not n.endswith("-shm")]
    return found


@contextlib.contextmanager
def read_only(index_dir: Path, files: bool, shm: bool = False) -> Iterator[str]:
    """The index directory's directories (and files) made read-only until the block ends."""
    paths = [str(p) for p in tree(index_dir, files, shm)]
    if is_root():
        # chattr stops root too; errors for files that vanished meanwhile are expected.
        subprocess.run(["chattr", "+i", *paths], capture_output=True, check=False)
        method = "chattr +i"
    else:
        for path in paths:
            with contextlib.suppress(OSError):
                os.chmod(path, os.stat(path).st_mode & ~0o222)
        method = "chmod a-w"
    try:
        yield method
    finally:
        if is_root():
            subprocess.run(["chattr", "-R", "-i", str(index_dir)], capture_output=True)
        else:
            for path in tree(index_dir, files, shm):
                with contextlib.suppress(OSError):
                    os.chmod(path, os.stat(path).st_mode | 0o200)


def hold_open(database: Path) -> subprocess.Popen:
    """A process that reads the SQLite database once and then keeps it open, idle (its -wal
    and -shm files are not removed while it runs)."""
    code = (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(database)!r})\n"
        "c.execute('SELECT COUNT(*) FROM tasks').fetchall()\n"
        "print('open', flush=True)\n"
        "time.sleep(3600)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.stdout.readline()
    return process


def window_figures(traffic: Traffic, before: Counter[str], started: float) -> dict[str, Any]:
    """What the clients saw since `before` was taken at `started`."""
    delta = traffic.tally.snapshot()
    delta.subtract(before)
    return {
        "seconds": round(time.perf_counter() - started, 1),
        "writes": {k[6:]: v for k, v in sorted(delta.items()) if k.startswith("write ") and v},
        "searches": {k[7:]: v for k, v in sorted(delta.items()) if k.startswith("search ") and v},
    }


def tasks_done(index_dir: Path, tasks: Sequence[int]) -> int:
    statuses = wait_for_tasks(index_dir, tasks, timeout=0)
    return sum(1 for s in statuses.values() if s["status"] in ("succeeded", "failed"))


def part_readonly(setup: Setup) -> dict[str, Any]:
    args = setup.args
    windows = []
    log(f"readonly: {args.workers} workers; directories, then every file, read-only")
    with setup.served("readonly", args.workers) as (server, api, workdir):
        traffic = Traffic.start(api, "ro", 2, 2, setup.rng, args.grace)
        time.sleep(2)
        cases = (
            ("directories", False, False),
            ("directories and files", True, False),
            ("directories and files, gunicorn restarted meanwhile", True, True),
        )
        for label, files, restart in cases:
            tasks_before = len(traffic.tasks)
            holder = None
            if restart:
                # As when other workers keep running: the queue's -wal and -shm files stay.
                holder = hold_open(queue_path(str(server.index_dir)))
                server.stop()
            before, started = traffic.tally.snapshot(), time.perf_counter()
            with read_only(server.index_dir, files, shm=restart) as method:
                if restart:
                    server.start()
                time.sleep(args.hold)
                window = window_figures(traffic, before, started)
                new_tasks = traffic.tasks[tasks_before:]
            restored = time.perf_counter()
            if holder is not None:
                holder.kill()
                holder.wait()
            window.update(
                {
                    "read_only": f"{label} ({method})",
                    "acked_during": len(new_tasks),
                    "applied_during": tasks_done_safe(server.index_dir, new_tasks),
                }
            )
            # Every task acknowledged so far, applied once writable again (the writer's retry
            # waits up to 10 s)? And do writes get through again?
            before = traffic.tally.snapshot()
            acked = list(traffic.tasks)
            statuses = wait_for_tasks(server.index_dir, acked, timeout=30)
            waited = time.perf_counter() - restored
            time.sleep(max(0.0, restored + 5 - time.perf_counter()))
            window["after_restore"] = {
                "seconds": round(waited, 1),
                "tasks": dict(status_counts(statuses, acked)),
                "writes": window_figures(traffic, before, restored)["writes"],
            }
            windows.append(window)
            log(f"   {label}: {window}")
        traffic.finish()
        live = verify_live(api, server, traffic)
        log_errors = server.log_errors()
        counts = queue_counts(server.index_dir)
    index = verify_index(server.index_dir, traffic)
    totals = traffic.tally.snapshot()
    result = {
        "windows": windows,
        "acked": traffic.acked(),
        "lost": max(live["http_lost"], index["lost"]),
        "dup": index["dup"],
        "write_5xx": fives(totals, "write"),
        "search_5xx": fives(totals, "search"),
        "queue": counts,
        "live": live,
        "index": index,
        "client_problems": traffic.tally.problems[:5],
        "log_errors": log_errors[:15],
    }
    problem = result["lost"] or result["dup"] or not index["opens"] or live["tasks_not_succeeded"]
    setup.discard(workdir, bool(problem))
    return result


def tasks_done_safe(index_dir: Path, tasks: Sequence[int]) -> int | str:
    try:
        return tasks_done(index_dir, tasks)
    except Exception as exc:  # the queue's file may be unreadable while read-only
        return f"? ({type(exc).__name__})"


class Filler:
    """Keeps a file system full: appends to a file until ENOSPC, again and again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with open(self.path, "ab", buffering=0) as handle:
            while not self.stop.is_set():
                for size in (1 << 20, 1 << 12):
                    with contextlib.suppress(OSError):
                        while True:
                            handle.write(b"\0" * size)
                self.stop.wait(0.05)

    def __enter__(self) -> Filler:
        self.thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.path.unlink()


@contextlib.contextmanager
def tmpfs(path: Path, megabytes: int) -> Iterator[Path]:
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)],
                   check=True)  # fmt: skip
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], check=False).returncode:
            subprocess.run(["umount", "-l", str(path)], check=False)


def part_fulldisk(setup: Setup) -> dict[str, Any]:
    args = setup.args
    if not is_root():
        return {"skipped": "needs root to mount a tmpfs"}
    log(f"fulldisk: the index on a {args.disk_mb} MB tmpfs, filled while writes stream")
    disk = setup.root / "fulldisk-tmpfs"
    with tmpfs(disk, args.disk_mb):
        name = "fulldisk"
        # The free-disk floor scaled to the small disk (its default, 256 MiB, is more than the
        # whole tmpfs): writes are refused with 507 as the filler nears it, and some land in
        # what is left below it, so both the floor and the full disk are met.
        floor = {"SEARCHSVC_MIN_FREE_DISK_BYTES": str(args.disk_mb * 1024**2 // 8)}
        with setup.served(name, args.workers, disk / "index", floor) as (server, api, workdir):
            traffic = Traffic.start(api, "fd", 2, 2, setup.rng, args.grace)
            time.sleep(2)
            tasks_before = len(traffic.tasks)
            before, started = traffic.tally.snapshot(), time.perf_counter()
            with Filler(disk / "filler"):
                free = shutil.disk_usage(disk).free
                time.sleep(args.hold)
                full = window_figures(traffic, before, started)
                new_tasks = traffic.tasks[tasks_before:]
                full["acked_during"] = len(new_tasks)
                full["applied_during"] = tasks_done(server.index_dir, new_tasks)
                full["free_bytes_when_filled"] = free
                full["queue_when_full"] = queue_counts(server.index_dir)
            before, started = traffic.tally.snapshot(), time.perf_counter()
            after_free = shutil.disk_usage(disk).free
            time.sleep(4)
            after = window_figures(traffic, before, started)
            after["free_bytes_after_freeing"] = after_free
            traffic.finish()
            live = verify_live(api, server, traffic)
            log_errors = server.log_errors()
            counts = queue_counts(server.index_dir)
        index = verify_index(server.index_dir, traffic)
        orphans = orphan_files(server.index_dir)
        free_at_end = shutil.disk_usage(disk).free
        kept_copy = None
        problem = bool(
            live["http_lost"]
            or index["lost"]
            or index["dup"]
            or not index["opens"]
            or live["tasks_not_succeeded"]
        )
        if problem or args.keep:
            # The tmpfs goes away: keep a copy of the index and queue for inspection.
            kept_copy = workdir / "index-copy"
            shutil.copytree(disk / "index", kept_copy)
            setup.kept.append(str(workdir))
    totals = traffic.tally.snapshot()
    return {
        "disk_mb": args.disk_mb,
        "full": full,
        "after_freeing": after,
        "acked": traffic.acked(),
        "lost": max(live["http_lost"], index["lost"]),
        "dup": index["dup"],
        "write_500": sum(n for k, n in totals.items() if k.startswith("write http 500")),
        "write_5xx": fives(totals, "write"),
        "search_5xx": fives(totals, "search"),
        "queue": counts,
        "free_bytes_at_end": free_at_end,
        "orphan_files": orphans,
        "live": live,
        "index": index,
        "client_problems": traffic.tally.problems[:5],
        "log_errors": log_errors[:15],
        "kept_copy": str(kept_copy) if kept_copy else None,
    }


def orphan_files(index_dir: Path) -> dict[str, Any]:
    """Files of the live generation named after a segment its Whoosh TOC does not list (left
    by a failed commit), with their bytes."""
    from whoosh import index as whoosh_index

    live = index_dir / (index_dir / "CURRENT").read_text().strip()
    segments = {s.segment_id() for s in whoosh_index.open_dir(str(live))._segments()}
    found = [
        path
        for path in live.iterdir()
        if path.name.startswith("MAIN_")
        and path.name != "MAIN_WRITELOCK"
        and path.name.split(".")[0] not in segments
    ]
    return {
        "files": len(found),
        "bytes": sum(path.stat().st_size for path in found),
        "segments": sorted({path.name.split(".")[0] for path in found})[:10],
        "temp_dir_bytes": sum(f.stat().st_size for f in live.glob("*.tmp/*") if f.is_file()),
    }


# -- output --------------------------------------------------------------------------------------
def print_results(results: dict[str, Any], command: str) -> None:
    print_section("Write API reliability", f"    {command}")
    if "kill" in results:
        rows = [
            (
                r["trial"],
                r["killed"],
                r["at_s"],
                r["write_gap_s"],
                r["apply_gap_s"],
                r["acked"]["ops"],
                r["acked"]["records"],
                r["acked"]["deletes"],
                r["acked"]["uncertain"],
                r["lost"],
                r["dup"],
                f"{r['write_5xx']} / {r['search_5xx']}",
                f"{r['no_reply']} / {r['searches']['no_reply']}",
                "yes" if r["index"]["opens"] else "NO",
                f"{r['live']['search_count']} / {r['live']['search_expected']}",
                f"{r['searches']['ok']:,}",
                r["searches"]["failed"],
            )
            for r in results["kill"]["trials"]
        ]
        headers = (
            "trial",
            "killed (SIGKILL)",
            "at s",
            "write gap s",
            "apply gap s",
            "acked writes",
            "records",
            "deletes",
            "uncertain",
            "lost",
            "dup",
            "5xx w / s",
            "no reply w / s",
            "opens",
            "run-word count / expected",
            "searches",
            "failed searches",
        )
        print_section("(i) kill -9 during writes", format_table(headers, rows))
        trials = results["kill"]["trials"]
        print(
            f"\n{len(trials)} trials: {sum(r['acked']['ops'] for r in trials):,} acknowledged "
            f"writes, lost {sum(r['lost'] for r in trials)}, duplicated "
            f"{sum(r['dup'] for r in trials)}, "
            f"5xx {sum(r['write_5xx'] + r['search_5xx'] for r in trials)}, "
            f"trials with a problem: {sum(r['problem'] for r in trials)}. `write gap`: the "
            "longest time without a 202 from the kill to the end of the trial's streaming; "
            "`apply gap`: the same for tasks finishing (the queue's finished_at); "
            "`no reply`: requests that got none (a killed process; writes retried); "
            "`failed searches`: answered, but not 200; "
            "`uncertain`: ids whose last request never got a reply."
        )
        for r in trials:
            if r["problem"]:
                print(f"\ntrial {r['trial']} ({r['killed']}): kept in {r.get('kept')}")
                print(orjson.dumps(_details(r), option=orjson.OPT_INDENT_2).decode())
    if "load" in results:
        r = results["load"]
        rows = [
            (
                f"{r['seconds']:g} s, {r['workers']} workers, {r['writers']} writers, "
                f"{r['searchers']} searchers",
                f"{r['acked']['ops']:,} ({r['acked_ops_per_s']}/s)",
                f"{r['ack_p50_ms']} / {r['ack_p99_ms']}",
                f"{r['present']} / {r['expected_present']}",
                r["lost"],
                r["dup"],
                f"{r['write_5xx']} / {r['search_5xx']}",
                f"{r['searches']['ok']:,}",
                r["searches"]["failed"],
                f"{r['searches']['p50_ms']} / {r['searches']['p99_ms']}",
                r["live"]["drain_seconds"],
            )
        ]
        headers = (
            "load run",
            "acked writes",
            "ack p50 / p99 ms",
            "present / expected",
            "lost",
            "dup",
            "5xx w / s",
            "searches",
            "failed searches",
            "search p50 / p99 ms",
            "drain s",
        )
        print_section("(ii) sustained load", format_table(headers, rows))
        print(orjson.dumps(_details(r), option=orjson.OPT_INDENT_2).decode())
    if "readonly" in results:
        r = results["readonly"]
        rows = [
            (
                w["read_only"],
                w["seconds"],
                _counts(w["writes"]),
                _counts(w["searches"]),
                w["acked_during"],
                w["applied_during"],
                f"{w['after_restore']['seconds']} s: {_counts(w['after_restore']['tasks'])}",
                _counts(w["after_restore"]["writes"]),
            )
            for w in r["windows"]
        ]
        headers = (
            "read-only",
            "s",
            "writes answered",
            "searches answered",
            "acked meanwhile",
            "applied meanwhile",
            "every acked task after restoring",
            "writes answered after restoring",
        )
        print_section("(iii) read-only index directory", format_table(headers, rows))
        print_outcome(r)
    if "fulldisk" in results:
        r = results["fulldisk"]
        if "skipped" in r:
            print_section("(iv) full disk", f"skipped: {r['skipped']}")
        else:
            full, after = r["full"], r["after_freeing"]
            rows = [
                (
                    "full",
                    full["seconds"],
                    _counts(full["writes"]),
                    _counts(full["searches"]),
                    full["acked_during"],
                    full["applied_during"],
                    _counts(full["queue_when_full"]),
                ),
                ("after freeing", after["seconds"], _counts(after["writes"]),
                 _counts(after["searches"]), "", "", ""),
            ]  # fmt: skip
            headers = (
                f"{r['disk_mb']} MB tmpfs",
                "s",
                "writes answered",
                "searches answered",
                "acked meanwhile",
                "applied meanwhile",
                "queue",
            )
            print_section("(iv) full disk", format_table(headers, rows))
            print_outcome(r)
            orphans = r["orphan_files"]
            print(
                f"Files left by failed commits at the end: {orphans['files']} "
                f"({orphans['bytes']:,} bytes), Whoosh temp files {orphans['temp_dir_bytes']:,}"
                f" bytes; {r['write_500']} writes answered 500."
            )
    for part in ("readonly", "fulldisk"):
        if part in results and "live" in results[part]:
            print(f"\n{part} details:")
            print(orjson.dumps(_details(results[part]), option=orjson.OPT_INDENT_2).decode())


def _counts(counts: dict[str, int] | Counter[str]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items()) or "none"


def print_outcome(r: dict[str, Any]) -> None:
    """What the verification of a part found, as a sentence."""
    live, index = r["live"], r["index"]
    restart = live.get("tasks_after_restart")
    print(
        f"\nAcknowledged {r['acked']['ops']:,} writes ({r['acked']['records']:,} records, "
        f"{r['acked']['deletes']:,} deletes). Tasks after the streaming: "
        f"{_counts(live['task_status'])}"
        + (f"; after restarting gunicorn: {_counts(restart)}" if restart else "")
        + f". Lost while serving (records API): {live['http_lost']} "
        f"{_counts(live['http_problems']) if live['http_problems'] else ''}; "
        f"lost in the index at the end{' (after the restart)' if restart else ''}: "
        f"{index['lost']} {_counts(index.get('problems', {}))}; duplicated: {r['dup']}; "
        f"run-word count {live['search_count']} of {live['search_expected']} expected; "
        f"5xx: {r['write_5xx']} writes, {r['search_5xx']} searches."
    )


def _details(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("live", "index", "client_problems", "log_errors")
    return {key: row[key] for key in keys if row.get(key)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.add_argument("--part", action="append", choices=PARTS, help="run only this part")
    parser.add_argument("--trials", type=int, default=30, help="kill trials (30)")
    parser.add_argument("--kill", default=",".join(KILLS), help="what to kill, in turn")
    parser.add_argument("--trial-seconds", type=float, default=8.0, help="streaming per trial")
    parser.add_argument("--workers", type=int, default=4, help="workers (kill, readonly, fulldisk)")
    parser.add_argument("--writers", type=int, default=3, help="writer clients per trial (3)")
    parser.add_argument("--searchers", type=int, default=2, help="search clients per trial (2)")
    parser.add_argument("--duration", type=float, default=60.0, help="load run seconds (60)")
    parser.add_argument("--load-workers", type=int, default=4)
    parser.add_argument("--load-writers", type=int, default=8)
    parser.add_argument("--load-searchers", type=int, default=16)
    parser.add_argument("--hold", type=float, default=8.0, help="seconds read-only or full (8)")
    parser.add_argument("--disk-mb", type=int, default=64, help="tmpfs size for fulldisk (64)")
    parser.add_argument(
        "--grace", type=float, default=30.0, help="retrying after stop, seconds (30)"
    )
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--keep", action="store_true", help="keep every trial's directory")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    parts = args.part or list(PARTS)
    command = " ".join(
        [".venv/bin/python -m benchmarks.write_faults", *map(shlex.quote, sys.argv[1:])]
    )
    root = Path(tempfile.mkdtemp(prefix="write-faults-"))
    setup = Setup(args, root, root / "seed-index", random.Random(args.seed))
    results: dict[str, Any] = {}
    try:
        build_seed_index(setup.seed_index)
        runners = {
            "kill": part_kill,
            "load": part_load,
            "readonly": part_readonly,
            "fulldisk": part_fulldisk,
        }
        for part in parts:
            results[part] = runners[part](setup)
    finally:
        if not setup.kept:
            shutil.rmtree(root, ignore_errors=True)
        else:
            shutil.rmtree(setup.seed_index, ignore_errors=True)
            log(f"kept for inspection: {', '.join(setup.kept)}")
    results["kept"] = setup.kept
    if args.json:
        payload = {"command": command, **results}
        print(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    else:
        print_results(results, command)


if __name__ == "__main__":
    main()
