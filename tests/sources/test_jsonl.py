"""JSON lines of Records (`searchsvc export` output): round trip and malformed lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchsvc.domain.records import Record
from searchsvc.sources import Skipped, jsonl, read_records

RECORDS = (
    Record(
        id="2301.00001",
        title="Learned Caches — for Inference",
        abstract="Latency drops by 75% at p99.",
        authors=("Aditya Akella", "C. Balázs"),
        year=2023,
        categories=("cs.LG", "cs.DC"),
        source="arXiv",
        url="https://arxiv.org/abs/2301.00001",
        doi="10.1/x",
        journal_ref="J. 1 (2023)",
        comments="5 pages",
    ),
    Record(id="seed-0123456789abcdef", title="No Year", source="DBLP"),
)


def export(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def dump(record: Record) -> str:
    return json.dumps(record.to_dict(), ensure_ascii=False)


def read_jsonl(path: Path) -> tuple[list[Record], list[Skipped]]:
    skipped: list[Skipped] = []
    return list(read_records([path], on_skip=skipped.append)), skipped


def test_exported_records_read_back_equal(tmp_path):
    records, skipped = read_jsonl(export(tmp_path / "export.jsonl", [dump(r) for r in RECORDS]))
    assert skipped == []
    assert tuple(records) == RECORDS


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"id": "x1", "title": "T", "authors": "Ada"}, "'authors' must be a list"),
        ({"id": "x1", "title": "T", "year": "2020"}, "year must be an integer"),
        ({"id": "x1", "title": "T", "year": 99999}, "year must be an integer"),
        ({"id": 7, "title": "T", "authors": []}, "'id' must be a string"),
        ({"id": "x1", "title": "T", "authors": [], "colour": "red"}, "unknown record fields"),
        ({"id": "x1", "title": "", "authors": []}, "title must be a non-empty string"),
        ({"id": "x1", "title": "T", "authors": [1]}, "must hold strings"),
        ({"id": "x\n1", "title": "T"}, "record id 'x\\n1' has U+000A (line feed) at character 2"),
        ({"id": "x\r", "title": "T"}, "has U+000D (carriage return)"),
        ({"id": "x" * 513, "title": "T"}, "record id is 513 characters long: at most 512"),
        ({"id": "x1 ", "title": "T"}, "record id 'x1 ' starts or ends with a space"),
    ],
)
def test_records_of_the_wrong_shape_are_skipped_and_the_rest_read(tmp_path, data, reason):
    path = export(tmp_path / "export.jsonl", [dump(RECORDS[0]), json.dumps(data), dump(RECORDS[1])])
    records, [skip] = read_jsonl(path)
    assert tuple(records) == RECORDS
    assert (skip.path, skip.line) == (str(path), 2)
    assert reason in skip.reason


def test_invalid_json_in_the_middle_is_skipped(tmp_path):
    path = export(tmp_path / "e.jsonl", [dump(RECORDS[0]), "{not json", "", dump(RECORDS[1])])
    records, [skip] = read_jsonl(path)
    assert tuple(records) == RECORDS
    assert skip.line == 2 and skip.reason.startswith("invalid JSON")


def test_crlf_and_bom_are_tolerated(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_bytes(("\ufeff" + "\r\n".join(dump(r) for r in RECORDS) + "\r\n").encode())
    records, skipped = read_jsonl(path)
    assert (tuple(records), skipped) == (RECORDS, [])


def test_deeply_nested_json_is_skipped_not_a_crash(tmp_path):
    path = export(tmp_path / "e.jsonl", [dump(RECORDS[0]), "[" * 100_000 + "]" * 100_000])
    records, [skip] = read_jsonl(path)
    assert len(records) == 1 and skip.line == 2


def test_ids_are_checked_alike_by_the_worker_processes_of_a_large_file(tmp_path, monkeypatch):
    lines = [dump(RECORDS[0]), json.dumps({"id": "a\nb", "title": "T"}), dump(RECORDS[1])] * 300
    path = export(tmp_path / "e.jsonl", lines)
    monkeypatch.setattr(jsonl, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(jsonl, "_BATCH_LINES", 97)
    records, skipped = read_jsonl(path)
    assert len(records) == 600
    assert [s.line for s in skipped] == list(range(2, 900, 3))
    assert {s.reason for s in skipped} == {
        "record id 'a\\nb' has U+000A (line feed) at character 2: ids must be printable"
    }
