"""IndexDirectory: generations, the CURRENT swap, orphan clean-up, the lock, metadata."""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from searchsvc.backends.whoosh.documents import to_document
from searchsvc.backends.whoosh.schema import build_schema
from searchsvc.backends.whoosh.store import BUILD_PREFIX, CURRENT, IndexDirectory
from searchsvc.domain.errors import BuildInProgress, IndexUnavailable
from tests.support import FIXTURE_RECORDS, build_index
from tests.whoosh.support import build_with_whoosh_writer


def test_a_directory_without_an_index_says_how_to_build_one(tmp_path):
    directory = IndexDirectory(tmp_path / "index")

    assert not directory.exists()
    with pytest.raises(IndexUnavailable, match="searchsvc index"):
        directory.open()


def test_a_failed_build_is_removed_and_the_live_generation_stays(tmp_path):
    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_name()

    with pytest.raises(RuntimeError), directory.build() as index:
        writer = index.writer()
        writer.add_document(**to_document(FIXTURE_RECORDS[0]))
        writer.commit()
        raise RuntimeError("half-way")

    assert directory.live_name() == live
    assert directory.open().doc_count() == len(FIXTURE_RECORDS)
    assert not list(directory.root.glob(f"{BUILD_PREFIX}*"))


def test_the_next_build_removes_build_dirs_left_by_killed_builds(tmp_path):
    directory = IndexDirectory(build_index(tmp_path / "index"))
    orphan = directory.root / f"{BUILD_PREFIX}20200101T000000000000Z-1"
    orphan.mkdir()
    (orphan / "MAIN_WRITELOCK").write_text("")

    build_index(directory.root, FIXTURE_RECORDS[:1])

    assert not orphan.exists()
    assert directory.open().doc_count() == 1


def test_builds_keep_the_live_generation_and_one_previous(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    names = []
    for _ in range(4):
        build_index(directory.root)
        names.append(directory.live_name())

    assert sorted(p.name for p in directory.root.glob("gen-*")) == sorted(names[-2:])
    assert (directory.root / CURRENT).read_text().strip() == names[-1]


def test_the_lock_refuses_a_second_holder(tmp_path):
    directory = IndexDirectory(tmp_path / "index")

    with directory.lock(), pytest.raises(BuildInProgress), directory.build():
        pass

    with directory.lock():  # released again
        pass


def test_build_saves_metadata_and_update_merges_into_it(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    with directory.build({"sources": ["seeds"]}) as index:
        writer = index.writer()
        writer.add_document(**to_document(FIXTURE_RECORDS[0]))
        writer.commit()
    built_at = directory.built_at()

    with directory.update({"last_update": {"sources": ["more.jsonl"]}}):
        pass

    metadata = directory.metadata()
    assert metadata["sources"] == ["seeds"]
    assert metadata["last_update"] == {"sources": ["more.jsonl"]}
    assert metadata["updated_at"] >= metadata["built_at"]
    assert directory.built_at() == built_at is not None


def test_records_yields_every_stored_record_in_index_order(fixture_index):
    assert list(IndexDirectory(fixture_index).records()) == list(FIXTURE_RECORDS)


def test_records_leaves_out_documents_an_update_deleted(tmp_path):
    directory = build_with_whoosh_writer(tmp_path / "index")
    with directory.update() as index:
        writer = index.writer()
        writer.delete_by_term("id", FIXTURE_RECORDS[1].id)
        writer.commit(merge=False)
    with directory.open().reader() as reader:
        assert reader.has_deletions()

    assert list(directory.records()) == [FIXTURE_RECORDS[0], *FIXTURE_RECORDS[2:]]


def test_schema_pickles_with_its_stemmer_for_worker_processes():
    # Whoosh pickles the schema into the index TOC and into multi-process workers.
    schema = pickle.loads(pickle.dumps(build_schema()))

    tokens = [t.text for t in schema["content"].analyzer("Scheduling clusters at Balázs")]
    assert tokens == ["schedul", "cluster", "balaz"]


def test_a_build_that_fails_to_go_live_leaves_no_generation_behind(tmp_path, monkeypatch):
    from searchsvc.backends.whoosh import store

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_name()
    before = sorted(path.name for path in directory.root.iterdir())
    real = store.write_atomically

    def fail_on_current(path, content):
        if path.name == CURRENT:
            raise OSError("disk full")
        real(path, content)

    monkeypatch.setattr(store, "write_atomically", fail_on_current)
    with pytest.raises(OSError), directory.build():
        pass

    assert directory.live_name() == live
    assert sorted(path.name for path in directory.root.iterdir()) == before


def test_a_failed_update_leaves_no_segment_files_in_the_live_generation(tmp_path):
    from dataclasses import replace

    from searchsvc.backends import open_backend

    location = build_index(tmp_path / "index")
    directory = IndexDirectory(location)
    live = directory.live_path()
    files = sorted(path.name for path in live.iterdir())
    broken = replace(FIXTURE_RECORDS[0], id="broken")
    object.__setattr__(broken, "title", None)  # fails when the writer reads it

    with open_backend(location) as backend:
        with pytest.raises(AttributeError):
            backend.write(upserts=[FIXTURE_RECORDS[1], broken])
        assert sorted(path.name for path in live.iterdir()) == files
        assert len(list(backend.records())) == len(FIXTURE_RECORDS)


# -- manifests and verification (issue 19) ---------------------------------------------------
def _truncate_largest_segment(generation) -> str:
    segment = max(generation.glob("MAIN_*.seg"), key=lambda path: path.stat().st_size)
    with open(segment, "r+b") as handle:
        handle.truncate(segment.stat().st_size // 2)
    return segment.name


def test_a_build_writes_a_manifest_of_every_file_of_its_state(tmp_path):
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_path()
    toc = integrity.latest_toc(live)
    manifest = json.loads((live / integrity.manifest_name(toc)).read_text())

    assert set(manifest["files"]) == set(integrity.state_files(live, toc))
    assert {"searchsvc.json", f"_MAIN_{toc}.toc"} <= set(manifest["files"])
    assert any(name.endswith(".seg") for name in manifest["files"])
    # Accelerations check themselves and are computed again when damaged (accel/).
    assert not {"facets.npz", "lexicons.npz"} & set(manifest["files"])
    assert not any(name.endswith(".postarrays") for name in manifest["files"])
    verdict = integrity.verify(live, remembered=False)
    assert verdict.ok and verdict.status == "verified"


def test_an_update_writes_the_manifest_of_its_state_and_removes_the_one_before(tmp_path):
    from searchsvc.backends import open_backend
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_path()
    [before] = live.glob(f"{integrity.MANIFEST_PREFIX}*")

    with open_backend(directory.root) as backend:
        backend.upsert([replace(FIXTURE_RECORDS[0], id="2409.00001", title="Zeppelins")])
        assert backend.warning() is None

    [after] = live.glob(f"{integrity.MANIFEST_PREFIX}*")
    assert after.name != before.name
    assert after.name == integrity.manifest_name(integrity.latest_toc(live))
    verdict = integrity.verify(live, remembered=False)
    assert verdict.ok and verdict.status == "verified"


def _fresh_process_reads(live, monkeypatch) -> list[str]:
    """The files a new process's verification of `live` reads in full: this process's own
    memory of checksums is cleared first, and the reads are recorded."""
    from searchsvc.backends.whoosh import integrity

    monkeypatch.setattr(integrity, "_REMEMBERED", integrity._Checksums())
    read = []
    real_open = open

    def recording_open(path, *args, **kwargs):
        read.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(integrity, "open", recording_open, raising=False)
    return read


def test_a_new_process_trusts_checksums_remembered_beside_the_state(tmp_path, monkeypatch):
    # Issue 20: each gunicorn worker read every file of a million-record index at start.
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_path()
    toc = integrity.latest_toc(live)
    assert (live / f".searchsvc-checksums-{toc}.json").is_file()
    read = _fresh_process_reads(live, monkeypatch)

    verdict = integrity.verify(live)
    assert verdict.ok and verdict.status == "verified"
    assert not [name for name in read if name in verdict_files(live, toc)]
    # `check` reads every file again, whatever is remembered.
    assert integrity.verify(live, remembered=False).ok
    assert set(verdict_files(live, toc)) <= set(read)


def verdict_files(live, toc) -> list[str]:
    from searchsvc.backends.whoosh import integrity

    return list(json.loads((live / integrity.manifest_name(toc)).read_text())["files"])


def test_a_file_rewritten_since_its_checksum_was_remembered_is_read_and_caught(
    tmp_path, monkeypatch
):
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_path()
    segment = max(live.glob("*.seg"), key=lambda path: path.stat().st_size)
    stat = segment.stat()
    # Zero-filled in place, its size and modification time put back: only the ctime tells.
    segment.write_bytes(bytes(stat.st_size))
    os.utime(segment, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    read = _fresh_process_reads(live, monkeypatch)

    verdict = integrity.verify(live)
    assert segment.name in read
    assert [damage.kind for damage in verdict.damage] == ["checksum"]


def test_a_damaged_or_foreign_file_of_remembered_checksums_is_ignored(tmp_path, monkeypatch):
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_path()
    toc = integrity.latest_toc(live)
    (live / f".searchsvc-checksums-{toc}.json").write_text("{not json")
    read = _fresh_process_reads(live, monkeypatch)

    assert integrity.verify(live).ok
    assert set(verdict_files(live, toc)) <= set(read)
    # The sound verification wrote them again, for the next process.
    saved = json.loads((live / f".searchsvc-checksums-{toc}.json").read_text())
    assert set(saved["files"]) == set(verdict_files(live, toc))


def test_a_state_whose_manifest_is_not_written_yet_is_served_as_pending(tmp_path):
    from searchsvc.backends import open_backend
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_path()
    with directory.update() as index:  # an update stopped between its commit and its manifest
        writer = index.writer()
        writer.delete_by_term("id", FIXTURE_RECORDS[1].id)
        writer.commit(merge=False)
    (live / integrity.manifest_name(integrity.latest_toc(live))).unlink()
    (live / integrity.manifest_name(integrity.latest_toc(live) - 1)).write_text("{}")

    assert integrity.verify(live).status == "pending"
    with open_backend(directory.root) as backend:
        assert len(list(backend.records())) == len(FIXTURE_RECORDS) - 1
        assert backend.warning() is None


def test_a_build_that_fails_verification_is_never_swapped_in(tmp_path, monkeypatch):
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    live = directory.live_name()
    before = sorted(path.name for path in directory.root.iterdir())
    real = integrity.write_manifest

    def then_damaged(folder, toc, write):
        real(folder, toc, write)
        _truncate_largest_segment(folder)  # between its writing and its swap

    monkeypatch.setattr(integrity, "write_manifest", then_damaged)
    with pytest.raises(IndexUnavailable, match=r"new index failed verification.*truncated"):
        build_index(directory.root, FIXTURE_RECORDS[:2])

    assert directory.live_name() == live
    assert sorted(path.name for path in directory.root.iterdir()) == before


def test_an_update_refuses_a_damaged_live_index(tmp_path):
    directory = IndexDirectory(build_index(tmp_path / "index"))
    damaged = _truncate_largest_segment(directory.live_path())

    with pytest.raises(IndexUnavailable, match=rf"damaged.*{damaged}.*rebuild"), directory.update():
        pass


def test_builds_keep_the_newest_good_previous_generation(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    names = []
    for records in (FIXTURE_RECORDS, FIXTURE_RECORDS[:3]):
        build_index(directory.root, records)
        names.append(directory.live_name())
    _truncate_largest_segment(directory.root / names[1])

    build_index(directory.root, FIXTURE_RECORDS[:2])

    assert set(directory.generations()) == {directory.live_name(), names[0]}


def test_version_tokens_are_digests_of_the_generation(tmp_path):
    from searchsvc.backends.whoosh.store import version_token

    token = version_token("gen-20260101T000000000000Z-4242", 3)
    assert token.endswith("-3") and "4242" not in token and "gen-" not in token
    assert token != version_token("gen-20260101T000000000000Z-4243", 3)


def test_a_verification_the_state_changed_under_is_made_again(tmp_path, monkeypatch):
    # As when an update rewrites searchsvc.json while a reader checks it against the manifest
    # of the state before: the mismatch is the update's, not damage.
    from searchsvc.backends.whoosh import integrity

    directory = IndexDirectory(build_index(tmp_path / "index"))
    metadata = directory.live_path() / "searchsvc.json"
    real = integrity.verify
    calls = []

    def racing(folder, remembered=True):
        calls.append(folder)
        if len(calls) > 1:
            return real(folder, remembered)
        original = metadata.read_bytes()
        metadata.write_bytes(bytes(len(original)))  # what the reader reads mid-update
        verdict = real(folder, remembered)
        metadata.write_bytes(original)  # and the state has moved on when it looks again
        return verdict

    monkeypatch.setattr(integrity, "verify", racing)
    served = directory.choose()

    assert served.name == directory.live_name() and served.warning is None
    assert len(calls) == 2
