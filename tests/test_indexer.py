"""build_index / update_index against real Whoosh indexes in temp dirs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from searchsvc.backends.whoosh.documents import from_stored, to_document
from searchsvc.backends.whoosh.search.stats import index_stats
from searchsvc.backends.whoosh.store import BUILD_PREFIX, CURRENT, IndexDirectory
from searchsvc.errors import BuildInProgress, IndexUnavailable, SourceError
from searchsvc.indexer import (
    build_index,
    build_index_from_records,
    update_index,
    update_index_from_records,
)
from searchsvc.records import Record
from tests.support import FIXTURE_RECORDS

ROOT = Path(__file__).resolve().parent.parent


def generated_records(count: int, start: int = 0) -> list[Record]:
    """`count` distinct arXiv-style records with a few shared authors and categories."""
    return [
        Record(
            id=f"2401.{n:05d}",
            title=f"Generated paper number {n} on scheduling and caching",
            abstract=f"Paper {n} studies distributed training throughput. " * 3,
            authors=(f"Author {n % 7}", f"Author {n % 11 + 100}"),
            year=2015 + n % 10,
            categories=(f"cs.{'ABCDE'[n % 5]}", "cs.LG"),
            source="arXiv",
            url=f"https://arxiv.org/abs/2401.{n:05d}",
        )
        for n in range(start, start + count)
    ]


def write_jsonl(path: Path, lines: list[str | dict]) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def stored_records(directory: IndexDirectory) -> list[Record]:
    with directory.open().searcher() as searcher:
        return [from_stored(fields) for fields in searcher.all_stored_fields()]


def test_build_from_records_indexes_every_record_and_stores_it_exactly(tmp_path):
    summary = build_index_from_records(FIXTURE_RECORDS, tmp_path / "index")

    assert (summary.read, summary.indexed, summary.merged) == (5, 5, 0)
    assert summary.records_per_second > 0
    assert summary.writer == "single writer"
    assert stored_records(IndexDirectory(tmp_path / "index")) == list(FIXTURE_RECORDS)
    for record in FIXTURE_RECORDS:
        assert from_stored(to_document(record)) == record


def test_build_merges_sightings_of_the_same_paper(tmp_path):
    first = FIXTURE_RECORDS[0]
    again = replace(first, id=first.id + "v2", authors=("Grace Hopper",), categories=("cs.OS",))

    summary = build_index_from_records([first, again, FIXTURE_RECORDS[1]], tmp_path / "index")

    assert (summary.read, summary.indexed, summary.merged) == (3, 2, 1)
    merged = stored_records(IndexDirectory(tmp_path / "index"))[0]
    assert merged.authors == (*first.authors, "Grace Hopper")
    assert merged.categories == (*first.categories, "cs.OS")


def test_build_from_jsonl_file_counts_skips_and_saves_metadata(tmp_path):
    source = write_jsonl(
        tmp_path / "records.jsonl",
        [FIXTURE_RECORDS[0].to_dict(), '{"id": "x"', FIXTURE_RECORDS[1].to_dict()],
    )

    summary = build_index([source], tmp_path / "index", format="jsonl")

    assert (summary.read, summary.indexed, summary.skipped_count) == (2, 2, 1)
    assert summary.skipped[0].path.endswith("records.jsonl")
    assert summary.skipped[0].line == 2
    metadata = IndexDirectory(tmp_path / "index").metadata()
    assert metadata["sources"] == [str(source)]
    assert metadata["counts"]["indexed"] == 2
    assert metadata["counts"]["skipped"] == 1
    assert metadata["built_at"]


def test_each_build_swaps_in_a_new_generation_and_prunes_all_but_one_previous(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    live_names = []
    for count in (1, 2, 3):
        build_index_from_records(FIXTURE_RECORDS[:count], directory.root)
        live_names.append(directory.live_name())

    assert len(set(live_names)) == 3
    generations = sorted(p.name for p in directory.root.glob("gen-*"))
    assert generations == sorted(live_names[1:])  # the live one and one previous
    assert directory.open().doc_count() == 3


def test_empty_result_is_an_error_and_the_live_index_stays(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    build_index_from_records(FIXTURE_RECORDS, directory.root)
    live = directory.live_name()
    only_bad = write_jsonl(tmp_path / "bad.jsonl", ['{"id": 1}', "[]"])

    with pytest.raises(SourceError, match="no records to index"):
        build_index([only_bad], directory.root, format="jsonl")
    with pytest.raises(SourceError, match="no records to index"):
        build_index_from_records([], directory.root)

    assert directory.live_name() == live
    assert directory.open().doc_count() == len(FIXTURE_RECORDS)


def test_empty_result_never_creates_an_index(tmp_path):
    with pytest.raises(SourceError):
        build_index_from_records([], tmp_path / "index")
    assert not IndexDirectory(tmp_path / "index").exists()


def test_a_source_that_fails_half_way_leaves_the_previous_index_live(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    build_index_from_records(FIXTURE_RECORDS[:2], directory.root)
    live = directory.live_name()

    def failing_source():
        yield from generated_records(3)
        raise SourceError("disk went away")

    with pytest.raises(SourceError, match="disk went away"):
        build_index_from_records(failing_source(), directory.root)

    assert directory.live_name() == live
    assert directory.open().doc_count() == 2
    assert not list(directory.root.glob(f"{BUILD_PREFIX}*"))


def test_a_missing_source_is_a_source_error(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        build_index([tmp_path / "nope.jsonl"], tmp_path / "index")


def test_update_replaces_changed_records_adds_new_ones_and_keeps_ids_unique(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    build_index_from_records(FIXTURE_RECORDS[:3], directory.root)
    changed = replace(
        FIXTURE_RECORDS[1], title="Learned Caches, Revised", authors=("Grace Hopper",)
    )
    added = FIXTURE_RECORDS[3]

    summary = update_index_from_records([changed, added], directory.root)

    assert (summary.indexed, summary.replaced) == (2, 1)
    records = {r.id: r for r in stored_records(directory)}
    assert len(stored_records(directory)) == 4 == len(records)
    assert records[changed.id] == changed
    assert records[added.id] == added
    with directory.open().searcher() as searcher:
        assert len(list(searcher.document_numbers(id=changed.id))) == 1
    assert directory.metadata()["last_update"]["counts"]["replaced"] == 1


def test_stats_are_exact_after_an_update_deleted_documents(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    records = generated_records(40)
    build_index_from_records(records, directory.root)
    # Rewrite every record of "Author 3": its old postings stay in the segment until a merge.
    changed = [replace(r, authors=("Grace Hopper",), year=1999) for r in records if r.id[-1] == "3"]
    update_index_from_records(changed, directory.root)
    with directory.open().reader() as reader:
        assert reader.has_deletions()  # the case this test is about

    stats = index_stats(directory, top=100)

    live = {r.id: r for r in records} | {r.id: r for r in changed}
    expected_authors = Counter(a for r in live.values() for a in r.authors)
    expected_years = Counter(str(r.year) for r in live.values())
    assert stats.documents == 40
    assert {v.value: v.count for v in stats.facets["author"]} == expected_authors
    assert {v.value: v.count for v in stats.facets["year"]} == expected_years
    assert stats.cardinalities["author"] == len(expected_authors)


def test_update_needs_an_existing_index(tmp_path):
    with pytest.raises(IndexUnavailable, match="no index"):
        update_index_from_records(FIXTURE_RECORDS, tmp_path / "index")
    source = write_jsonl(tmp_path / "r.jsonl", [FIXTURE_RECORDS[0].to_dict()])
    with pytest.raises(IndexUnavailable):
        update_index([source], tmp_path / "index")


def test_a_second_concurrent_build_gets_build_in_progress(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
    build_index_from_records(FIXTURE_RECORDS[:1], directory.root)

    with directory.lock(), pytest.raises(BuildInProgress, match="another build"):
        build_index_from_records(FIXTURE_RECORDS, directory.root)
    with directory.lock(), pytest.raises(BuildInProgress):
        update_index_from_records(FIXTURE_RECORDS, directory.root)

    assert directory.open().doc_count() == 1


def test_multiprocess_writer_indexes_every_record(tmp_path):
    records = generated_records(250)  # the writer sends batches of 100: both workers get some

    summary = build_index_from_records(records, tmp_path / "index", procs=2)

    assert summary.writer == "2 writer processes"
    stored = stored_records(IndexDirectory(tmp_path / "index"))
    # Workers each write a segment, so the order is not the input order; the records are.
    assert sorted(stored, key=lambda r: r.id) == records
    stats = index_stats(IndexDirectory(tmp_path / "index"), top=100)
    expected = Counter(c for r in records for c in r.categories)
    assert {v.value: v.count for v in stats.facets["category"]} == expected


def test_progress_bar_goes_to_stderr_only_when_asked_or_on_a_terminal(tmp_path, capsys):
    build_index_from_records(FIXTURE_RECORDS, tmp_path / "a", progress=True)
    assert "indexing" in capsys.readouterr().err

    build_index_from_records(FIXTURE_RECORDS, tmp_path / "b")  # stderr is not a TTY under pytest
    assert capsys.readouterr().err == ""


# A build of many records in its own process group, so the test can see every worker it starts.
KILLED_BUILD_DRIVER = textwrap.dedent(
    """
    import sys
    from tests.test_indexer import generated_records
    from searchsvc.indexer import build_index_from_records

    build_index_from_records(generated_records(20_000), sys.argv[1], procs=2)
    """
)


def test_a_build_killed_mid_way_leaves_the_old_index_serving_and_no_workers(tmp_path):
    directory = IndexDirectory(tmp_path / "index")
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

    assert list(directory.root.glob(f"{BUILD_PREFIX}*")), "the kill should interrupt a build"
    assert directory.live_name() == live
    index = directory.open()
    assert index.doc_count() == len(FIXTURE_RECORDS)
    with index.searcher() as searcher:
        assert searcher.document(id="2101.00003")["title"].startswith("Congestion")

    build_index_from_records(FIXTURE_RECORDS[:2], directory.root)

    assert directory.open().doc_count() == 2
    assert not list(directory.root.glob(f"{BUILD_PREFIX}*"))
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
