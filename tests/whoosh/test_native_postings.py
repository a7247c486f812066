"""The C posting encoder (`_w3postings`) writes what the Python encoder writes, byte for byte.

A build uses the C encoder for every field and the term index's hash tables when the extension
was compiled, else the Python code in segment_postings.py. Random fields go through both, and a
whole build without the extension must give the same files as one with it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import index as whoosh_index
from whoosh.codec import default_codec
from whoosh.filedb.filestore import RamStorage
from whoosh.util.numeric import length_to_byte

from searchsvc.backends.whoosh.build import segment_postings
from searchsvc.backends.whoosh.build.segment_postings import (
    VALUES_JOINED,
    VALUES_NONE,
    DocValues,
    FieldItems,
    FieldTokens,
    SegmentPostingsWriter,
)
from searchsvc.backends.whoosh.build.writer import add_records
from searchsvc.backends.whoosh.schema import build_schema
from tests.support import FIXTURE_RECORDS, examples, multi_block_records

needs_extension = pytest.mark.skipif(
    segment_postings._w3postings is None, reason="the C extension is not built"
)


def test_the_c_extension_is_built() -> None:
    # Installing without a C compiler leaves it out silently, and index
    # builds run at about half the speed: CI must notice.
    assert segment_postings._w3postings is not None, "pip install -e . did not compile it"


@st.composite
def _fields(draw):
    """(terms, tokens, doc_count, length bytes, spelling words and their tokens)."""
    doc_count = draw(st.integers(1, 12))
    term_count = draw(st.integers(1, 30))
    ranks, docs, positions = [], [], []
    lengths = bytearray(doc_count)
    for doc in range(doc_count):
        # Long texts now and then, for terms with several blocks and long positions lists.
        size = draw(st.integers(0, 8) | st.sampled_from([0, 300, 1200]))
        if not size:
            continue
        text = draw(
            st.lists(st.integers(0, term_count - 1), min_size=size, max_size=size)
            if size <= 8
            else st.just([(doc * 7 + i * i) % term_count for i in range(size)])
        )
        first = draw(st.integers(0, 70_000))
        ranks += text
        docs += [doc] * size
        positions += range(first, first + size)
        lengths[doc] = length_to_byte(size)
    used = sorted(set(ranks))
    rank_of = {rank: number for number, rank in enumerate(used)}
    terms = [f"t{rank:03d}".encode() for rank in used]
    tokens = FieldTokens(
        np.array([rank_of[r] for r in ranks], dtype=np.int32),
        np.array(docs, dtype=np.int32),
        np.array(positions, dtype=np.int32),
    )
    return terms, tokens, doc_count, bytes(lengths)


def _write(native: bool, write) -> dict[str, bytes]:
    storage = RamStorage()
    segment = default_codec().new_segment(storage, "test")
    writer = SegmentPostingsWriter(storage, segment, native=native)
    result = write(writer)
    writer.close()
    files = {name.split(".")[-1]: storage.files[name] for name in storage.list()}
    return {"files": files, "result": result}


def _arrays(result) -> list:
    return [None if part is None else np.asarray(part).tolist() for part in result]


@needs_extension
@settings(max_examples=examples(150), deadline=None)
@given(field=_fields())
def test_positions_fields_are_encoded_as_python_does(field) -> None:
    terms, tokens, doc_count, lengths = field

    def write(writer):
        written = writer.add_positions_field("content", terms, tokens, doc_count, lengths, True)
        values = written.last_values
        return [*_arrays(written[:3]), values.joined, values.ends.tolist()]

    native, python = _write(True, write), _write(False, write)
    assert native["files"] == python["files"]
    assert native["result"] == python["result"]


@needs_extension
@settings(max_examples=examples(150), deadline=None)
@given(field=_fields(), data=st.data())
def test_spelling_fields_are_encoded_as_python_does(field, data) -> None:
    words, tokens, doc_count, _ = field
    values = DocValues.of(
        [data.draw(st.binary(min_size=1, max_size=300)) for _ in range(doc_count)]
    )

    def write(writer):
        writer.add_spelling_words("spell_content", words, tokens, values)

    native, python = _write(True, write), _write(False, write)
    assert native["files"] == python["files"]


@st.composite
def _items_fields(draw):
    """(terms, postings: one a term and document, doc_count, length bytes, packing)."""
    doc_count = draw(st.integers(1, 300))
    term_count = draw(st.integers(1, 20))
    packing = draw(st.sampled_from([VALUES_NONE, VALUES_JOINED]))
    weight = st.sampled_from([1.0, 2.0, 0.5]) | st.floats(0.01, 1000, allow_nan=False)
    postings = []
    for doc in range(doc_count):
        for rank in sorted(draw(st.sets(st.integers(0, term_count - 1), max_size=4))):
            value = draw(st.binary(min_size=4, max_size=4)) if packing == VALUES_JOINED else b""
            postings.append((rank, doc, draw(weight), value))
    used = sorted({rank for rank, *_ in postings})
    rank_of = {rank: number for number, rank in enumerate(used)}
    items = FieldItems(
        np.array([rank_of[p[0]] for p in postings], dtype=np.int32),
        np.array([p[1] for p in postings], dtype=np.int32),
        np.array([p[2] for p in postings], dtype=np.float64),
        [p[3] for p in postings],
    )
    lengths = bytes(draw(st.integers(0, 255)) for _ in range(doc_count))
    return [f"k{rank:02d}".encode() for rank in used], items, doc_count, lengths, packing


@needs_extension
@settings(max_examples=examples(150), deadline=None)
@given(field=_items_fields(), scored=st.booleans())
def test_other_fields_are_encoded_as_python_does(field, scored) -> None:
    terms, items, doc_count, lengths, packing = field

    def write(writer):
        written = writer.add_items_field(
            "category", terms, items, packing, doc_count, lengths if scored else None
        )
        return _arrays(written[:3])

    native, python = _write(True, write), _write(False, write)
    assert native["files"] == python["files"]
    assert native["result"] == python["result"]


@needs_extension
@pytest.mark.parametrize(
    ("ranks", "docs", "positions", "message"),
    [
        ([0, 2], [0, 0], [0, 1], "rank is out of range"),
        ([0, -1], [0, 0], [0, 1], "rank is out of range"),
        ([0, 1], [1, 0], [0, 1], "document order"),
        ([0, 1], [0, 5], [0, 1], "document order"),
        ([0, 0, 1], [0, 0, 0], [3, 3, 4], "must ascend"),
        ([0, 1], [0, 0], [0, -1], "negative"),
        ([1, 1], [0, 0], [0, 1], "no tokens"),
    ],
)
def test_the_c_encoder_refuses_inconsistent_tokens(ranks, docs, positions, message) -> None:
    tokens = FieldTokens(*(np.array(part, dtype=np.int32) for part in (ranks, docs, positions)))
    storage = RamStorage()
    writer = SegmentPostingsWriter(storage, default_codec().new_segment(storage, "test"))
    with pytest.raises(ValueError, match=message):
        writer.add_positions_field("content", [b"a", b"b"], tokens, 2, None, True)


@needs_extension
@pytest.mark.parametrize("records", [FIXTURE_RECORDS, multi_block_records(300)])
def test_a_build_without_the_extension_writes_the_same_files(
    tmp_path: Path, monkeypatch, records
) -> None:
    built = {}
    for native in (True, False):
        if not native:
            monkeypatch.setattr(segment_postings, "_w3postings", None)
        path = tmp_path / str(native)
        path.mkdir()
        index = whoosh_index.create_in(str(path), build_schema())
        add_records(index, list(records))
        with index.reader() as reader:
            segment = reader.segment()
        built[native] = _segment_contents(index, segment)
    assert built[True].keys() == built[False].keys()
    assert {name.rsplit(".", 1)[-1] for name in built[True]} >= {"pst", "trm", "postarrays"}
    assert built[True] == built[False]


def _segment_contents(index, segment) -> dict[str, bytes]:
    """The segment's files (compound members) and its posting-arrays file, by file type."""
    segment_id = segment.segment_id()
    storage = segment.open_compound_file(index.storage)
    contents = {
        name.replace(segment_id, "SEGMENT"): storage.open_file(name).read()
        for name in storage.list()
    }
    storage.close()
    arrays = Path(index.storage.folder) / f"{segment_id}.postarrays"
    # The arrays file's header names its segment, whose id is random.
    contents["postarrays"] = arrays.read_bytes().replace(segment_id.encode(), b"SEGMENT")
    return contents


@needs_extension
def test_the_c_encoder_refuses_two_postings_of_a_term_in_a_document() -> None:
    items = FieldItems(
        np.array([0, 0], dtype=np.int32),
        np.array([3, 3], dtype=np.int32),
        np.ones(2),
        [b"", b""],
    )
    storage = RamStorage()
    writer = SegmentPostingsWriter(storage, default_codec().new_segment(storage, "test"))
    with pytest.raises(ValueError, match="two postings"):
        writer.add_items_field("category", [b"a"], items, VALUES_NONE, 4, None)
