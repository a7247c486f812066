"""Writes through the service as the README runs it (gunicorn, the project's config): the writer
starts with the workers, and SIGKILL of the writing worker or of the whole server loses none of
the acknowledged writes (benchmarks/write_faults.py runs the longer campaign)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.serving.test_gunicorn import serving, wait_until
from tests.support import build_index

pytestmark = pytest.mark.slow


@contextmanager
def service(index: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """The service over `index` as the README runs it, writes unthrottled."""
    env = {
        "SEARCHSVC_WRITE_RATE_LIMIT": "",
        "SEARCHSVC_ACCESS_LOG": "",
        "PROMETHEUS_MULTIPROC_DIR": str(index.parent / f"metrics-{time.monotonic_ns()}"),
    }
    with serving(index, index.parent / "gunicorn.log", env) as started:
        yield started


@pytest.fixture
def index(tmp_path) -> Path:
    return Path(build_index(tmp_path / "index"))


@pytest.fixture
def key(index) -> dict[str, str]:
    token = KeyStore(TaskQueue(queue_path(index))).create("tests", ("write",))[1]
    return {"Authorization": f"Bearer {token}"}


def writer_pid(index: Path) -> int | None:
    """The process holding the writer role: the flock on the queue's writer lock file."""
    lock = queue_path(index).with_name(queue_path(index).name + ".writer.lock")
    if not lock.exists():
        return None
    inode = lock.stat().st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(f":{inode}"):
            return int(fields[4])
    return None


class Writers:
    """Clients posting records with ids of their own; a record counts once a 202 came back."""

    def __init__(self, base: str, key: dict[str, str], clients: int = 3) -> None:
        self.base, self.key = base, key
        self.acknowledged: dict[str, str] = {}
        self.server_errors = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._write, args=(n,), daemon=True) for n in range(clients)
        ]

    def __enter__(self) -> Writers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _write(self, client: int) -> None:
        n = 0
        while not self._stop.is_set():
            batch = [
                {"id": f"w{client}-{n + i}", "title": f"Streamed record {client} {n + i}"}
                for i in range(1 + n % 5)
            ]
            n += len(batch)
            try:
                response = requests.post(
                    f"{self.base}/api/v1/records", json=batch, headers=self.key, timeout=10
                )
            except requests.RequestException:
                time.sleep(0.05)  # the server is down or restarting: not acknowledged
                continue
            with self._lock:
                if response.status_code == 202:
                    self.acknowledged.update({r["id"]: r["title"] for r in batch})
                elif response.status_code >= 500:
                    self.server_errors += 1
            time.sleep(0.01)


def assert_all_applied(base: str, key: dict[str, str], index: Path, expected: dict[str, str]):
    queue = TaskQueue(queue_path(index))
    drained = wait_until(
        lambda: queue.counts()["enqueued"] + queue.counts()["processing"] == 0, 120
    )
    assert drained, queue.counts()
    assert queue.counts()["failed"] == 0
    with SearchService.open(index) as service:  # the index opens: not corrupt
        records = list(service.records())
    held = {r.id: r.title for r in records}
    assert len(held) == len(records), "an id is held twice"
    missing = set(expected) - set(held)
    assert not missing, f"{len(missing)} acknowledged records lost"
    assert all(held[record_id] == title for record_id, title in expected.items())


def test_the_writer_runs_with_the_service_and_records_become_searchable(index, key):
    with service(index) as (base, _):
        response = requests.post(
            f"{base}/api/v1/records",
            json={"id": "live-1", "title": "Axolotl regeneration"},
            headers=key,
            timeout=10,
        )
        assert response.status_code == 202
        task = requests.get(
            f"{base}{response.headers['Location']}?wait=10", headers=key, timeout=20
        ).json()
        assert task["status"] == "succeeded"
        # Every worker follows the commit within about a second.
        for _ in range(4):
            found = wait_until(
                lambda: requests.get(f"{base}/api/v1/search?q=axolotl", timeout=5).json()["total"],
                5,
            )
            assert found == 1
        assert writer_pid(index) is not None


@pytest.mark.parametrize("victim", ["writer", "master"])
def test_sigkill_of_the_writer_or_the_server_loses_no_acknowledged_write(index, key, victim):
    with service(index) as (base, master), Writers(base, key) as writers:
        wait_until(lambda: len(writers.acknowledged) > 50, 30)
        if victim == "writer":
            pid = writer_pid(index)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            # Another worker (or the one gunicorn starts instead) takes the writer role.
            assert wait_until(lambda: (writer_pid(index) or pid) != pid, 30)
        else:
            workers = [
                int(p)
                for p in Path(f"/proc/{master.pid}/task/{master.pid}/children").read_text().split()
            ]
            for pid in [master.pid, *workers]:
                os.kill(pid, signal.SIGKILL)
            master.wait()
        time.sleep(1.0)
    expected = dict(writers.acknowledged)
    assert writers.server_errors == 0
    with service(index) as (base, _):  # a restart, as after any crash
        assert_all_applied(base, key, index, expected)
