"""The write side of the contract: upsert and delete by id, one write with both, creating an
index by writing, versions and refresh, atomic rebuilds, and failed writes that change nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from searchsvc.backends import WriteResult, open_backend
from searchsvc.domain.errors import IndexUnavailable, RecordNotFound
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from tests.contract.reference import counts, hit_ids
from tests.support import FIXTURE_RECORDS, multi_block_records

FIRST, SECOND, THIRD, FOURTH, HOSTILE = FIXTURE_RECORDS


def ids_of(backend) -> list[str]:
    return sorted(record.id for record in backend.records())


def total(backend, q="", **params) -> int:
    return backend.search(SearchRequest.from_params(q=q, **params)).total


def facet_counts(backend, facet: str) -> dict[str, int]:
    return counts(backend.search(SearchRequest(facet_size=100)), facet)


class Unreadable(Record):
    """A Record whose abstract cannot be read: converting it for the engine raises."""

    __slots__ = ()

    def __getattribute__(self, name):
        if name == "abstract":
            raise RuntimeError("this record cannot be read")
        return super().__getattribute__(name)


class Recorder:
    """Progress that remembers what it was told."""

    def __init__(self) -> None:
        self.advanced = 0
        self.stages: list[str] = []

    def advance(self, count: int) -> None:
        self.advanced += count

    def stage(self, name: str) -> None:
        self.stages.append(name)


# -- upsert ------------------------------------------------------------------------------------
def test_upsert_adds_new_ids_and_replaces_existing_ones(empty_backend):
    empty_backend.rebuild([FIRST, SECOND, THIRD])
    renamed = replace(FIRST, title="Zebra Scheduling", authors=("Grace Hopper",))

    result = empty_backend.upsert([renamed, FOURTH])

    assert (result.added, result.replaced, result.deleted) == (1, 1, 0)
    assert empty_backend.get(FIRST.id) == renamed
    assert empty_backend.get(FOURTH.id) == FOURTH
    assert ids_of(empty_backend) == sorted([FIRST.id, SECOND.id, THIRD.id, FOURTH.id])


def test_searches_and_facet_counts_follow_an_upsert(empty_backend):
    empty_backend.rebuild([FIRST, SECOND, THIRD])
    renamed = replace(FIRST, title="Zebra Scheduling", authors=("Grace Hopper",), year=2024)

    empty_backend.upsert([renamed])

    assert total(empty_backend) == 3  # the replaced record is not counted twice
    assert total(empty_backend, "zebra") == 1
    assert total(empty_backend, "fair") == 0  # the old title is gone
    assert total(empty_backend, "learning") == 2  # the abstract still says it
    assert facet_counts(empty_backend, "author") == {
        "Aditya Akella": 2,
        "Grace Hopper": 1,
        "Shivaram Venkataraman": 1,
    }
    assert facet_counts(empty_backend, "year") == {"2024": 1, "2022": 1, "2021": 1}
    assert hit_ids(empty_backend.search(SearchRequest())) == [FIRST.id, SECOND.id, THIRD.id]
    assert empty_backend.author("Grace Hopper").total == 1
    with pytest.raises(RecordNotFound):
        empty_backend.author("Ada Lovelace")
    assert empty_backend.suggest("zeb").titles == ("Zebra Scheduling",)
    assert empty_backend.facet_values("author", "lovelace") == ()


def test_an_upsert_of_equal_ids_keeps_the_last(empty_backend):
    empty_backend.rebuild([FIRST])
    last = replace(SECOND, title="Last One Wins")

    result = empty_backend.upsert([SECOND, last])

    assert (result.added, result.replaced) == (1, 0)
    assert empty_backend.get(SECOND.id) == last
    assert ids_of(empty_backend) == sorted([FIRST.id, SECOND.id])


def test_repeated_upserts_never_duplicate_an_id(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)
    for round_number in range(3):
        empty_backend.upsert(
            [replace(record, title=f"Round {round_number}") for record in FIXTURE_RECORDS[:3]]
        )

    exported = [record.id for record in empty_backend.records()]
    assert sorted(exported) == sorted(record.id for record in FIXTURE_RECORDS)
    assert total(empty_backend) == 5
    assert total(empty_backend, "round") == 3
    assert facet_counts(empty_backend, "category") == {
        "cs.DC": 2,
        "cs.LG": 2,
        "cs.NI": 1,
        "hep-ph": 1,
        "cs.CR": 1,
    }


# -- delete ------------------------------------------------------------------------------------
def test_delete_removes_by_id_and_ignores_unknown_ids(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)

    result = empty_backend.delete([SECOND.id, "nope", SECOND.id])

    assert (result.added, result.replaced, result.deleted) == (0, 0, 1)
    with pytest.raises(RecordNotFound):
        empty_backend.get(SECOND.id)
    with pytest.raises(RecordNotFound):
        empty_backend.similar(SECOND.id)
    assert SECOND.id not in ids_of(empty_backend)
    assert total(empty_backend) == 4


def test_searches_and_facet_counts_drop_deleted_records(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)

    empty_backend.delete([FIRST.id, SECOND.id])

    assert total(empty_backend, "learning") == 0
    assert total(empty_backend, category=("cs.LG",)) == 0
    assert facet_counts(empty_backend, "category") == {
        "cs.DC": 1,
        "cs.NI": 1,
        "hep-ph": 1,
        "cs.CR": 1,
    }
    assert "Shivaram Venkataraman" not in facet_counts(empty_backend, "author")
    assert facet_counts(empty_backend, "author")["Aditya Akella"] == 1
    with pytest.raises(RecordNotFound):
        empty_backend.author("Shivaram Venkataraman")


def test_deleting_only_unknown_ids_deletes_nothing(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)

    result = empty_backend.delete(["nope", "2301.0000"])

    assert result.deleted == 0
    assert ids_of(empty_backend) == sorted(record.id for record in FIXTURE_RECORDS)


def test_deleting_every_record_leaves_an_empty_index(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS[:2])

    result = empty_backend.delete([FIRST.id, SECOND.id])

    assert result.deleted == 2
    found = empty_backend.search(SearchRequest())
    assert found.total == 0 and found.hits == ()
    assert all(values == () for values in found.facets.values())
    assert list(empty_backend.records()) == []
    assert empty_backend.stats().documents == 0


# Ids the id rule allows that hold what engines use as separators, quotes and escapes (issue
# 33: one id holding ",", "|", ";" and U+E000-U+E002 stopped the Solr writer for good).
ODD_IDS = (
    "every,sep|of;them\ue000\ue001\ue002",
    "\ue000\ue001\ue002",
    "comma,id",
    "pipe|id",
    "semi;colon",
    'double "quoted"',
    "single 'quoted'",
    "back\\slash\\",
    "inner  spaces and * ? wildcards",
    "lucene+-&&||!(){}[]^~:/syntax",
    "{!terms f=id}x",
    "OR",
    "中文,∑|é;",
)


def test_ids_of_any_allowed_characters_are_written_replaced_and_deleted(empty_backend):
    records = [Record(id=i, title=f"Odd {n}", year=2000 + n) for n, i in enumerate(ODD_IDS)]
    added = empty_backend.write(upserts=[FIRST, *records])
    assert (added.added, added.replaced, added.deleted) == (1 + len(records), 0, 0)
    for record in records:
        assert empty_backend.get(record.id) == record
    assert ids_of(empty_backend) == sorted([FIRST.id, *ODD_IDS])

    renamed = [replace(record, title=f"Renamed {record.title}") for record in records]
    replaced = empty_backend.write(upserts=renamed)
    assert (replaced.added, replaced.replaced) == (0, len(records))
    for record in renamed:
        assert empty_backend.get(record.id) == record
    assert total(empty_backend) == 1 + len(records)
    assert total(empty_backend, "renamed") == len(records)

    gone = empty_backend.delete([*ODD_IDS[:5], "comma", "id"])
    assert gone.deleted == 5
    for record_id in ODD_IDS[:5]:
        with pytest.raises(RecordNotFound):
            empty_backend.get(record_id)
    assert ids_of(empty_backend) == sorted([FIRST.id, *ODD_IDS[5:]])
    assert empty_backend.delete(list(ODD_IDS)).deleted == len(ODD_IDS) - 5
    assert ids_of(empty_backend) == [FIRST.id]


# -- one write with both -----------------------------------------------------------------------
def test_a_write_applies_upserts_and_deletes_together(empty_backend):
    empty_backend.rebuild([FIRST, SECOND, THIRD])
    before = empty_backend.version()
    renamed = replace(THIRD, title="Zebra Transport")

    result = empty_backend.write(upserts=[renamed, FOURTH], deletes=[FIRST.id, "nope"])

    assert (result.added, result.replaced, result.deleted) == (1, 1, 1)
    assert result.version == empty_backend.version() != before
    assert ids_of(empty_backend) == sorted([SECOND.id, THIRD.id, FOURTH.id])
    assert empty_backend.get(THIRD.id) == renamed
    assert total(empty_backend) == 3
    assert total(empty_backend, "zebra") == 1
    assert facet_counts(empty_backend, "category") == {
        "cs.LG": 1,
        "cs.NI": 1,
        "cs.DC": 1,
        "hep-ph": 1,
    }


def test_an_id_both_deleted_and_upserted_in_one_write_ends_up_upserted(empty_backend):
    empty_backend.rebuild([FIRST, SECOND])
    renamed = replace(FIRST, title="Zebra Scheduling")

    result = empty_backend.write(upserts=[renamed], deletes=[FIRST.id])

    assert result.added + result.replaced == 1 and result.deleted == 0
    assert empty_backend.get(FIRST.id) == renamed
    assert ids_of(empty_backend) == sorted([FIRST.id, SECOND.id])


def test_a_write_tells_its_progress_every_record(empty_backend):
    progress = Recorder()
    empty_backend.rebuild(multi_block_records(250), progress=progress)
    assert progress.advanced == 250

    progress = Recorder()
    empty_backend.write(upserts=FIXTURE_RECORDS, deletes=["2400.00001"], progress=progress)
    assert progress.advanced == 5
    assert total(empty_backend) == 254


# -- creating, versions, refresh ---------------------------------------------------------------
def test_check_writable_passes_on_a_fresh_location_and_on_a_built_index(empty_backend):
    empty_backend.check_writable()
    empty_backend.rebuild(FIXTURE_RECORDS)
    empty_backend.check_writable()


def test_a_write_to_an_empty_location_creates_the_index(empty_backend):
    with pytest.raises(IndexUnavailable):
        empty_backend.search(SearchRequest())

    result = empty_backend.write(upserts=FIXTURE_RECORDS[:2], deletes=["nope"])

    assert (result.added, result.replaced, result.deleted) == (2, 0, 0)
    assert result.version == empty_backend.version()
    assert total(empty_backend) == 2
    assert ids_of(empty_backend) == sorted([FIRST.id, SECOND.id])


def test_an_upsert_to_an_empty_location_creates_the_index(empty_backend):
    result = empty_backend.upsert(FIXTURE_RECORDS)
    assert result.added == 5
    assert total(empty_backend) == 5


def test_deleting_from_an_empty_location_deletes_nothing(empty_backend):
    assert empty_backend.delete(["nope"]).deleted == 0


def test_the_version_changes_with_every_write(empty_backend):
    versions = [empty_backend.rebuild(FIXTURE_RECORDS[:2]).version]
    versions.append(empty_backend.upsert([THIRD]).version)
    versions.append(empty_backend.delete([FIRST.id]).version)
    versions.append(empty_backend.write(upserts=[FIRST], deletes=[SECOND.id]).version)
    versions.append(empty_backend.rebuild(FIXTURE_RECORDS).version)
    assert all(versions) and len(set(versions)) == len(versions)
    assert versions[-1] == empty_backend.version() == empty_backend.stats().version


def test_the_version_stays_while_nothing_is_written(fixture_backend):
    assert fixture_backend.version() == fixture_backend.version()
    fixture_backend.refresh()
    assert fixture_backend.version() == fixture_backend.stats().version


def test_refresh_makes_another_backends_writes_visible_at_once(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS[:2])
    with open_backend(empty_backend.location) as reader:
        assert total(reader) == 2  # the reader now holds the index as it was

        written = empty_backend.upsert([THIRD])
        reader.refresh()
        assert total(reader) == 3
        assert reader.version() == written.version

        written = empty_backend.delete([FIRST.id])
        reader.refresh()
        assert total(reader) == 2 and reader.version() == written.version
        with pytest.raises(RecordNotFound):
            reader.get(FIRST.id)

        written = empty_backend.rebuild(FIXTURE_RECORDS[3:])
        reader.refresh()
        assert sorted(r.id for r in reader.records()) == sorted([FOURTH.id, HOSTILE.id])
        assert reader.version() == written.version


def test_write_results_name_the_writer(empty_backend):
    result = empty_backend.rebuild(FIXTURE_RECORDS)
    assert isinstance(result, WriteResult) and result.writer
    assert result.added == 5 and result.replaced == result.deleted == 0


# -- rebuild -----------------------------------------------------------------------------------
def test_rebuild_replaces_everything(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS[:3])
    newcomer = Record(id="new-1", title="Zebra Networks", authors=("Grace Hopper",), year=2024)

    result = empty_backend.rebuild([FOURTH, newcomer])

    assert result.added == 2
    assert ids_of(empty_backend) == sorted([FOURTH.id, "new-1"])
    for gone in FIXTURE_RECORDS[:3]:
        with pytest.raises(RecordNotFound):
            empty_backend.get(gone.id)
    assert total(empty_backend) == 2
    assert total(empty_backend, "learning") == 0
    assert facet_counts(empty_backend, "author") == {
        "C. Balázs": 1,
        "E. L. Berger": 1,
        "Grace Hopper": 1,
    }
    assert empty_backend.stats().documents == 2


def test_rebuild_to_no_records_leaves_an_empty_index(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)
    empty_backend.rebuild([])
    assert total(empty_backend) == 0
    assert list(empty_backend.records()) == []


def _answers(backend):
    """What a backend answers, to compare before and after a failed write."""
    result = backend.search(SearchRequest(facet_size=100, per_page=100))
    return (
        backend.version(),
        sorted(backend.records(), key=lambda r: r.id),
        hit_ids(result),
        result.facets,
        backend.search(SearchRequest(q="learning")).total,
    )


BROKEN_INPUTS = {
    "a record that cannot be read, after many good ones": lambda: [
        *multi_block_records(150),
        Unreadable(id="bad-1", title="Bad"),
    ],
    "a record that cannot be read, first": lambda: [Unreadable(id="bad-1", title="Bad"), FIRST],
    "something that is not a record": lambda: [*FIXTURE_RECORDS[:2], "not a record"],
    "None among the records": lambda: [FIRST, None],
}


@pytest.mark.parametrize("records", BROKEN_INPUTS.values(), ids=BROKEN_INPUTS.keys())
def test_a_rebuild_that_fails_part_way_leaves_the_previous_index(empty_backend, records):
    empty_backend.rebuild(FIXTURE_RECORDS)
    before = _answers(empty_backend)

    with pytest.raises(Exception):  # noqa: B017 - whatever the engine raises for bad input
        empty_backend.rebuild(records())

    empty_backend.refresh()
    assert _answers(empty_backend) == before
    with open_backend(empty_backend.location) as fresh:
        assert _answers(fresh) == before


@pytest.mark.parametrize("records", BROKEN_INPUTS.values(), ids=BROKEN_INPUTS.keys())
def test_an_update_that_fails_part_way_leaves_the_index_as_it_was(empty_backend, records):
    empty_backend.rebuild(FIXTURE_RECORDS)
    before = _answers(empty_backend)

    with pytest.raises(Exception):  # noqa: B017 - whatever the engine raises for bad input
        empty_backend.write(upserts=records(), deletes=[SECOND.id])

    empty_backend.refresh()
    assert _answers(empty_backend) == before
    with open_backend(empty_backend.location) as fresh:
        assert _answers(fresh) == before


def test_a_failed_first_build_leaves_no_index(empty_backend):
    with pytest.raises(Exception):  # noqa: B017 - whatever the engine raises for bad input
        empty_backend.rebuild([FIRST, Unreadable(id="bad-1", title="Bad")])
    with pytest.raises(IndexUnavailable):
        empty_backend.search(SearchRequest())
    empty_backend.check_writable()
    empty_backend.rebuild(FIXTURE_RECORDS)
    assert total(empty_backend) == 5
