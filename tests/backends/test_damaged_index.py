"""A damaged index never takes the service down (issue 19, items 3 and 5).

Each kind of damage (a truncated segment file, a zero-filled one, a generation written in another
index format) on a real index in a temp dir: `searchsvc check` names it, the service keeps
answering from the previous generation with `/readyz` saying why, and with no good generation
left `/healthz` and `/metrics` still answer, `/readyz` and searches are 503s in the error shape,
and a real gunicorn's workers boot. No answer names a path or the builder's PID.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from searchsvc.app import create_app
from searchsvc.backends import BACKENDS, register_backend
from searchsvc.backends.whoosh import integrity
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION
from searchsvc.backends.whoosh.store import IndexDirectory, version_token
from searchsvc.service import SearchService
from tests.serving.test_gunicorn import serving, wait_until
from tests.support import FIXTURE_RECORDS, build_index

# Only in the newer generation: found when it is served, not when the previous one is.
NEW_RECORD = replace(FIXTURE_RECORDS[0], id="2409.00077", title="Zeppelin Routing Revisited")


# -- damage, as it is found on disks ---------------------------------------------------------
def largest_segment(generation: Path) -> Path:
    return max(generation.glob("MAIN_*.seg"), key=lambda path: path.stat().st_size)


def truncate(generation: Path) -> str:
    segment = largest_segment(generation)
    with open(segment, "r+b") as handle:
        handle.truncate(segment.stat().st_size // 2)
    return segment.name


def zero_fill(generation: Path) -> str:
    segment = largest_segment(generation)
    segment.write_bytes(bytes(segment.stat().st_size))
    return segment.name


def wrong_version(generation: Path) -> str:
    """The generation as another searchsvc would have written it: a consistent manifest of
    another index format (so that the version is all that is wrong)."""
    metadata_path = generation / integrity.METADATA
    metadata = json.loads(metadata_path.read_text())
    metadata["schema_version"] = SCHEMA_VERSION + 1
    metadata_path.write_text(json.dumps(metadata))
    [manifest_path] = generation.glob(f"{integrity.MANIFEST_PREFIX}*.json")
    manifest = json.loads(manifest_path.read_text())
    size, crc = integrity.checksum(metadata_path, remembered=False)
    manifest["files"][integrity.METADATA] = {"size": size, "crc32": f"{crc:08x}"}
    manifest["schema_version"] = SCHEMA_VERSION + 1
    manifest_path.write_text(json.dumps(manifest))
    return integrity.METADATA


# kind -> (how, what `check` says, the kind of damage in its JSON)
DAMAGE = {
    "truncated": (truncate, "truncated", "truncated"),
    "zero-filled": (
        zero_fill,
        "content does not match its checksum (it is all zero bytes)",
        "checksum",
    ),
    "wrong version": (
        wrong_version,
        f"index format {SCHEMA_VERSION + 1}, this searchsvc reads",
        "version",
    ),
}


def two_generations(root: Path) -> tuple[IndexDirectory, str, str]:
    """An index rebuilt once: (directory, previous generation, live generation)."""
    build_index(root)
    directory = IndexDirectory(root)
    previous = directory.live_name()
    build_index(root, (*FIXTURE_RECORDS, NEW_RECORD))
    live = directory.live_name()
    assert previous and live and previous != live
    return directory, previous, live


def run_check(runner, root: Path, *options: str):
    return runner("check", "--index", root, *options)


def assert_no_server_details(text: str, root: Path) -> None:
    assert str(root) not in text and "/tmp" not in text
    assert "gen-" not in text and "Traceback" not in text


def wait_for(condition, seconds: float = 5.0):
    deadline = time.monotonic() + seconds
    while not (result := condition()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return result


# -- searchsvc check -------------------------------------------------------------------------
def test_check_passes_a_sound_index(runner, tmp_path):
    two_generations(tmp_path / "index")

    result = run_check(runner, tmp_path / "index")

    assert result.exit_code == 0, result.output
    assert re.search(r"^live gen-\S+: ok$", result.stdout, re.MULTILINE)
    assert re.search(r"^previous gen-\S+: ok$", result.stdout, re.MULTILINE)
    assert "checked against its manifest" in result.stdout
    assert f"Whoosh reads it: {len(FIXTURE_RECORDS) + 1:,} records" in result.stdout


@pytest.mark.parametrize("kind", DAMAGE)
def test_check_names_the_damage(runner, tmp_path, kind):
    damage, words, code = DAMAGE[kind]
    directory, _, live = two_generations(tmp_path / "index")
    damaged_file = damage(directory.root / live)

    result = run_check(runner, directory.root)

    assert result.exit_code == 1, result.output
    assert f"live {live}: DAMAGED" in result.stdout
    assert re.search(rf"^  {re.escape(damaged_file)}: .*{re.escape(words)}", result.stdout, re.M)
    assert "answers from the previous generation" in result.stdout
    report = json.loads(run_check(runner, directory.root, "--json").stdout)
    assert report["ok"] is False
    [live_part] = [part for part in report["parts"] if part["role"] == "live"]
    assert live_part["damage"][0]["file"] == damaged_file
    assert live_part["damage"][0]["kind"] == code


def test_check_says_what_it_cannot_verify_on_an_index_without_a_manifest(runner, tmp_path):
    root = Path(build_index(tmp_path / "index"))
    live = root / IndexDirectory(root).live_name()
    for manifest in live.glob(f"{integrity.MANIFEST_PREFIX}*"):
        manifest.unlink()  # as an older searchsvc built it

    result = run_check(runner, root)

    assert result.exit_code == 0, result.output
    assert "no manifest: built by an older searchsvc" in result.stdout
    with SearchService.open(root) as service:  # still served, as before manifests
        assert service.search().total == len(FIXTURE_RECORDS)


def test_check_of_an_engine_without_files_asks_it_to_answer(runner):
    from tests.backends.test_registry import _STORES, open_memory

    saved = dict(BACKENDS)
    register_backend("memtest", open_memory)
    try:
        empty = runner("check", "--index", "memtest://x")
        build_index("memtest://x")
        result = runner("check", "--index", "memtest://x")
    finally:
        _STORES.clear()
        BACKENDS.clear()
        BACKENDS.update(saved)

    assert empty.exit_code == 1 and "live memtest://x: DAMAGED" in empty.stdout
    assert result.exit_code == 0, result.output
    assert "checked only that it answers a search" in result.stdout
    assert f"answers: {len(FIXTURE_RECORDS)} records" in result.stdout


def test_check_without_an_index_is_a_one_line_error(runner, tmp_path):
    result = run_check(runner, tmp_path / "none")

    assert result.exit_code == 1
    assert result.stderr == f"error: no index at {tmp_path / 'none'}: build one with " + (
        "`searchsvc index SOURCE...`\n"
    )


# -- the service -----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", DAMAGE)
def test_the_service_answers_from_the_previous_generation(tmp_path, kind):
    damage = DAMAGE[kind][0]
    root = tmp_path / "index"
    build_index(root)
    client = create_app({"INDEX": str(root), "TESTING": True}).test_client()
    assert client.get("/readyz").get_json()["status"] == "ready"
    # A new generation is swapped in while the service runs, and is found damaged.
    directory = IndexDirectory(root)
    build_index(root, (*FIXTURE_RECORDS, NEW_RECORD))
    damaged_file = damage(root / directory.live_name())

    def degraded():
        return client.get("/readyz").get_json().get("status") == "degraded"

    assert wait_for(degraded)
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.get_json()
    assert body["documents"] == len(FIXTURE_RECORDS)
    assert damaged_file in body["warning"] and "previous" in body["warning"]
    search = client.get("/api/v1/search", query_string={"q": "zeppelin"})
    assert search.status_code == 200 and search.get_json()["total"] == 0
    assert client.get("/api/v1/search").get_json()["total"] == len(FIXTURE_RECORDS)
    assert client.get("/api/v1/stats").get_json()["documents"] == len(FIXTURE_RECORDS)
    assert client.get(f"/api/v1/records/{FIXTURE_RECORDS[1].id}").status_code == 200
    assert client.get("/?q=learning").status_code == 200
    metrics = client.get("/metrics").get_data(as_text=True)
    assert "searchsvc_index_fallback 1.0" in metrics and "searchsvc_index_up 1.0" in metrics
    for response in (ready, search):
        assert_no_server_details(response.get_data(as_text=True), tmp_path)


@pytest.mark.parametrize("kind", DAMAGE)
def test_with_no_good_generation_only_reads_are_unavailable(tmp_path, kind):
    damage = DAMAGE[kind][0]
    root = Path(build_index(tmp_path / "index"))
    damaged_file = damage(root / IndexDirectory(root).live_name())
    client = create_app({"INDEX": str(root), "TESTING": True}).test_client()

    assert client.get("/healthz").status_code == 200
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert "searchsvc_index_up 0.0" in metrics.get_data(as_text=True)
    for url in ("/readyz", "/api/v1/search", "/api/v1/stats", "/api/v1/records/x"):
        response = client.get(url)
        assert response.status_code == 503, url
        error = response.get_json()["error"]
        assert error["code"] == "index_unavailable"
        assert "damaged" in error["message"] and damaged_file in error["message"]
        assert any(damaged_file in item for item in error["details"]["damage"])
        assert_no_server_details(response.get_data(as_text=True), tmp_path)
    page = client.get("/", headers={"Accept": "text/html"})
    assert page.status_code == 503
    assert_no_server_details(page.get_data(as_text=True), tmp_path)


def test_the_generation_being_served_zero_filled_in_place_is_never_read_again(tmp_path):
    # Damage found by the service's own look at the directory (not at start-up): every read
    # answers 503 in the error shape, never a 500 or a record "not found" from the old reader.
    # (A file truncated under a reader's memory map is a SIGBUS for its process, which would be
    # this test's: that case runs in gunicorn, below.)
    damage = DAMAGE["zero-filled"][0]
    root = Path(build_index(tmp_path / "index"))
    client = create_app({"INDEX": str(root), "TESTING": True}).test_client()
    assert client.get("/api/v1/search").status_code == 200
    damage(root / IndexDirectory(root).live_name())

    assert wait_for(lambda: client.get("/readyz").status_code == 503)
    for _ in range(3):  # within one refresh interval and after it
        for url in ("/api/v1/search?q=learning", f"/api/v1/records/{FIXTURE_RECORDS[1].id}"):
            response = client.get(url)
            assert response.status_code == 503, (url, response.get_data(as_text=True)[:300])
            assert response.get_json()["error"]["code"] == "index_unavailable"
        assert "searchsvc_index_up 0.0" in client.get("/metrics").get_data(as_text=True)
        time.sleep(0.3)


def test_a_rebuild_after_damage_is_served_again(tmp_path):
    root = Path(build_index(tmp_path / "index"))
    truncate(root / IndexDirectory(root).live_name())
    client = create_app({"INDEX": str(root), "TESTING": True}).test_client()
    assert client.get("/readyz").status_code == 503

    build_index(root, (*FIXTURE_RECORDS, NEW_RECORD))

    assert wait_for(lambda: client.get("/readyz").status_code == 200)
    assert client.get("/api/v1/search", query_string={"q": "zeppelin"}).get_json()["total"] == 1


def test_errors_and_versions_carry_no_path_and_no_pid(tmp_path):
    missing = create_app({"INDEX": str(tmp_path / "none"), "TESTING": True}).test_client()
    response = missing.get("/api/v1/search")
    assert response.status_code == 503
    assert response.get_json()["error"]["details"] == {}
    assert_no_server_details(response.get_data(as_text=True), tmp_path)

    root = Path(build_index(tmp_path / "index"))
    generation = IndexDirectory(root).live_name()
    client = create_app({"INDEX": str(root), "TESTING": True}).test_client()
    search = client.get("/api/v1/search")
    etag = search.headers["ETag"]
    version = client.get("/readyz").get_json()["version"]
    stats_version = client.get("/api/v1/stats").get_json()["version"]
    assert version == stats_version
    assert re.fullmatch(r"[0-9a-f]{16}-\d+", version)
    assert generation.removeprefix("gen-") not in etag and version in etag
    assert version == version_token(generation, int(version.rsplit("-", 1)[1]))


# -- no false alarms -------------------------------------------------------------------------
READER = """
import sys
from pathlib import Path
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.errors import IndexUnavailable
from searchsvc.domain.query import SearchRequest

backend = WhooshBackend(IndexDirectory(sys.argv[1]), refresh_interval=0.0)
backend.search(SearchRequest(per_page=1))
print("ready", flush=True)
reads = alarms = 0
while not Path(sys.argv[2]).exists():
    try:
        backend.search(SearchRequest(q="learning", per_page=1))
        alarms += backend.warning() is not None
    except IndexUnavailable as exc:
        alarms += 1
        print(exc.message, file=sys.stderr)
    reads += 1
print(reads, alarms)
"""


@pytest.mark.slow
def test_readers_never_take_updates_being_committed_for_damage(tmp_path):
    # A reader in another process looks at every state as updates commit: it must never see
    # a manifest that does not match the files (an update rewrites some in place).
    from tests.support import multi_block_records

    root = Path(build_index(tmp_path / "index", multi_block_records(600)))
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(root), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    with SearchService.open(root) as service:
        for n in range(25):
            service.upsert(multi_block_records(20, start=600 + 20 * n))
            service.delete([f"2400.{n:05d}"])
    stop.touch()
    output, errors = reader.communicate(timeout=30)
    reads, alarms = map(int, output.split())
    assert alarms == 0, errors
    assert reads > 50


# -- a real gunicorn -------------------------------------------------------------------------
@pytest.mark.slow
def gunicorn_on(root: Path, tmp_path: Path, ready: str):
    """A real gunicorn (2 workers, the project's config) serving `root` once `ready` answers."""
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    return serving(root, tmp_path / "gunicorn.log", env, ready=ready)


def test_gunicorn_workers_boot_without_a_good_index(tmp_path):
    root = Path(build_index(tmp_path / "index"))
    truncate(root / IndexDirectory(root).live_name())
    log = tmp_path / "gunicorn.log"
    with gunicorn_on(root, tmp_path, ready="/healthz") as (base, process):
        time.sleep(1)  # long enough for a worker that fails to boot to take the master down
        assert process.poll() is None, log.read_text()
        assert requests.get(f"{base}/metrics", timeout=5).status_code == 200
        for url in ("/readyz", "/api/v1/search"):
            response = requests.get(f"{base}{url}", timeout=5)
            assert response.status_code == 503
            assert response.json()["error"]["code"] == "index_unavailable"
            assert_no_server_details(response.text, tmp_path)
        # Repaired by a rebuild: every worker serves it without a restart.
        build_index(root, (*FIXTURE_RECORDS, NEW_RECORD))
        assert wait_until(lambda: requests.get(f"{base}/readyz", timeout=2).ok, 10)
        assert "Worker failed to boot" not in log.read_text()


def test_a_worker_killed_by_a_file_truncated_under_it_is_replaced_by_one_that_refuses_it(
    tmp_path,
):
    # Truncating a file a worker has memory-mapped kills the worker when a search reads past the
    # new end (SIGBUS). gunicorn starts another, which verifies the generation and answers 503.
    root = Path(build_index(tmp_path / "index"))
    log = tmp_path / "gunicorn.log"
    with gunicorn_on(root, tmp_path, ready="/readyz") as (base, process):
        truncate(root / IndexDirectory(root).live_name())
        statuses = []

        def refused() -> bool:
            try:
                response = requests.get(f"{base}/api/v1/search?q=learning", timeout=5)
            except requests.ConnectionError:
                statuses.append("dropped")  # the worker that met the truncation died
                return False
            statuses.append(response.status_code)
            return response.status_code == 503

        assert wait_until(refused, 30), (statuses, log.read_text()[-2000:])
        assert 500 not in statuses, statuses
        response = requests.get(f"{base}/api/v1/search", timeout=5)
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "index_unavailable"
        assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
        assert process.poll() is None, log.read_text()
