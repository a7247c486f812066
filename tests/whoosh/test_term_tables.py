"""term_tables.field_terms reads exactly the terms Whoosh's `IndexReader.lexicon` gives."""

from __future__ import annotations

from dataclasses import replace

import pytest
from whoosh.reading import TermNotFound

from searchsvc.backends.whoosh.accel import term_tables
from searchsvc.backends.whoosh.build import writer as writing
from searchsvc.backends.whoosh.documents import to_document
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.indexing.indexer import build_index_from_records
from tests.support import FIXTURE_RECORDS, build_index, multi_block_records
from tests.whoosh.support import build_with_whoosh_writer

# Term tables written by the fast writer (every build) and by Whoosh's (every update's segment).
BUILDERS = {
    "fast writer": lambda root: IndexDirectory(build_index(root)),
    "whoosh writer": build_with_whoosh_writer,
}
by_each_writer = pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())


def _terms(read, reader, field: str) -> list[str]:
    try:
        return list(read(reader, field))
    except TermNotFound:  # a stored-only field, which Lexicon reads as no terms
        return []


def _whoosh_terms(reader, field: str) -> list[str]:
    return [term.decode("utf-8", "replace") for term in reader.lexicon(field)]


def _assert_field_reads_as_whoosh(reader, field: str) -> None:
    expected = _terms(_whoosh_terms, reader, field)
    assert _terms(term_tables.field_terms, reader, field) == expected, field


def _assert_every_field_reads_as_whoosh(directory) -> None:
    with directory.open().searcher() as searcher:
        reader = searcher.reader()
        for field in reader.schema.names():
            _assert_field_reads_as_whoosh(reader, field)


@by_each_writer
def test_one_segment_reads_as_whoosh(tmp_path, build):
    directory = build(tmp_path / "index")
    assert len(directory.open()._segments()) == 1
    _assert_every_field_reads_as_whoosh(directory)


def test_many_segments_with_shared_terms_and_deletions_read_as_whoosh(tmp_path, monkeypatch):
    # Segments of 40 records (as test_posting_arrays does): most terms are in several of them.
    monkeypatch.setattr(writing, "MAX_SEGMENT_RECORDS", 40)
    build_index_from_records(
        [*FIXTURE_RECORDS, *multi_block_records(300)], tmp_path / "index", procs=2
    )
    directory = IndexDirectory(tmp_path / "index")
    with directory.update() as index:
        writer = index.writer()
        for record in multi_block_records(30):
            writer.update_document(**to_document(replace(record, title="Revised Zürich caches")))
        writer.commit(merge=False)
    assert len(directory.open()._segments()) > 2
    _assert_every_field_reads_as_whoosh(directory)


@by_each_writer
def test_a_term_table_it_cannot_read_falls_back_to_whooshs_lexicon(tmp_path, monkeypatch, build):
    directory = build(tmp_path / "index")

    def unreadable(segment, field):
        raise AttributeError("no term table here")

    monkeypatch.setattr(term_tables, "_segment_terms", unreadable)
    _assert_every_field_reads_as_whoosh(directory)


@by_each_writer
@pytest.mark.parametrize("field", ["year", "title"])
def test_binary_and_text_terms_both_decode_as_whoosh(tmp_path, field, build):
    # Numeric fields hold binary terms (NUL bytes among them): those are decoded one by one.
    directory = build(tmp_path / "index")
    with directory.open().searcher() as searcher:
        reader = searcher.reader()
        _assert_field_reads_as_whoosh(reader, field)
