"""Posting-arrays files: written by builds and updates, identical to Whoosh's postings, removed
with their segments, and ignored (never trusted, never a failed search) when damaged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from whoosh.filedb.filestore import RamStorage

from searchsvc.backends.whoosh.accel.posting_arrays_file import (
    EXTENSION,
    PostingArrays,
    array_fields,
    sidecar_path,
    write_missing_posting_arrays,
)
from searchsvc.backends.whoosh.accel.snapshot_postings import SnapshotArrays
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.build import writer as writing
from searchsvc.backends.whoosh.documents import to_document
from searchsvc.backends.whoosh.schema import build_schema
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import SearchRequest
from searchsvc.indexing.indexer import build_index_from_records, update_index_from_records
from searchsvc.sources import read_records
from tests.support import FIXTURE_RECORDS, multi_block_records
from tests.whoosh.support import build_with_whoosh_writer

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ("scheduling", "learning deep models", "caches OR graphs", "akella", "category:cs.DC")


@pytest.fixture
def segmented(tmp_path, monkeypatch) -> IndexDirectory:
    """An index built by the fast writer in two processes, as segments of at most 40 records."""
    monkeypatch.setattr(writing, "MAX_SEGMENT_RECORDS", 40)
    build_index_from_records(
        [*FIXTURE_RECORDS, *multi_block_records(300)], tmp_path / "index", procs=2
    )
    return IndexDirectory(tmp_path / "index")


def _sidecars(directory: IndexDirectory) -> dict[str, Path]:
    return {p.name[: -len(EXTENSION)]: p for p in directory.live_path().glob(f"*{EXTENSION}")}


def _segment_ids(directory: IndexDirectory) -> set[str]:
    return {segment.segment_id() for segment in directory.open()._segments()}


def _whoosh_postings(reader, field: str, term: bytes) -> tuple[list[int], list[float]]:
    """The live postings through Whoosh's own matcher (deleted documents filtered out)."""
    docs, weights = [], []
    if (field, term) in reader:
        matcher = reader.postings(field, term)
        while matcher.is_active():
            docs.append(matcher.id())
            weights.append(matcher.weight())
            matcher.next()
    return docs, weights


def _assert_postings_are_whooshs(directory: IndexDirectory, mapped_segments: int | None) -> None:
    """Every term of every field ranking reads: the arrays give Whoosh's postings."""
    with directory.open().reader() as reader:
        arrays = SnapshotArrays(reader)
        if mapped_segments is not None:
            assert sum(sidecar is not None for sidecar in arrays._sidecars) == mapped_segments
        for field in array_fields(reader.schema):
            for term in reader.lexicon(field):
                postings = arrays.postings(reader, field, term)
                docs, weights = _whoosh_postings(reader, field, term)
                assert postings.docs.tolist() == docs, (field, term)
                assert postings.weights.tolist() == weights, (field, term)
                assert postings.doc_frequency == reader.doc_frequency(field, term), (field, term)


def _answers(directory: IndexDirectory) -> list[tuple]:
    with WhooshBackend(directory) as backend:
        answers = []
        for text in QUERIES:
            result = backend.search(SearchRequest(q=text, facets=FACET_NAMES, per_page=50))
            hits = [(hit.record.id, hit.score) for hit in result.hits]
            answers.append((result.total, hits, result.facets))
        return answers


def _answers_without_sidecars(directory: IndexDirectory) -> list[tuple]:
    for path in _sidecars(directory).values():
        path.unlink()
    return _answers(directory)


# -- written by builds and updates -----------------------------------------------------------
def test_the_fast_writer_saves_every_segments_arrays(segmented):
    assert set(_sidecars(segmented)) == _segment_ids(segmented)
    assert len(_sidecars(segmented)) == 8  # 310 records: two shares of 155, in segments of 40
    _assert_postings_are_whooshs(segmented, mapped_segments=8)


def test_a_build_by_whooshs_writer_gets_its_arrays_from_the_blocks(tmp_path):
    records = read_records([ROOT / "seeds"])
    directory = build_with_whoosh_writer(tmp_path / "index", records, segments=2)
    assert len(_segment_ids(directory)) == 2
    assert set(_sidecars(directory)) == _segment_ids(directory)
    _assert_postings_are_whooshs(directory, mapped_segments=2)


def test_arrays_from_the_blocks_are_the_fast_writers_byte_for_byte(segmented):
    written = {name: path.read_bytes() for name, path in _sidecars(segmented).items()}
    for path in _sidecars(segmented).values():
        path.unlink()

    assert sorted(write_missing_posting_arrays(segmented.open())) == sorted(written)

    assert {name: path.read_bytes() for name, path in _sidecars(segmented).items()} == written
    assert write_missing_posting_arrays(segmented.open()) == []  # every segment has sound ones


def test_an_update_with_deletions_gives_whooshs_postings_and_answers(segmented):
    before = _sidecars(segmented)
    with segmented.update() as index:
        writer = index.writer()
        for record in multi_block_records(30):
            writer.update_document(**to_document(replace(record, title="Revised caches")))
        writer.add_document(**to_document(multi_block_records(1, start=900)[0]))
        writer.commit(merge=False)  # the replaced documents stay, deleted, in their segments

    with segmented.open().reader() as reader:
        assert reader.has_deletions()
    after = _sidecars(segmented)
    assert set(after) == _segment_ids(segmented)
    assert len(after) == len(before) + 1  # the new segment's, decoded from its blocks
    assert all(path.read_bytes() == after[name].read_bytes() for name, path in before.items())
    _assert_postings_are_whooshs(segmented, mapped_segments=len(after))
    assert _answers(segmented) == _answers_without_sidecars(segmented)


def test_an_upsert_by_the_indexer_gives_whooshs_postings(segmented):
    replaced = [
        replace(r, title="Revised caches", authors=("Grace Hopper",))
        for r in multi_block_records(30)
    ]
    update_index_from_records([*replaced, *multi_block_records(5, start=900)], segmented.root)

    assert set(_sidecars(segmented)) == _segment_ids(segmented)
    _assert_postings_are_whooshs(segmented, mapped_segments=len(_segment_ids(segmented)))
    assert _answers(segmented) == _answers_without_sidecars(segmented)


def test_arrays_of_merged_away_segments_are_removed(segmented):
    before = _sidecars(segmented)
    with segmented.update() as index:
        writer = index.writer()
        writer.delete_by_term("id", "2400.00007")
        writer.add_document(**to_document(multi_block_records(1, start=700)[0]))
        writer.commit(optimize=True)  # every segment merged into one

    after = _sidecars(segmented)
    assert len(_segment_ids(segmented)) == 1
    assert set(after) == _segment_ids(segmented)
    assert not any(path.exists() for path in before.values())
    _assert_postings_are_whooshs(segmented, mapped_segments=1)


def test_searches_answer_the_same_with_and_without_the_arrays(segmented):
    with_arrays = _answers(segmented)
    assert with_arrays[0][0] > 300  # `scheduling`: every generated record and a fixture one
    assert with_arrays == _answers_without_sidecars(segmented)


def test_no_temporary_file_is_left_and_a_killed_writers_one_is_removed(segmented):
    generation = segmented.live_path()
    assert not list(generation.glob(".*.tmp"))
    name = next(iter(_sidecars(segmented).values())).name
    leftover = generation / f".{name}.1234.5678.tmp"
    leftover.write_bytes(b"half-written")

    update_index_from_records(multi_block_records(1, start=800), segmented.root)

    assert not leftover.exists()


def test_an_index_in_memory_is_searched_without_arrays():
    index = RamStorage().create_index(build_schema())
    writer = index.writer()
    for record in FIXTURE_RECORDS:
        writer.add_document(**to_document(record))
    writer.commit()

    assert write_missing_posting_arrays(index) == []
    with index.reader() as reader:
        arrays = SnapshotArrays(reader)
        assert arrays._sidecars == [None]
        term = next(iter(reader.lexicon("content")))
        assert (
            arrays.postings(reader, "content", term).docs.tolist()
            == (_whoosh_postings(reader, "content", term)[0])
        )


# -- never trusted when damaged --------------------------------------------------------------
def _header(data: bytes) -> tuple[dict, int]:
    length = int.from_bytes(data[12:16], "little")
    return json.loads(data[16 : 16 + length]), 16 + length


def _with_header(data: bytes, **changes) -> bytes:
    header, end = _header(data)
    header.update(changes)
    encoded = json.dumps(header, sort_keys=True).encode()
    encoded += b" " * (end - 16 - len(encoded))  # same length: the sections stay in place
    return data[:12] + len(encoded).to_bytes(4, "little") + encoded + data[end:]


def _doc_numbers_out_of_range(data: bytes) -> bytes:
    header, _ = _header(data)
    docs_bytes = 4 * header["postings"]
    weights_bytes = np.dtype(header["weights"]).itemsize * header["postings"]
    start = len(data) - weights_bytes - docs_bytes
    return data[:start] + b"\xff\xff\xff\x7f" * header["postings"] + data[start + docs_bytes :]


DAMAGES = {
    "empty": lambda data: b"",
    "truncated": lambda data: data[: len(data) // 2],
    "one byte longer": lambda data: data + b"\0",
    "not the magic": lambda data: b"NOTPOSTS" + data[8:],
    "another format version": lambda data: data[:8] + (99).to_bytes(4, "little") + data[12:],
    "header not JSON": lambda data: data[:16] + b"\xff" * 8 + data[24:],
    "another segment": lambda data: _with_header(data, segment_id="MAIN_zzzzzzzzzzzzzzzz"),
    "another document count": lambda data: _with_header(
        data, doc_count_all=_header(data)[0]["doc_count_all"] + 1
    ),
    "document numbers out of range": _doc_numbers_out_of_range,
}


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_damaged_file_is_ignored_and_postings_stay_whooshs(segmented, damage, caplog):
    expected = _answers(segmented)
    sidecars = sorted(_sidecars(segmented).values())
    for path in sidecars[:3]:
        path.write_bytes(damage(path.read_bytes()))

    _assert_postings_are_whooshs(segmented, mapped_segments=None)
    assert _answers(segmented) == expected
    assert "posting arrays" in caplog.text


def test_a_segments_file_under_another_segments_name_is_not_used(segmented):
    first, second = sorted(_sidecars(segmented).values())[:2]
    first.write_bytes(second.read_bytes())
    segment_id, second_id = first.name[: -len(EXTENSION)], second.name[: -len(EXTENSION)]
    # Segments hold up to 40 records: each share's last one fewer.
    doc_counts = {s.segment_id(): s.doc_count_all() for s in segmented.open()._segments()}

    assert PostingArrays.open(first, segment_id, doc_counts[second_id]) is None
    assert PostingArrays.open(second, second_id, doc_counts[second_id]) is not None
    assert sidecar_path(first.parent, segment_id) == first
