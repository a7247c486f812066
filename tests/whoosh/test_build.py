"""Builds and updates of the Whoosh backend on disk: generations and their pruning, the metadata
saved with them, writer processes, deleted documents, the lock, and a build killed mid-way.

The indexer's engine-neutral behaviour (counts, merging, errors, updates by id) is tested in
tests/indexing/test_indexer.py through the service; these look at the index directory itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.documents import from_stored, to_document
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION
from searchsvc.backends.whoosh.store import BUILD_PREFIX, CURRENT, GENERATION_PREFIX, IndexDirectory
from searchsvc.domain.errors import BuildInProgress, SourceError
from searchsvc.indexing.indexer import (
    build_index,
    build_index_from_records,
    update_index,
    update_index_from_records,
)
from tests.indexing.test_indexer import generated_records, write_jsonl
from tests.support import FIXTURE_RECORDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def directory(tmp_path) -> IndexDirectory:
    """A location without an index yet."""
    return IndexDirectory(tmp_path / "index")


def _generations(directory: IndexDirectory) -> list[str]:
    return sorted(p.name for p in directory.root.glob(f"{GENERATION_PREFIX}*"))


def _build_dirs(directory: IndexDirectory) -> list[Path]:
    return list(directory.root.glob(f"{BUILD_PREFIX}*"))


# -- generations -----------------------------------------------------------------------------
def test_a_single_writer_build_stores_each_record_exactly_in_input_order(directory):
    summary = build_index_from_records(FIXTURE_RECORDS, directory.root)

    assert summary.writer == "single writer"
    assert list(directory.records()) == list(FIXTURE_RECORDS)
    for record in FIXTURE_RECORDS:
        assert from_stored(to_document(record)) == record
    assert len(directory.open()._segments()) == 1


def test_each_build_swaps_in_a_new_generation_and_prunes_all_but_one_previous(directory):
    live_names = []
    for count in (1, 2, 3):
        build_index_from_records(FIXTURE_RECORDS[:count], directory.root)
        live_names.append(directory.live_name())

    assert len(set(live_names)) == 3
    assert _generations(directory) == sorted(live_names[1:])  # the live one and one previous
    assert (directory.root / CURRENT).read_text().strip() == live_names[-1]
    assert directory.open().doc_count() == 3


def test_an_update_commits_in_place_in_the_live_generation(directory):
    build_index_from_records(FIXTURE_RECORDS[:2], directory.root)
    live = directory.live_name()
    toc_generation = directory.open().latest_generation()

    update_index_from_records(FIXTURE_RECORDS[2:4], directory.root)

    assert directory.live_name() == live
    assert _generations(directory) == [live]
    assert directory.open().latest_generation() > toc_generation
    assert directory.open().doc_count() == 4


def test_an_update_of_a_location_without_an_index_builds_its_first_generation(directory):
    # Intended: the contract's write creates an index where there is none.
    summary = update_index_from_records(FIXTURE_RECORDS, directory.root)

    assert summary.indexed == len(FIXTURE_RECORDS)
    assert _generations(directory) == [directory.live_name()]
    assert list(directory.records()) == list(FIXTURE_RECORDS)
    metadata = directory.metadata()
    assert metadata["counts"]["indexed"] == len(FIXTURE_RECORDS)
    assert metadata["built_at"]


# -- saved metadata --------------------------------------------------------------------------
def test_a_build_saves_its_sources_counts_and_writer_with_its_generation(tmp_path, directory):
    source = write_jsonl(
        tmp_path / "records.jsonl",
        [FIXTURE_RECORDS[0].to_dict(), '{"id": "x"', FIXTURE_RECORDS[1].to_dict()],
    )

    build_index([source], directory.root, format="jsonl")

    metadata = directory.metadata()
    assert metadata["sources"] == [str(source)]
    assert metadata["format"] == "jsonl"
    assert metadata["counts"] == {"read": 2, "indexed": 2, "merged": 0, "skipped": 1}
    assert metadata["writer"] == "single writer"
    assert metadata["documents"] == 2
    assert metadata["schema_version"] == SCHEMA_VERSION
    assert directory.built_at() == datetime.fromisoformat(metadata["built_at"])
    assert "last_update" not in metadata


def test_an_update_saves_what_it_did_under_last_update_and_keeps_the_builds(tmp_path, directory):
    build_index_from_records(FIXTURE_RECORDS[:3], directory.root)
    built = directory.metadata()
    changed = replace(FIXTURE_RECORDS[1], title="Learned Caches, Revised")
    source = write_jsonl(
        tmp_path / "more.jsonl",
        [changed.to_dict(), FIXTURE_RECORDS[3].to_dict(), changed.to_dict(), "not json"],
    )

    update_index([source], directory.root)

    metadata = directory.metadata()
    assert metadata["last_update"] == {
        "sources": [str(source)],
        "format": None,
        "counts": {"read": 3, "indexed": 2, "merged": 1, "skipped": 1},
        "added": 1,
        "replaced": 1,
        "deleted": 0,
    }
    assert {key: metadata[key] for key in built} == built  # the build's own entries stay
    assert metadata["updated_at"] >= metadata["built_at"]

    update_index_from_records([FIXTURE_RECORDS[4]], directory.root)
    assert directory.metadata()["last_update"] == {
        "sources": [],
        "counts": {"read": 1, "indexed": 1, "merged": 0, "skipped": 0},
        "added": 1,
        "replaced": 0,
        "deleted": 0,
    }


# -- writer processes ------------------------------------------------------------------------
def test_two_writer_processes_index_every_record_in_a_segment_each(directory):
    records = generated_records(250)

    summary = build_index_from_records(records, directory.root, procs=2)

    assert summary.writer == "2 writer processes"
    assert directory.metadata()["writer"] == "2 writer processes"
    assert len(directory.open()._segments()) == 2
    # Each worker writes a contiguous share as its own segment, in order.
    assert list(directory.records()) == records
    stats = WhooshBackend(directory).stats(top=100)
    expected = Counter(c for r in records for c in r.categories)
    assert {v.value: v.count for v in stats.facets["category"]} == expected


# -- deleted documents -----------------------------------------------------------------------
def test_an_update_replaces_a_record_by_deleting_its_document_and_adding_one(directory):
    build_index_from_records(FIXTURE_RECORDS[:3], directory.root)
    changed = replace(FIXTURE_RECORDS[1], title="Learned Caches, Revised")

    update_index_from_records([changed], directory.root)

    with directory.open().searcher() as searcher:
        assert searcher.reader().has_deletions()
        assert searcher.doc_count_all() == 4 and searcher.doc_count() == 3
        assert len(list(searcher.document_numbers(id=changed.id))) == 1
        assert from_stored(searcher.document(id=changed.id)) == changed


def test_stats_are_exact_after_an_update_left_deleted_documents(directory):
    records = generated_records(40)
    build_index_from_records(records, directory.root)
    # Rewrite every record of "Author 3": its old postings stay in the segment until a merge.
    changed = [replace(r, authors=("Grace Hopper",), year=1999) for r in records if r.id[-1] == "3"]
    update_index_from_records(changed, directory.root)
    with directory.open().reader() as reader:
        assert reader.has_deletions()  # the case this test is about

    stats = WhooshBackend(directory).stats(top=100)

    live = {r.id: r for r in records} | {r.id: r for r in changed}
    expected_authors = Counter(a for r in live.values() for a in r.authors)
    expected_years = Counter(str(r.year) for r in live.values())
    assert stats.documents == 40
    assert {v.value: v.count for v in stats.facets["author"]} == expected_authors
    assert {v.value: v.count for v in stats.facets["year"]} == expected_years
    assert stats.cardinalities["author"] == len(expected_authors)


# -- failures --------------------------------------------------------------------------------
def test_a_source_failing_half_way_leaves_no_build_directory(directory):
    build_index_from_records(FIXTURE_RECORDS[:2], directory.root)
    live = directory.live_name()

    def failing_source():
        yield from generated_records(3)
        raise SourceError("disk went away")

    with pytest.raises(SourceError):
        build_index_from_records(failing_source(), directory.root)

    assert directory.live_name() == live
    assert not _build_dirs(directory)


def test_empty_input_leaves_no_index_directory_behind(directory):
    with pytest.raises(SourceError):
        build_index_from_records([], directory.root)
    with pytest.raises(SourceError):
        update_index_from_records([], directory.root)

    assert not directory.root.exists()


def test_a_held_directory_lock_refuses_builds_and_updates(directory):
    build_index_from_records(FIXTURE_RECORDS[:1], directory.root)

    with directory.lock(), pytest.raises(BuildInProgress, match="another build"):
        build_index_from_records(FIXTURE_RECORDS, directory.root)
    with directory.lock(), pytest.raises(BuildInProgress):
        update_index_from_records(FIXTURE_RECORDS, directory.root)

    assert directory.open().doc_count() == 1


# A build of many records in its own process group, so the test can see every worker it starts.
KILLED_BUILD_DRIVER = textwrap.dedent(
    """
    import sys
    from tests.indexing.test_indexer import generated_records
    from searchsvc.indexing.indexer import build_index_from_records

    build_index_from_records(generated_records(20_000), sys.argv[1], procs=2)
    """
)


def test_a_build_killed_mid_way_leaves_the_old_index_serving_and_no_workers(directory):
    build_index_from_records(FIXTURE_RECORDS, directory.root)
    live = directory.live_name()

    build = subprocess.Popen(
        [sys.executable, "-c", KILLED_BUILD_DRIVER, str(directory.root)],
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        # The writer's temp dir appears once the workers are being fed documents.
        _wait_for(lambda: list(directory.root.glob(f"{BUILD_PREFIX}*/*.tmp")), 60)
        time.sleep(0.3)
        os.kill(build.pid, signal.SIGKILL)
        build.wait(10)
        # Workers die with their parent (they would otherwise hold the build lock forever).
        _wait_for(lambda: not _group_alive(build.pid), 10)
    finally:
        _kill_group(build.pid)

    assert _build_dirs(directory), "the kill should interrupt a build"
    assert directory.live_name() == live
    index = directory.open()
    assert index.doc_count() == len(FIXTURE_RECORDS)
    with index.searcher() as searcher:
        assert searcher.document(id="2101.00003")["title"].startswith("Congestion")

    build_index_from_records(FIXTURE_RECORDS[:2], directory.root)

    assert directory.open().doc_count() == 2
    assert not _build_dirs(directory)
    assert (directory.root / CURRENT).read_text().strip() != live


def _wait_for(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {seconds} s")
        time.sleep(0.02)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def test_updates_merge_small_segments_of_like_size_once_a_tier_is_full(tmp_path, monkeypatch):
    from searchsvc.backends.whoosh.backend import WhooshBackend
    from searchsvc.backends.whoosh.build import writer as writer_module
    from searchsvc.backends.whoosh.store import IndexDirectory
    from searchsvc.domain.query import SearchRequest
    from searchsvc.indexing.indexer import build_index_from_records
    from tests.support import multi_block_records

    monkeypatch.setattr(writer_module, "SMALL_SEGMENT_DOCS", 100)
    monkeypatch.setattr(writer_module, "MERGE_AT", 3)
    build_index_from_records(multi_block_records(150), tmp_path / "index", progress=False)
    directory = IndexDirectory(tmp_path / "index")
    start = iter(range(1_000, 100_000, 100))

    def write(count: int) -> list[int]:
        backend.upsert(multi_block_records(count, start=next(start)))
        return sorted(s.doc_count_all() for s in directory.open()._segments())

    with WhooshBackend(directory) as backend:
        assert write(40) == [40, 150]  # tier 2 (11-100 documents); 150 is never merged
        assert write(30) == [30, 40, 150]
        assert write(2) == [2, 30, 40, 150]  # tier 1 (up to 10)
        assert write(20) == [2, 20, 30, 40, 150]  # three in tier 2, none merged yet
        # Three of tier 2 before this write: merged into one (90), the write's own after it.
        assert write(1) == [1, 2, 90, 150]
        assert write(1) == [1, 1, 2, 90, 150]
        assert write(1) == [1, 4, 90, 150]  # tier 1 full: merged
        assert backend.search(SearchRequest(per_page=1)).total == 150 + 40 + 30 + 2 + 20 + 3
