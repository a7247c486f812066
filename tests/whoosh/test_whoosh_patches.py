"""The Whoosh patches: the same behaviour as stock Whoosh, without its costs."""

from __future__ import annotations

import io
import pickle
import random

import pytest
from whoosh.filedb.structfile import BufferFile

import searchsvc.backends.whoosh  # noqa: F401  (applies the patches)

DATA = pickle.dumps({"terms": list(range(300)), "name": "Balázs"}) + b"line one\nline two\ntail"


def test_a_buffer_file_reads_in_place_what_a_bytes_io_would_read():
    patched = BufferFile(memoryview(DATA))
    stock = io.BytesIO(DATA)
    rng = random.Random(6)
    for _ in range(500):
        position = rng.randrange(len(DATA) + 5)
        size = rng.choice([-1, 0, 1, 3, 64, 10_000])
        assert patched.seek(position) == stock.seek(position)
        assert patched.read(size) == stock.read(size)
        assert patched.tell() == stock.tell()
    patched.seek(-4, io.SEEK_END)
    assert patched.read() == b"tail"
    patched.seek(len(DATA) - 18)
    patched.seek(5, io.SEEK_CUR)
    assert patched.readline() == b"line two\n"


def test_a_buffer_file_reads_pickles_and_numbers_as_stock_whoosh_does():
    patched = BufferFile(DATA)
    assert patched.read_pickle() == pickle.loads(DATA)
    assert patched.get_int(0) == int.from_bytes(DATA[:4], "big", signed=True)
    assert patched.get(3, 5) == DATA[3:8]


def test_a_closed_buffer_file_cannot_be_read():
    patched = BufferFile(memoryview(DATA))
    patched.close()
    with pytest.raises(ValueError):
        patched.file.read(1)


@pytest.mark.parametrize("writer", ["fast writer", "whoosh writer"])
def test_column_offsets_are_the_running_sum_of_value_lengths(fixture_index, tmp_path, writer):
    from whoosh.codec.whoosh3 import STORED_COLUMN

    from searchsvc.backends.whoosh.store import IndexDirectory
    from searchsvc.domain.texts import title_key
    from tests.support import FIXTURE_RECORDS
    from tests.whoosh.support import build_with_whoosh_writer

    if writer == "fast writer":
        directory = IndexDirectory(fixture_index)
    else:
        directory = build_with_whoosh_writer(tmp_path / "index")
    with directory.open().reader() as reader:
        for leaf, _ in reader.leaf_readers():
            titles = leaf._perdoc.column_reader("title_sort", leaf.schema["title_sort"].column_type)
            stored = leaf._perdoc.column_reader("_stored", STORED_COLUMN)
            for column in (titles, stored._child):
                lengths = list(column._lengths)
                assert list(column._offsets) == [sum(lengths[:i]) for i in range(len(lengths))]
            assert sorted(titles) == sorted(title_key(r.title).encode() for r in FIXTURE_RECORDS)
