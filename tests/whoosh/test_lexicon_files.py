"""Lexicons saved with each index state: written by builds and updates, used only for exactly
the state a reader sees, and otherwise (stale, damaged, missing) read from the index."""

from __future__ import annotations

import pytest

from searchsvc.backends.whoosh.accel import lexicon_file as lexicon_files
from searchsvc.backends.whoosh.accel import term_tables
from searchsvc.backends.whoosh.accel.lexicon_file import load_terms, saved_fields
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.state_files import LEXICONS
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from searchsvc.indexing.indexer import build_index_from_records, update_index_from_records
from tests.support import FIXTURE_RECORDS

NEW_WORD = "zeppelinology"


def _record(n: int, title: str = "Scheduling study") -> Record:
    return Record(
        id=f"2400.{n:05d}", title=f"{title} {n}", abstract="Cluster caching.", source="arXiv"
    )


@pytest.fixture
def directory(tmp_path) -> IndexDirectory:
    build_index_from_records([*FIXTURE_RECORDS, _record(1)], tmp_path / "index")
    return IndexDirectory(tmp_path / "index")


def _saved_and_read(directory: IndexDirectory) -> dict[str, tuple[list[str] | None, list[str]]]:
    path = directory.live_path() / LEXICONS
    with directory.open().reader() as reader:
        return {
            field: (load_terms(path, reader, field), term_tables.field_terms(reader, field))
            for field in saved_fields(reader)
        }


def _suggestion(directory: IndexDirectory, q: str) -> str | None:
    with WhooshBackend(directory) as backend:
        return backend.search(SearchRequest(q=q)).suggestion


def test_a_build_saves_the_spelling_and_title_terms(directory):
    saved = _saved_and_read(directory)
    assert set(saved) == {"spell_content", "title"}
    for field, (loaded, read) in saved.items():
        assert loaded == read and read, field


def test_a_new_worker_corrects_and_completes_from_the_saved_terms(directory, monkeypatch):
    # Reading the term tables is what the file spares: make it fail, and the answers still come.
    def unreadable(reader, field):
        raise AssertionError(f"read {field} from the index")

    monkeypatch.setattr(term_tables, "field_terms", unreadable)
    monkeypatch.setattr("searchsvc.backends.whoosh.accel.lexicon.field_terms", unreadable)
    assert _suggestion(directory, "schedulng") == "scheduling"
    with WhooshBackend(directory) as backend:
        assert backend.suggest("sched", 5).titles


def test_an_update_saves_the_new_state_s_terms(directory):
    update_index_from_records([_record(2, title=f"{NEW_WORD.title()} study")], directory.root)
    for field, (loaded, read) in _saved_and_read(directory).items():
        assert loaded == read, field
    assert NEW_WORD in _saved_and_read(directory)["spell_content"][0]
    assert _suggestion(directory, "zeppelinolgy") == NEW_WORD


def test_a_file_of_another_state_is_not_used(directory):
    stale = (directory.live_path() / LEXICONS).read_bytes()
    update_index_from_records([_record(2, title=f"{NEW_WORD.title()} study")], directory.root)
    (directory.live_path() / LEXICONS).write_bytes(stale)
    assert all(loaded is None for loaded, _ in _saved_and_read(directory).values())
    assert _suggestion(directory, "zeppelinolgy") == NEW_WORD  # read from the index instead


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: b"not a zip file at all",
        lambda data: data[:-40] + bytes(40),  # the zip's directory overwritten
        lambda data: data.replace(b"chedul", b"XXXXXX"),  # terms changed: the zip CRC fails
    ],
)
def test_a_damaged_file_is_ignored_with_a_warning(directory, damage, caplog):
    path = directory.live_path() / LEXICONS
    path.write_bytes(damage(path.read_bytes()))
    assert all(loaded is None for loaded, _ in _saved_and_read(directory).values())
    assert "ignoring unreadable lexicons" in caplog.text
    assert _suggestion(directory, "schedulng") == "scheduling"


def test_a_missing_file_means_reading_the_index(directory):
    (directory.live_path() / LEXICONS).unlink()
    assert all(loaded is None for loaded, _ in _saved_and_read(directory).values())
    assert _suggestion(directory, "schedulng") == "scheduling"


def test_a_term_holding_the_separator_leaves_its_field_to_the_index(directory, monkeypatch):
    monkeypatch.setattr(lexicon_files, "field_terms", lambda reader, field: ["a\x00b", "c"])
    with directory.open().reader() as reader:
        path = directory.live_path() / "other.npz"
        path.write_bytes(lexicon_files.lexicons_bytes(reader))
        assert load_terms(path, reader, "title") is None
