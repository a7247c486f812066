"""Every process a build starts dies with it, even when the build is killed with SIGKILL (issue
19: the decoding pool of a large input outlived a `kill -9` of `searchsvc index`).

The processes are found through /proc (Linux): a build runs in a session of its own here, so
its processes are the members of its process group. The writer processes of a large build are
tested the same way in tests/whoosh/test_build.py.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from searchsvc.sources import jsonl
from searchsvc.system import child_processes

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or "fork" not in multiprocessing.get_all_start_methods(),
    reason="needs /proc and fork (Linux)",
)

ROOT = Path(__file__).resolve().parents[2]
# TeX in every title and abstract keeps the decoding workers busy for a few seconds.
ABSTRACT = (
    "We prove that $\\alpha_{i} \\leq \\sum_{j} \\beta_{j}^{2}$ holds for \\emph{every} "
    "schedule, with 75\\% of peak throughput at $11\\times$ the speed of \\textbf{Erd\\H{o}s}. "
)
CLI = "import sys; from searchsvc.cli import main; sys.exit(main(prog_name='searchsvc'))"


def kaggle_file(path: Path, min_bytes: int) -> Path:
    """A Kaggle arXiv metadata file of at least `min_bytes`."""
    with path.open("w", encoding="utf-8") as out:
        number = 0
        while out.tell() < min_bytes:
            number += 1
            record = {
                "id": f"2401.{number:05d}",
                "authors": "Ada Lovelace and Alan Turing",
                "title": f"Paper {number} on $\\mathcal{{O}}(n^{{{number % 7}}})$ scheduling",
                "categories": "cs.DC cs.LG",
                "abstract": ABSTRACT * 4,
                "versions": [{"version": "v1", "created": "Mon, 2 Jan 2023 10:00:00 GMT"}],
                "authors_parsed": [["Lovelace", "Ada", ""], ["Turing", "Alan", ""]],
            }
            out.write(json.dumps(record) + "\n")
    return path


def group_members(group: int) -> set[int]:
    """The live processes of process group `group` (zombies are dead: only not yet reaped)."""
    members = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        state, _ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        if int(pgrp) == group and state not in ("Z", "X"):
            members.add(int(entry.name))
    return members


def wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {seconds} s")
        time.sleep(0.02)


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def test_a_build_killed_while_it_decodes_a_large_input_leaves_no_process(tmp_path):
    source = kaggle_file(tmp_path / "arxiv.json", jsonl.PARALLEL_MIN_BYTES * 3 // 2)
    # One writer: any process the build starts is then one of the decoding pool's.
    command = [sys.executable, "-c", CLI, "index", str(source), "--index", str(tmp_path / "ix")]
    build = subprocess.Popen(
        [*command, "--procs", "1"],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        workers = wait_for(
            lambda: group_members(build.pid) - {build.pid}, 60, "the decoding workers"
        )
        time.sleep(0.2)  # let the pool start all its workers, mid-way through the input
        workers |= group_members(build.pid) - {build.pid}
        assert build.poll() is None, "the build ended before it could be killed"

        os.kill(build.pid, signal.SIGKILL)
        build.wait(10)

        wait_for(lambda: not group_members(build.pid), 10, "every worker gone")
    finally:
        kill_group(build.pid)
        build.stderr.close()
    assert workers, "the build started no decoding worker"
    assert not (tmp_path / "ix" / "CURRENT").exists(), "the kill should interrupt the build"


# -- where the kernel cannot do it: a thread of the worker watches its parent ---------------------
ORPHANED_WORKER_DRIVER = textwrap.dedent(
    """
    import multiprocessing, os, sys, time
    from searchsvc.system import child_processes

    def worker(parent):
        if sys.argv[1] == "watch":  # as where prctl is missing (not Linux)
            child_processes._killed_by_kernel_on_parent_death = lambda: False
        child_processes.die_with_parent(parent)
        print(os.getpid(), flush=True)  # set up: now its parent may die
        time.sleep(600)

    multiprocessing.get_context("fork").Process(target=worker, args=(os.getpid(),)).start()
    time.sleep(600)
    """
)


@pytest.mark.parametrize("how", ["kernel", "watch"])
def test_a_worker_dies_with_its_parent_by_the_kernel_or_by_its_watching_thread(how):
    driver = subprocess.Popen(
        [sys.executable, "-c", ORPHANED_WORKER_DRIVER, how],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        worker = int(driver.stdout.readline())
        assert worker in group_members(driver.pid)

        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(10)

        limit = 10 + child_processes.PARENT_POLL_SECONDS
        wait_for(lambda: worker not in group_members(driver.pid), limit, "the worker gone")
    finally:
        kill_group(driver.pid)
        driver.stdout.close()


def test_a_worker_whose_parent_is_already_gone_ends_at_once():
    # The parent died between the fork and the worker's first line: its pid is not the one
    # the worker was given.
    process = multiprocessing.get_context("fork").Process(
        target=child_processes.die_with_parent, args=(-1,)
    )
    process.start()
    process.join(10)
    assert process.exitcode == 1
