"""Facet arrays saved with each index state: written by builds and updates, loaded only when
they describe exactly the state a reader sees, and never the cause of a wrong count."""

from __future__ import annotations

import bisect
import io
import json
import mmap
import random
import zipfile
from dataclasses import replace

import numpy as np
import pytest

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.accel.facet_table_file import (
    DERIVED_SAVED,
    PackedValues,
    array_text,
    facet_table_for,
    load_facet_table,
    npz_bytes,
    text_array,
)
from searchsvc.backends.whoosh.accel.value_column import ValueMajor
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.state_files import FACET_ARRAYS
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from searchsvc.indexing.indexer import build_index_from_records, update_index_from_records
from tests.support import FIXTURE_RECORDS

AUTHORS = ("Ada Lovelace", "Aditya Akella", "Shivaram Venkataraman", "C. Balázs", "Ève Durand")
CATEGORIES = ("cs.DC", "cs.LG", "cs.NI", "hep-ph", "cs.CR")


def _records(count: int, start: int = 0, title: str = "Scheduling") -> list[Record]:
    """Records with overlapping authors, categories and years (some without a year)."""
    return [
        Record(
            id=f"2400.{n:05d}",
            title=f"{title} study {n}",
            abstract=f"Cluster scheduling and caching, part {n}.",
            authors=(AUTHORS[n % 5], AUTHORS[(n * 3 + 1) % 5]),
            year=None if n % 7 == 0 else 2015 + n % 9,
            categories=(CATEGORIES[n % 5],) if n % 4 else (CATEGORIES[n % 5], "cs.LG"),
            source="arXiv",
        )
        for n in range(start, start + count)
    ]


@pytest.fixture
def directory(tmp_path) -> IndexDirectory:
    build_index_from_records([*FIXTURE_RECORDS, *_records(60)], tmp_path / "index")
    return IndexDirectory(tmp_path / "index")


@pytest.fixture
def updated(directory) -> IndexDirectory:
    """The index after an update that replaced 20 records (deleting their old documents)."""
    replaced = [replace(r, year=1999, authors=("Grace Hopper",)) for r in _records(20, start=10)]
    update_index_from_records([*replaced, *_records(5, start=100)], directory.root)
    return directory


def _saved_and_computed(directory: IndexDirectory) -> tuple[FacetTable | None, FacetTable]:
    with directory.open().reader() as reader:
        return load_facet_table(_arrays_path(directory), reader), FacetTable.build(reader)


def _arrays_path(directory: IndexDirectory):
    return directory.live_path() / FACET_ARRAYS


def _assert_same_table(saved: FacetTable | None, computed: FacetTable) -> None:
    assert saved is not None
    assert saved.doc_count == computed.doc_count
    for name in ("live", "year", "title_rank"):
        np.testing.assert_array_equal(getattr(saved, name), getattr(computed, name))
    assert saved.columns.keys() == computed.columns.keys()
    for facet, column in computed.columns.items():
        loaded = saved.columns[facet]
        assert list(loaded.values) == list(column.values)
        assert [loaded.values[i] for i in range(len(column.values))] == list(column.values)
        for name in ("entry_doc", "entry_value", "totals"):
            expected = getattr(column, name)
            assert getattr(loaded, name).dtype == expected.dtype
            np.testing.assert_array_equal(getattr(loaded, name), expected)
        _assert_same_grouping(loaded, column)
    # The subject facets' columns come with the table, as this process would derive them.
    for facet in DERIVED_SAVED:
        assert (facet, False) in saved._derived
        loaded, column = saved._derived[(facet, False)], computed.column(facet)
        assert list(loaded.values) == list(column.values)
        assert loaded.search_texts == column.search_texts
        for name in ("entry_doc", "entry_value", "totals"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(column, name))
        _assert_same_grouping(loaded, column)


def _assert_same_grouping(loaded, column) -> None:
    # Entries grouped by value, saved rather than sorted again by each process (issue 20).
    assert loaded._by_total is not None
    expected = ValueMajor.of(column)
    for name in ("ordinals", "rising", "starts", "docs"):
        np.testing.assert_array_equal(getattr(loaded._by_total, name), getattr(expected, name))
    assert loaded._by_total.complete == expected.complete


REQUESTS = (
    SearchRequest(),
    SearchRequest(q="scheduling"),
    SearchRequest.from_params(q="cluster caching", author=("Grace Hopper",)),
    SearchRequest.from_params(q="learning", category=("cs.LG",), year_from=2016, year_to=2021),
    SearchRequest.from_params(author=("Aditya Akella", "ève durand"), sort="title"),
    SearchRequest.from_params(q="scheduling", year=(1999,), sort="oldest", per_page=50),
)


def _answers(directory: IndexDirectory) -> list[tuple]:
    with WhooshBackend(directory) as backend:
        answers = []
        for request in REQUESTS:
            request = replace(request, facets=FACET_NAMES, facet_size=50)
            result = backend.search(request)
            hits = [hit.record.id for hit in result.hits]
            answers.append((result.total, hits, result.facets))
        answers.append(backend.facet_values("author", "ad", limit=10))
        answers.append(backend.author("Shivaram Venkataraman"))
        return answers


def _answers_computed_from_the_index(directory: IndexDirectory) -> list[tuple]:
    _arrays_path(directory).unlink()
    return _answers(directory)


# -- written by builds and updates -----------------------------------------------------------
def test_a_build_saves_arrays_equal_to_the_computed_ones(directory):
    assert _arrays_path(directory).is_file()
    _assert_same_table(*_saved_and_computed(directory))


def test_an_update_saves_arrays_of_its_new_state_without_the_replaced_documents(updated):
    saved, computed = _saved_and_computed(updated)

    _assert_same_table(saved, computed)
    assert not saved.live.all()  # the 20 replaced documents are deleted, not yet merged away
    assert int(saved.live.sum()) == len(FIXTURE_RECORDS) + 65
    hopper = saved.columns["author"].ordinal("Grace Hopper")
    assert saved.columns["author"].totals[hopper] == 20


def test_an_update_that_only_deletes_saves_arrays_without_the_deleted_documents(directory):
    with directory.update() as index:
        writer = index.writer()
        writer.delete_by_term("id", "2400.00003")
        writer.delete_by_term("id", FIXTURE_RECORDS[0].id)
        writer.commit()

    saved, computed = _saved_and_computed(directory)

    _assert_same_table(saved, computed)
    assert int(saved.live.sum()) == len(FIXTURE_RECORDS) + 60 - 2


def test_searches_answer_the_same_with_saved_and_computed_arrays(updated):
    assert _answers(updated) == _answers_computed_from_the_index(updated)


def test_no_temporary_file_is_left_and_a_killed_writers_one_is_removed(updated):
    generation = updated.live_path()
    assert not list(generation.glob("*.tmp"))
    leftover = generation / f".{FACET_ARRAYS}.1234.5678.tmp"
    leftover.write_bytes(b"half-written")

    update_index_from_records(_records(1, start=200), updated.root)

    assert not leftover.exists()
    _assert_same_table(*_saved_and_computed(updated))


# -- loaded only when they describe the reader's state -----------------------------------------
def test_arrays_of_an_earlier_state_are_not_loaded(directory):
    earlier = _arrays_path(directory).read_bytes()
    update_index_from_records(
        [replace(r, authors=("Grace Hopper",)) for r in _records(20, start=10)], directory.root
    )
    correct = _answers(directory)
    _arrays_path(directory).write_bytes(earlier)

    with directory.open().reader() as reader:
        assert load_facet_table(_arrays_path(directory), reader) is None
    assert _answers(directory) == correct


def test_a_commit_made_without_saving_arrays_makes_them_stale(directory):
    index = directory.open()
    writer = index.writer()
    writer.delete_by_term("id", "2400.00004")
    writer.commit()  # straight through Whoosh, not IndexDirectory.update: no arrays saved

    with index.reader() as reader:
        assert load_facet_table(_arrays_path(directory), reader) is None
        table = facet_table_for(_arrays_path(directory), reader)
        assert int(table.live.sum()) == len(FIXTURE_RECORDS) + 60 - 1


def test_a_missing_file_means_the_arrays_are_computed(directory):
    expected = _answers(directory)
    _arrays_path(directory).unlink()

    with directory.open().reader() as reader:
        assert load_facet_table(_arrays_path(directory), reader) is None
    assert _answers(directory) == expected


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _one_byte_flipped(data: bytes) -> bytes:
    # A byte inside the largest array (each member's CRC check catches it).
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        largest = max(archive.infolist(), key=lambda info: info.file_size)
    at = largest.header_offset
    name_length = int.from_bytes(data[at + 26 : at + 28], "little")
    extra_length = int.from_bytes(data[at + 28 : at + 30], "little")
    middle = at + 30 + name_length + extra_length + largest.file_size // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def _entry_out_of_range(data: bytes) -> bytes:
    # A well-formed file whose arrays do not fit together: an author entry past the last document.
    with np.load(io.BytesIO(data)) as saved:
        arrays = {name: saved[name] for name in saved.files}
    arrays["author.entry_doc"] = arrays["author.entry_doc"].copy()
    arrays["author.entry_doc"][0] = len(arrays["live"])
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _values_without_offsets(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w") as target:
        for item in source.infolist():
            if item.filename != "author.value_ends.npy":
                target.writestr(item, source.read(item))
    return buffer.getvalue()


@pytest.mark.parametrize(
    "damage",
    [
        _truncated,
        _one_byte_flipped,
        _entry_out_of_range,
        _values_without_offsets,
        lambda data: b"",
        lambda data: b"not an npz file at all",
    ],
    ids=["truncated", "byte-flipped", "entry-out-of-range", "member-missing", "empty", "garbage"],
)
def test_a_damaged_file_is_ignored_and_counts_stay_exact(directory, damage, caplog):
    expected = _answers(directory)
    path = _arrays_path(directory)
    path.write_bytes(damage(path.read_bytes()))

    with directory.open().reader() as reader:
        assert load_facet_table(path, reader) is None
    assert "ignoring" in caplog.text
    assert _answers(directory) == expected


# -- the packed values -----------------------------------------------------------------------
def test_packed_values_behave_as_the_sorted_list_they_stand_for():
    values = sorted(["Ada Lovelace", "C. Balázs", "", "Ève Durand", "x"])
    text = "\x1f".join(values)
    ends = np.cumsum([len(v) + 1 for v in values]) - 1
    packed = PackedValues(text, ends)

    assert len(packed) == len(values)
    assert list(packed) == values
    assert [packed[np.int32(i)] for i in range(len(values))] == values
    assert packed[-1] == values[-1] and packed[1:3] == values[1:3]
    assert bisect.bisect_left(packed, "C. Balázs") == values.index("C. Balázs")
    with pytest.raises(IndexError):
        packed[len(values)]
    with pytest.raises(IndexError):
        packed[-len(values) - 1]
    assert list(PackedValues("", np.zeros(0, dtype=np.int64))) == []


def test_updates_carry_the_arrays_forward_equal_to_computed_ones_through_merges(directory):
    # Many small commits: Whoosh merges small segments on the way (documents renumbered), and
    # replaced, deleted and brand-new values (a new author, a value's last record deleted).
    rng = random.Random(7)
    with WhooshBackend(directory) as backend:
        for step in range(14):
            upserts = [
                replace(r, authors=(f"New Author {step}",), year=1990 + step)
                for r in _records(rng.randint(0, 6), start=rng.randint(0, 80))
            ]
            deletes = [f"2400.{rng.randint(0, 80):05d}" for _ in range(rng.randint(0, 4))]
            if step == 5:
                deletes = [r.id for r in FIXTURE_RECORDS]  # every record of some values
            backend.write(upserts=upserts, deletes=deletes)
            with directory.open().reader() as reader:
                segments = len(list(reader.leaf_readers()))
            _assert_same_table(*_saved_and_computed(directory))
    assert segments < 14, "no merge happened: the test would not cover renumbering"


# -- mapped, not copied ----------------------------------------------------------------------
def _mapped(array: np.ndarray) -> bool:
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def test_saved_arrays_are_mapped_from_the_file_not_copied_into_each_process(directory):
    # Workers that map one file share its pages (issue 20: a worker's private memory).
    with directory.open().reader() as reader:
        table = load_facet_table(_arrays_path(directory), reader)
    assert table is not None
    arrays = [table.live, table.year, table.title_rank]
    for column in table.columns.values():
        arrays += [column.entry_doc, column.entry_value, column.totals]
    assert all(_mapped(array) and not array.flags.writeable for array in arrays)
    assert all(array.ctypes.data % 64 == 0 for array in arrays)


def test_a_file_np_savez_wrote_loads_copied_with_the_same_answers(directory):
    # Files written before the arrays were aligned cannot be mapped: they are read instead.
    expected = _answers(directory)
    path = _arrays_path(directory)
    with np.load(path) as saved:
        arrays = {name: saved[name] for name in saved.files}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    with directory.open().reader() as reader:
        table = load_facet_table(path, reader)
    assert table is not None and not _mapped(table.live)
    assert _answers(directory) == expected


def test_subject_columns_saved_under_another_taxonomy_are_derived_again(directory):
    # A saved column stands only for the mapping it was derived by: here the file says that
    # every category maps to a subject this taxonomy has never heard of.
    expected = _answers(directory)
    path = _arrays_path(directory)
    with np.load(path) as saved:
        arrays = {name: saved[name] for name in saved.files}
    for facet in DERIVED_SAVED:
        mapping = json.loads(array_text(arrays[f"derived.{facet}.mapping"]))
        arrays[f"derived.{facet}.mapping"] = text_array(json.dumps([["xx.YY"]] * len(mapping)))
    path.write_bytes(npz_bytes(arrays))
    with directory.open().reader() as reader:
        table = load_facet_table(path, reader)
    assert table is not None and not table._derived
    assert _answers(directory) == expected
