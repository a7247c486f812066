"""The build's record spill: the same records, in the same order, as deduplicating in memory."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.contract import unique_by_id
from searchsvc.domain.records import Deduplicator, Record, title_record_id
from searchsvc.indexing.record_spill import BLOCK_RECORDS, RecordSpill

TITLES = ("Graph kernels", "graph  KERNELS", "Sparse attention", "Caching at scale")


@st.composite
def sightings(draw) -> Record:
    """Records whose identities collide often: arXiv versions, explicit ids, title-derived ids."""
    kind = draw(st.sampled_from(["arxiv", "explicit", "titled"]))
    title = draw(st.sampled_from(TITLES))
    year = draw(st.sampled_from([None, 2020, 2021]))
    authors = tuple(draw(st.lists(st.sampled_from("ABCD"), max_size=3, unique=True)))
    if kind == "arxiv":
        number = draw(st.integers(1, 4))
        version = draw(st.sampled_from(["", "v1", "v2"]))
        record_id = f"2101.0000{number}{version}"
    elif kind == "explicit":
        record_id = f"doi-{draw(st.integers(1, 4))}"
    else:
        record_id = title_record_id("seed", title, year)
    abstract = draw(st.sampled_from(["", "an abstract"]))
    return Record(
        id=record_id, title=title, abstract=abstract, authors=authors, year=year, source="seed"
    )


def in_memory(records: list[Record], written: list[Record]) -> tuple[list[Record], int]:
    """What the build did before the spill: Deduplicator, then the written records by id."""
    dedupe = Deduplicator()
    for record in records:
        dedupe.add(record)
    return unique_by_id([*dedupe.records(), *written]), dedupe.merged


@settings(max_examples=300, deadline=None)
@given(st.lists(sightings(), max_size=40), st.lists(sightings(), max_size=5))
def test_a_spill_deduplicates_exactly_as_memory_does(records, written):
    expected, merged = in_memory(records, written)
    with RecordSpill() as spill:
        spill.add_all(records)
        spill.add_all(written, folds=False)
        spill.seal()
        assert list(spill) == expected
        assert spill.merged == merged
        assert spill.read == len(records) + len(written)
        assert len(spill) == len(expected)


def test_slices_read_lazily_across_blocks():
    records = [
        Record(id=f"doi-{n}", title=f"Paper {n}", authors=(f"Author {n % 7}",), year=2020)
        for n in range(3 * BLOCK_RECORDS + 17)
    ]
    with RecordSpill() as spill:
        spill.add_all(records)
        spill.seal()
        assert len(spill) == len(records)
        share = spill[BLOCK_RECORDS - 3 : 2 * BLOCK_RECORDS + 5]
        assert len(share) == BLOCK_RECORDS + 8
        assert list(share) == records[BLOCK_RECORDS - 3 : 2 * BLOCK_RECORDS + 5]
        assert list(share[2:4]) == records[BLOCK_RECORDS - 1 : BLOCK_RECORDS + 1]
        assert spill[-1] == records[-1]
        assert share[0] == records[BLOCK_RECORDS - 3]
        with pytest.raises(IndexError):
            spill[len(records)]
        with pytest.raises(IndexError):
            share[-len(share) - 1]


def test_a_spill_leaves_no_file_behind(tmp_path):
    with RecordSpill(tmp_path) as spill:
        spill.add(Record(id="doi-1", title="One"))
        assert os.listdir(tmp_path) == []  # unlinked at once: a crash leaves nothing
        spill.seal()
        assert list(spill) == [Record(id="doi-1", title="One")]


def test_a_spill_is_read_only_once_sealed_and_written_only_before():
    with RecordSpill() as spill:
        spill.add(Record(id="doi-1", title="One"))
        with pytest.raises(RuntimeError):
            len(spill)
        spill.seal()
        with pytest.raises(RuntimeError):
            spill.add(Record(id="doi-2", title="Two"))
