r"""Power loss: are the writes acknowledged as succeeded still there after the power is cut?

    .venv/bin/python -m benchmarks.power_loss                          # 30 rounds, ~4 min
    .venv/bin/python -m benchmarks.power_loss --rounds 3 --without-state-fsync

A `kill -9` (write_faults.py) leaves in the kernel's page cache everything a process wrote; a
power cut keeps only what reached the disk. Each round models that with a "durable disk":

1. A writer process (`--role writer`) opens a copy of a two-generation seed index (the seeds
   built twice, so that a previous generation is there to fall back on), enqueues `--tasks`
   tasks in the real queue (searchsvc.tasks, SQLite with `synchronous=FULL`), and applies them
   with the real TaskWriter, one task per engine commit (each task: `--records` new records and
   a replacement of one shared record, `pl-counter`, whose title says the task's number).
   `os.fsync`, `open` and `os.open` (for files they create) and `os.mkdir` are wrapped: for
   each inode the disk keeps the content it had at its last fsync (a file created since holds
   nothing, one from before the round what it held then); for each directory, the names it had
   at its last fsync (a rename or removal is durable only once its directory is). SQLite
   fsyncs in C, unseen: its commits are taken as durable (what `synchronous=FULL` promises),
   and the queue is copied with SQLite's backup API at the moment of the cut.
2. The power is cut at the K-th fsync, K drawn uniformly from every fsync of a calibration run
   and one more (the cut after the last commit): the copy of the queue is made, then the
   process kills itself with SIGKILL before that fsync runs.
3. The parent rebuilds a directory holding only the durable state (each name the durable
   directory listings hold, each file truncated to its durable content: renames whose
   directory was not fsynced undone, removals too) with the queue's copy in it.
4. A recovery process (`--role recover`) opens the index (served live, from the previous
   generation with a warning, or not at all) and the queue, lets the writer finish every
   task left, and lists the index's records and the tasks' statuses.

Counted per round, against the tasks acknowledged as succeeded in the queue at the cut:
`lost` the writes of those tasks missing from the index after recovery (a new record absent;
the counter showing an earlier task); `misreported` the tasks the queue reports succeeded at
the end whose writes are not all in the index; `not applied` tasks not succeeded at the end.

`--without-state-fsync` runs the writer as the code was before issue 33: Whoosh's commit and
the seal fsync nothing but the files searchsvc writes itself (the derived files, the metadata,
the manifest), so the new segments and table of contents are vouched for by a manifest while
their content may still be lost. Nothing is asserted; the table and the command are printed.
"""

from __future__ import annotations

import argparse
import builtins
import io
import json
import os
import random
import shlex
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import format_table, log, print_section

ROOT = Path(__file__).resolve().parent.parent
SEARCHSVC = Path(sys.executable).with_name("searchsvc")
QUEUE_PREFIX = "searchsvc.sqlite3"  # the queue's file and its -wal, -shm and lock files
COUNTER_ID = "pl-counter"
NEVER = 10**12  # a cut the calibration run never reaches


# -- the tasks of a round -----------------------------------------------------------------------
def task_records(number: int, records: int) -> list[dict[str, Any]]:
    """What task `number` (1-based) writes: `records` new records and the counter."""
    written = [
        {
            "id": f"pl-{number}-{n}",
            "title": f"Power loss task {number} record {n}",
            "abstract": f"written by task {number} before the power was cut",
            "authors": ["Durable Writer"],
            "year": 2026,
            "categories": ["cs.DB"],
        }
        for n in range(records)
    ]
    return [*written, {"id": COUNTER_ID, "title": f"counter {number}"}]


# -- the durable disk (in the writer process) ----------------------------------------------------
@dataclass
class DurableDisk:
    """What a disk keeps of the index directory `root` after a power cut: the content of each
    file at its last fsync, the names in each directory at its last fsync.

    Files are told apart by incarnation, not by inode: a removed file's inode is reused by the
    next file created, while a directory listing not yet fsynced since still names the old one
    (and its durable content)."""

    root: Path
    model: Path  # where the durable contents are kept, and the cut's record
    cut_at: int
    fsyncs: int = 0
    batch: int = 0
    made: int = 0  # incarnations so far
    incarnations: dict[int, int] = field(default_factory=dict)  # inode -> its incarnation now
    # incarnation -> the file holding its durable content (none: nothing of it is durable)
    contents: dict[int, str] = field(default_factory=dict)
    # incarnation -> its (size, mtime, ctime) when copied: unchanged, the copy stands
    copied: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    # directory incarnation -> {name: [incarnation, is a directory]}
    names: dict[int, dict[str, list[Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        (self.model / "contents").mkdir(parents=True, exist_ok=True)
        self.root_incarnation = self._incarnation(self.root.stat().st_ino)

    def _incarnation(self, inode: int) -> int:
        if inode not in self.incarnations:
            return self._created(inode)
        return self.incarnations[inode]

    def _created(self, inode: int) -> int:
        # A new file or directory (its inode perhaps a removed one's): nothing of it is durable.
        self.made += 1
        self.incarnations[inode] = self.made
        return self.made

    # The state before the round is durable (as after a `sync`).
    def take_baseline(self) -> None:
        for folder, _, files in os.walk(self.root):
            self._list(Path(folder))
            for name in files:
                path = Path(folder) / name
                if not name.startswith(QUEUE_PREFIX):
                    self._copy(path, path.stat())

    def install(self) -> None:
        real_open, real_os_open, real_fsync, real_mkdir = builtins.open, os.open, os.fsync, os.mkdir
        disk = self

        def durable_open(file, mode="r", *args, **kwargs):
            new = not isinstance(file, int) and not os.path.exists(file)
            handle = real_open(file, mode, *args, **kwargs)
            if new:
                disk._created(os.fstat(handle.fileno()).st_ino)
            return handle

        def durable_os_open(path, flags, mode=0o777, *, dir_fd=None):
            new = bool(flags & os.O_CREAT) and dir_fd is None and not os.path.exists(path)
            descriptor = real_os_open(path, flags, mode, dir_fd=dir_fd)
            if new:
                disk._created(os.fstat(descriptor).st_ino)
            return descriptor

        def durable_mkdir(path, mode=0o777, *, dir_fd=None):
            real_mkdir(path, mode, dir_fd=dir_fd)
            if dir_fd is None:
                disk.names[disk._created(os.stat(path).st_ino)] = {}

        def durable_fsync(descriptor):
            disk.fsyncs += 1
            if disk.fsyncs == disk.cut_at:
                disk.cut(f"at fsync {disk.fsyncs}")
            real_fsync(descriptor)
            disk._synced(descriptor)

        builtins.open = durable_open
        io.open = durable_open
        os.open = durable_os_open
        os.mkdir = durable_mkdir
        os.fsync = durable_fsync

    def _synced(self, descriptor: int) -> None:
        status = os.fstat(descriptor)
        path = Path(os.readlink(f"/proc/self/fd/{descriptor}").removesuffix(" (deleted)"))
        if stat.S_ISDIR(status.st_mode):
            if path == self.root or self.root in path.parents:
                self._list(path)
        elif stat.S_ISREG(status.st_mode):
            self._copy(Path(f"/proc/self/fd/{descriptor}"), status)

    def _list(self, folder: Path) -> None:
        with os.scandir(folder) as entries:
            self.names[self._incarnation(folder.stat().st_ino)] = {
                entry.name: [self._incarnation(entry.inode()), entry.is_dir(follow_symlinks=False)]
                for entry in entries
            }

    def _copy(self, path: Path, status: os.stat_result) -> None:
        incarnation = self._incarnation(status.st_ino)
        identity = (status.st_size, status.st_mtime_ns, status.st_ctime_ns)
        if self.copied.get(incarnation) == identity:
            return
        target = self.model / "contents" / f"{incarnation}-{self.fsyncs}"
        shutil.copyfile(path, target)
        self.contents[incarnation] = str(target)
        self.copied[incarnation] = identity

    def cut(self, where: str) -> None:
        """The power goes: the queue as committed now, the disk's state, then SIGKILL."""
        source = sqlite3.connect(self.root / QUEUE_PREFIX)
        copy = sqlite3.connect(self.model / "queue-at-cut.sqlite3")
        with copy:
            source.backup(copy)
        copy.close()
        source.close()
        state = {
            "where": where,
            "batch": self.batch,
            "fsyncs": self.fsyncs,
            "root": self.root_incarnation,
            "contents": self.contents,
            "names": self.names,
        }
        (self.model / "cut.json").write_text(json.dumps(state))
        os.kill(os.getpid(), signal.SIGKILL)


def restore(state: dict[str, Any], target: Path) -> None:
    """The index directory as the durable state holds it, in `target` (the queue left out)."""
    names = {int(key): listing for key, listing in state["names"].items()}
    contents = {int(key): path for key, path in state["contents"].items()}

    def build(incarnation: int, folder: Path, top: bool) -> None:
        folder.mkdir()
        for name, (child, is_dir) in names.get(incarnation, {}).items():
            if top and name.startswith(QUEUE_PREFIX):
                continue
            if is_dir:
                build(child, folder / name, False)
            elif child in contents:
                shutil.copyfile(contents[child], folder / name)
            else:
                (folder / name).touch()  # created, never fsynced: no content reached the disk

    build(state["root"], target, True)


def without_state_fsync() -> None:
    """The writes as before issue 33: Whoosh's commit and the seal fsync nothing of their own."""
    from whoosh.filedb import filestore
    from whoosh.index import TOC

    from searchsvc.backends.whoosh import durability, patches

    TOC.write = patches._STOCK_TOC_WRITE
    filestore.FileStorage.rename_file = patches._STOCK_RENAME_FILE
    durability.sync_folder = lambda folder: None


def writer_main(args: argparse.Namespace) -> None:
    from searchsvc.backends import open_backend
    from searchsvc.domain.records import Record
    from searchsvc.tasks import TaskQueue, TaskWriter, queue_path

    if args.without_state_fsync:
        without_state_fsync()
    root = Path(args.index).resolve()
    disk = DurableDisk(root, Path(args.model), args.cut)
    queue = TaskQueue(queue_path(str(root)))
    for number in range(1, args.tasks + 1):
        records = [Record.from_dict(data) for data in task_records(number, args.records)]
        queue.enqueue_upserts(records, origin="api")
    disk.take_baseline()
    disk.install()
    with open_backend(str(root)) as backend:
        # One task per batch, so one engine commit each.
        writer = TaskWriter(queue, backend, batch_records=args.records + 1)
        while True:
            disk.batch += 1
            if not writer.apply_next_batch():
                break
    if args.cut >= NEVER:
        print(json.dumps({"fsyncs": disk.fsyncs}), flush=True)
        return
    disk.cut("after the last commit")


# -- recovery (in its own process) ---------------------------------------------------------------
def recover_main(args: argparse.Namespace) -> None:
    from searchsvc.backends import open_backend
    from searchsvc.domain.errors import SearchsvcError
    from searchsvc.tasks import TaskQueue, TaskWriter, queue_path
    from searchsvc.tasks.writer import TRANSIENT_ERRORS

    index = str(Path(args.index).resolve())
    result: dict[str, Any] = {}
    queue = TaskQueue(queue_path(index))
    result["at_cut"] = {task.id: task.status for task in queue.tasks(limit=10_000)}
    with open_backend(index) as backend:
        try:
            result["served"] = "previous" if backend.warning() else "live"
        except SearchsvcError as exc:
            result["served"] = "none"
            result["why"] = exc.message
        try:
            TaskWriter(queue, backend, batch_records=args.records + 1).run_pending()
        except TRANSIENT_ERRORS as exc:
            result["recovery_error"] = getattr(exc, "message", str(exc))
        backend.refresh()
        try:
            result["titles"] = {record.id: record.title for record in backend.records()}
        except SearchsvcError:
            result["titles"] = {}
    result["final"] = {task.id: task.status for task in queue.tasks(limit=10_000)}
    print(json.dumps(result), flush=True)


# -- the rounds ------------------------------------------------------------------------------------
def run_role(role: str, args: argparse.Namespace, **options: Any) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "benchmarks.power_loss", "--role", role]
    command += ["--tasks", str(args.tasks), "--records", str(args.records)]
    if args.without_state_fsync:
        command.append("--without-state-fsync")
    for name, value in options.items():
        command += [f"--{name.replace('_', '-')}", str(value)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def build_base(folder: Path) -> Path:
    """The seeds built twice: a live generation and a previous one to fall back on."""
    index = folder / "index"
    for _ in range(2):
        subprocess.run(
            [str(SEARCHSVC), "index", str(ROOT / "seeds"), "--index", str(index)],
            check=True,
            capture_output=True,
        )
    return index


def check_round(result: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """What a recovered round lost, against what the queue at the cut said succeeded."""
    order = sorted(int(task_id) for task_id in result["at_cut"])
    number = {task_id: n for n, task_id in enumerate(order, start=1)}
    acked = {number[int(t)] for t, status in result["at_cut"].items() if status == "succeeded"}
    final = {number[int(t)]: status for t, status in result["final"].items()}
    titles = result["titles"]
    counter_title = titles.get(COUNTER_ID, "counter 0")
    counter = int(counter_title.split()[-1]) if counter_title.startswith("counter ") else 0

    def missing(task: int) -> int:
        """How many of the task's writes the index lacks (its records, then the counter)."""
        absent = sum(
            1
            for data in task_records(task, args.records)[:-1]
            if titles.get(data["id"]) != data["title"]
        )
        return absent + (1 if counter < task else 0)

    lost = sum(missing(task) for task in acked)
    misreported = sum(
        1 for task, status in final.items() if status == "succeeded" and missing(task)
    )
    not_applied = sum(1 for status in final.values() if status != "succeeded")
    return {
        "served": result["served"],
        "acked": len(acked),
        "lost": lost,
        "lost_tasks": sum(1 for task in acked if missing(task)),
        "misreported": misreported,
        "not_applied": not_applied,
        "recovery_error": result.get("recovery_error"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.add_argument("--rounds", type=int, default=30, help="power cuts (30)")
    parser.add_argument("--tasks", type=int, default=12, help="tasks (engine commits) a round (12)")
    parser.add_argument("--records", type=int, default=5, help="new records per task (5)")
    parser.add_argument(
        "--without-state-fsync",
        action="store_true",
        help="write as before issue 33 (no fsync of Whoosh's files before the seal)",
    )
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--keep", action="store_true", help="keep the rounds' directories")
    parser.add_argument("--json", action="store_true", help="print each round as JSON too")
    parser.add_argument("--role", choices=("main", "writer", "recover"), default="main")
    parser.add_argument("--index", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--cut", type=int, default=NEVER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == "writer":
        writer_main(args)
        return
    if args.role == "recover":
        recover_main(args)
        return

    command = " ".join(
        [".venv/bin/python -m benchmarks.power_loss", *map(shlex.quote, sys.argv[1:])]
    )
    mode = (
        "without state fsync (before issue 33)" if args.without_state_fsync else "fsync before seal"
    )
    folder = Path(tempfile.mkdtemp(prefix="power-loss-"))
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        log("building the base index (the seeds, twice) ...")
        base = build_base(folder / "base")
        calibration = folder / "calibration"
        shutil.copytree(base, calibration / "index")
        ran = run_role(
            "writer", args, index=calibration / "index", model=calibration / "model", cut=NEVER
        )
        if ran.returncode != 0:
            raise SystemExit(f"the calibration run failed:\n{ran.stderr[-3000:]}")
        total = json.loads(ran.stdout.strip().splitlines()[-1])["fsyncs"]
        log(f"{mode}: {total} fsyncs in a run of {args.tasks} commits")
        for number in range(1, args.rounds + 1):
            round_dir = folder / f"round-{number}"
            shutil.copytree(base, round_dir / "index")
            cut = rng.randint(1, total + 1)
            ran = run_role(
                "writer", args, index=round_dir / "index", model=round_dir / "model", cut=cut
            )
            cut_file = round_dir / "model" / "cut.json"
            if ran.returncode != -signal.SIGKILL or not cut_file.exists():
                raise SystemExit(
                    f"round {number}: the writer ended otherwise:\n{ran.stderr[-3000:]}"
                )
            state = json.loads(cut_file.read_text())
            recovered = round_dir / "recovered"
            recovered.mkdir()
            restore(state, recovered / "index")
            shutil.copyfile(
                round_dir / "model" / "queue-at-cut.sqlite3", recovered / "index" / QUEUE_PREFIX
            )
            ran = run_role("recover", args, index=recovered / "index")
            if ran.returncode != 0:
                raise SystemExit(f"round {number}: recovery failed:\n{ran.stderr[-3000:]}")
            row = check_round(json.loads(ran.stdout.strip().splitlines()[-1]), args)
            row.update(round=number, cut=state["where"], batch=state["batch"])
            rows.append(row)
            log(
                f"round {number}: cut {state['where']} (commit {state['batch']}), served "
                f"{row['served']}, {row['acked']} tasks acknowledged, {row['lost']} writes lost"
            )
            if args.json:
                print(json.dumps(row))
            if not args.keep:
                shutil.rmtree(round_dir, ignore_errors=True)
    finally:
        if args.keep:
            log(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print_results(rows, mode, total, args, command, time.perf_counter() - started)


def print_results(
    rows: list[dict[str, Any]],
    mode: str,
    total: int,
    args: argparse.Namespace,
    command: str,
    seconds: float,
) -> None:
    served = Counter(row["served"] for row in rows)
    after_last = sum(1 for row in rows if row["cut"] == "after the last commit")
    table = format_table(
        (
            "writes",
            "rounds",
            "index served after the cut: live / previous / none",
            "tasks acked succeeded at the cut",
            "acked writes lost (tasks)",
            "tasks misreported",
            "tasks not applied",
        ),
        [
            (
                mode,
                len(rows),
                f"{served['live']} / {served['previous']} / {served['none']}",
                sum(row["acked"] for row in rows),
                f"{sum(row['lost'] for row in rows)} ({sum(row['lost_tasks'] for row in rows)})",
                sum(row["misreported"] for row in rows),
                sum(row["not_applied"] for row in rows),
            )
        ],
    )
    print_section("Power cuts", table)
    print(
        f"\n{args.tasks} tasks a round ({args.records} new records and the counter each, one "
        f"commit each), {total} fsyncs in a run; cut at a random one of them or after the last "
        f"commit ({after_last} rounds); {seconds:.0f} s. Rounds with losses: "
        + (", ".join(str(row["round"]) for row in rows if row["lost"]) or "none")
        + f".\n\n    {command}"
    )


if __name__ == "__main__":
    main()
