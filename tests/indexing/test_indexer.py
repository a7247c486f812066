"""build_index / update_index: what the indexer does on any engine, read back through the service.

Results are checked through `SearchService.open(location)` (records, get, stats, version) only,
so these hold for every engine a location can name. What the Whoosh backend does on disk (its
generations, saved metadata, writer processes, a build killed mid-way) is in
tests/whoosh/test_build.py.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from searchsvc.backends import location_url, open_backend
from searchsvc.domain.errors import BuildInProgress, IndexUnavailable, SourceError
from searchsvc.domain.records import Record
from searchsvc.indexing.indexer import (
    build_index,
    build_index_from_records,
    update_index,
    update_index_from_records,
)
from searchsvc.service import SearchService
from tests.support import FIXTURE_RECORDS


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


def indexed(location) -> dict[str, Record]:
    """Every record the index at `location` holds, by id (each id once: asserted)."""
    with SearchService.open(location) as service:
        records = list(service.records())
    by_id = {record.id: record for record in records}
    assert len(by_id) == len(records), "an id is indexed twice"
    return by_id


def version_of(location) -> str:
    with SearchService.open(location) as service:
        return service.version()


@pytest.fixture
def location(tmp_path) -> str:
    """A fresh location without an index yet."""
    return str(tmp_path / "index")


# -- building --------------------------------------------------------------------------------
def test_build_from_records_indexes_every_record_and_stores_it_exactly(location):
    summary = build_index_from_records(FIXTURE_RECORDS, location)

    assert (summary.read, summary.indexed, summary.merged, summary.skipped_count) == (5, 5, 0, 0)
    assert summary.records_per_second > 0
    assert summary.index_dir == location_url(location)
    assert indexed(location) == {record.id: record for record in FIXTURE_RECORDS}
    with SearchService.open(location) as service:
        for record in FIXTURE_RECORDS:
            assert service.get(record.id) == record
        assert service.stats().documents == len(FIXTURE_RECORDS)


def test_build_merges_sightings_of_the_same_paper(location):
    first = FIXTURE_RECORDS[0]
    again = replace(first, id=first.id + "v2", authors=("Grace Hopper",), categories=("cs.OS",))

    summary = build_index_from_records([first, again, FIXTURE_RECORDS[1]], location)

    assert (summary.read, summary.indexed, summary.merged) == (3, 2, 1)
    records = indexed(location)
    assert set(records) == {first.id, FIXTURE_RECORDS[1].id}
    assert records[first.id].authors == (*first.authors, "Grace Hopper")
    assert records[first.id].categories == (*first.categories, "cs.OS")


def test_build_from_a_jsonl_file_counts_read_indexed_and_skipped_lines(tmp_path, location):
    source = write_jsonl(
        tmp_path / "records.jsonl",
        [FIXTURE_RECORDS[0].to_dict(), '{"id": "x"', FIXTURE_RECORDS[1].to_dict()],
    )

    summary = build_index([source], location, format="jsonl")

    assert (summary.read, summary.indexed, summary.skipped_count) == (2, 2, 1)
    assert summary.skipped[0].path.endswith("records.jsonl")
    assert summary.skipped[0].line == 2
    assert set(indexed(location)) == {FIXTURE_RECORDS[0].id, FIXTURE_RECORDS[1].id}
    with SearchService.open(location) as service:
        stats = service.stats()
    assert stats.documents == 2
    assert stats.built_at is not None


def test_a_rebuild_replaces_every_record_and_changes_the_version(location):
    build_index_from_records(FIXTURE_RECORDS, location)
    before = version_of(location)

    build_index_from_records(generated_records(3), location)

    assert set(indexed(location)) == {record.id for record in generated_records(3)}
    assert version_of(location) != before


def test_empty_input_is_an_error_and_the_live_index_stays(tmp_path, location):
    build_index_from_records(FIXTURE_RECORDS, location)
    before = version_of(location)
    only_bad = write_jsonl(tmp_path / "bad.jsonl", ['{"id": 1}', "[]"])

    with pytest.raises(SourceError, match="no records to index"):
        build_index([only_bad], location, format="jsonl")
    with pytest.raises(SourceError, match="no records to index"):
        build_index_from_records([], location)
    with pytest.raises(SourceError, match="no records to index"):
        update_index_from_records([], location)

    assert version_of(location) == before
    assert indexed(location) == {record.id: record for record in FIXTURE_RECORDS}


def test_empty_input_never_creates_an_index(location):
    with pytest.raises(SourceError):
        build_index_from_records([], location)
    with pytest.raises(SourceError):
        update_index_from_records([], location)

    with SearchService.open(location) as service, pytest.raises(IndexUnavailable):
        service.stats()


def test_a_source_that_fails_half_way_leaves_the_previous_index_live(location):
    build_index_from_records(FIXTURE_RECORDS[:2], location)
    before = version_of(location)

    def failing_source():
        yield from generated_records(3)
        raise SourceError("disk went away")

    with pytest.raises(SourceError, match="disk went away"):
        build_index_from_records(failing_source(), location)
    with pytest.raises(SourceError, match="disk went away"):
        update_index_from_records(failing_source(), location)

    assert version_of(location) == before
    assert set(indexed(location)) == {record.id for record in FIXTURE_RECORDS[:2]}


def test_a_missing_source_is_a_source_error(tmp_path, location):
    with pytest.raises(SourceError, match="does not exist"):
        build_index([tmp_path / "nope.jsonl"], location)
    with pytest.raises(SourceError, match="does not exist"):
        update_index([tmp_path / "nope.jsonl"], location)


def test_no_source_at_all_is_a_source_error(location):
    with pytest.raises(SourceError, match="no source"):
        build_index([], location)


# -- updating --------------------------------------------------------------------------------
def test_update_replaces_changed_records_adds_new_ones_and_keeps_ids_unique(location):
    build_index_from_records(FIXTURE_RECORDS[:3], location)
    before = version_of(location)
    changed = replace(
        FIXTURE_RECORDS[1], title="Learned Caches, Revised", authors=("Grace Hopper",)
    )
    added = FIXTURE_RECORDS[3]

    summary = update_index_from_records([changed, added], location)

    assert (summary.read, summary.indexed, summary.replaced) == (2, 2, 1)
    records = indexed(location)
    assert records == {
        FIXTURE_RECORDS[0].id: FIXTURE_RECORDS[0],
        changed.id: changed,
        FIXTURE_RECORDS[2].id: FIXTURE_RECORDS[2],
        added.id: added,
    }
    assert version_of(location) != before
    with SearchService.open(location) as service:
        assert service.stats().documents == 4
        assert [hit.record.id for hit in service.search('title:"caches revised"').hits] == [
            changed.id
        ]


def test_update_from_a_jsonl_file_adds_and_replaces_by_id(tmp_path, location):
    build_index_from_records(FIXTURE_RECORDS[:2], location)
    changed = replace(FIXTURE_RECORDS[0], year=2024)
    source = write_jsonl(tmp_path / "more.jsonl", [changed.to_dict(), FIXTURE_RECORDS[2].to_dict()])

    summary = update_index([source], location, format="jsonl")

    assert (summary.read, summary.indexed, summary.replaced) == (2, 2, 1)
    records = indexed(location)
    assert set(records) == {record.id for record in FIXTURE_RECORDS[:3]}
    assert records[changed.id] == changed


def test_update_of_a_location_without_an_index_creates_it(tmp_path, location):
    # Intended: the contract's write creates the index when there is none (an update used to
    # need an existing index).
    summary = update_index_from_records(FIXTURE_RECORDS, location)

    assert (summary.indexed, summary.replaced) == (len(FIXTURE_RECORDS), 0)
    assert indexed(location) == {record.id: record for record in FIXTURE_RECORDS}

    other = str(tmp_path / "other")
    source = write_jsonl(tmp_path / "r.jsonl", [FIXTURE_RECORDS[0].to_dict()])
    update_index([source], other)
    assert indexed(other) == {FIXTURE_RECORDS[0].id: FIXTURE_RECORDS[0]}


def test_stats_count_each_record_once_after_an_update_replaced_some(location):
    records = generated_records(40)
    build_index_from_records(records, location)
    changed = [replace(r, authors=("Grace Hopper",), year=1999) for r in records if r.id[-1] == "3"]

    update_index_from_records(changed, location)

    with SearchService.open(location) as service:
        stats = service.stats(top=100)
    live = {r.id: r for r in records} | {r.id: r for r in changed}
    expected_authors = Counter(a for r in live.values() for a in r.authors)
    assert stats.documents == 40
    assert {v.value: v.count for v in stats.facets["author"]} == expected_authors
    assert {v.value: v.count for v in stats.facets["year"]} == Counter(
        str(r.year) for r in live.values()
    )
    assert stats.cardinalities["author"] == len(expected_authors)


# -- one writer at a time --------------------------------------------------------------------
class _HeldWrite:
    """Progress that holds the write reporting it (at its first report) until released."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.released = threading.Event()

    def advance(self, count: int) -> None:
        self._hold()

    def stage(self, name: str) -> None:
        self._hold()

    def _hold(self) -> None:
        self.reached.set()
        self.released.wait(60)


def test_a_second_concurrent_build_or_update_gets_build_in_progress(tmp_path, location):
    build_index_from_records(FIXTURE_RECORDS[:1], location)
    held = _HeldWrite()
    outcome: list[object] = []

    def rebuild() -> None:
        with open_backend(location) as backend:
            try:
                outcome.append(backend.rebuild(FIXTURE_RECORDS[:2], progress=held))
            except BaseException as exc:  # reported by the test below
                outcome.append(exc)

    writer = threading.Thread(target=rebuild)
    writer.start()
    try:
        assert held.reached.wait(60), "the engine never reported progress while writing"
        with pytest.raises(BuildInProgress):
            build_index_from_records(FIXTURE_RECORDS, location)
        with pytest.raises(BuildInProgress):
            update_index_from_records(FIXTURE_RECORDS, location)
        # Refused before reading its input: a missing source would be a SourceError.
        with pytest.raises(BuildInProgress):
            build_index([tmp_path / "nope.jsonl"], location)
    finally:
        held.released.set()
        writer.join(60)

    assert not isinstance(outcome[0], BaseException), outcome[0]
    assert set(indexed(location)) == {record.id for record in FIXTURE_RECORDS[:2]}


# -- progress --------------------------------------------------------------------------------
def test_progress_bar_goes_to_stderr_only_when_asked_or_on_a_terminal(tmp_path, capsys):
    build_index_from_records(FIXTURE_RECORDS, tmp_path / "a", progress=True)
    assert "indexing" in capsys.readouterr().err

    build_index_from_records(FIXTURE_RECORDS, tmp_path / "b")  # stderr is not a TTY under pytest
    assert capsys.readouterr().err == ""

    update_index_from_records(FIXTURE_RECORDS[:1], tmp_path / "a", progress=True)
    assert "indexing" in capsys.readouterr().err
    update_index_from_records(FIXTURE_RECORDS[:1], tmp_path / "a")
    assert capsys.readouterr().err == ""


def test_records_with_different_ids_and_equal_titles_are_all_indexed(tmp_path, location):
    # SciFact holds distinct documents under one title; a title match must not merge them.
    lines = [{"id": n, "title": "A shared title", "abstract": f"text {n}"} for n in "123"]
    summary = build_index([write_jsonl(tmp_path / "same.jsonl", lines)], location)
    assert (summary.indexed, summary.merged) == (3, 0)
    assert sorted(indexed(location)) == ["1", "2", "3"]


def test_an_id_repeated_in_a_file_is_one_record_that_an_update_replaces(tmp_path, location):
    lines = [
        {"id": "doc-1", "title": "Stale title about glaciers"},
        {"id": "doc-1", "title": "Current title about volcanoes"},
    ]
    build_index([write_jsonl(tmp_path / "twice.jsonl", lines)], location)
    assert [r.title for r in indexed(location).values()] == ["Current title about volcanoes"]
    update = [{"id": "doc-1", "title": "Updated title about rivers"}]
    update_index([write_jsonl(tmp_path / "update.jsonl", update)], location)
    with SearchService.open(location) as service:
        assert service.search("glaciers").total == 0
        assert service.search("volcanoes").total == 0
        assert [hit.record.id for hit in service.search("rivers").hits] == ["doc-1"]


def test_the_scifact_corpus_builds_one_record_per_document(tmp_path, location):
    from benchmarks.common import SCIFACT, load_scifact

    if not (SCIFACT / "corpus.jsonl.gz").exists():
        pytest.skip(f"needs {SCIFACT / 'corpus.jsonl.gz'}")
    corpus = load_scifact().corpus.records
    summary = build_index_from_records(corpus, location, progress=False)
    assert summary.indexed == len(corpus) == len({record.id for record in corpus})
