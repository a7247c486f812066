"""Kaggle arXiv metadata: records checked against their raw source lines, and hostile input."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from searchsvc.domain.errors import SourceError
from searchsvc.domain.records import Record
from searchsvc.domain.texts import normalise_space
from searchsvc.sources import Skipped, jsonl, read_records

RAW_RECORD = {
    "id": "2301.00001",
    "submitter": None,
    "authors": "Ada Lovelace and Alan Turing",
    "title": "Fair Scheduling\n  at $11\\times$ the Speed",
    "comments": "12 pages",
    "journal-ref": None,
    "doi": "10.1000/xyz",
    "report-no": None,
    "categories": "cs.DC cs.LG",
    "license": None,
    "abstract": "  We reach 75\\% of peak\nthroughput.\n",
    "versions": [{"version": "v1", "created": "Mon, 2 Jan 2023 10:00:00 GMT"}],
    "update_date": "2024-05-01",
    "authors_parsed": [["Lovelace", "Ada", ""], ["Turing", "Alan", "Jr"]],
}


def read_arxiv(path: Path) -> tuple[list[Record], list[Skipped]]:
    skipped: list[Skipped] = []
    records = list(read_records([path], format="arxiv", on_skip=skipped.append))
    return records, skipped


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sample(kaggle_sample) -> tuple[list[dict], dict[str, Record]]:
    raw = [json.loads(line) for line in kaggle_sample.read_text(encoding="utf-8").splitlines()]
    records = {record.id: record for record in read_records([kaggle_sample])}
    return raw, records


def test_sample_reads_all_200_records(sample):
    raw, records = sample
    assert len(raw) == len(records) == 200


def test_0704_0001_matches_its_source_line(sample):
    record = sample[1]["0704.0001"]
    assert record.authors[:4] == ("C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan")
    assert record.year == 2007
    assert record.categories == ("hep-ph",)
    assert record.url == "https://arxiv.org/abs/0704.0001"
    assert record.title == (
        "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    )
    assert record.doi == "10.1103/PhysRevD.76.013009"
    assert record.journal_ref == "Phys.Rev.D76:013009,2007"
    assert record.source == "arXiv"


@pytest.mark.parametrize("index", [0, 1, 7, 42, 99, 150, 199])
def test_sample_records_match_their_source_lines(sample, index):
    raw_records, records = sample
    raw = raw_records[index]
    record = records[raw["id"]]
    assert record.url == f"https://arxiv.org/abs/{raw['id']}"
    assert list(record.categories) == raw["categories"].split()
    v1 = next(v for v in raw["versions"] if v["version"] == "v1")
    assert str(record.year) in v1["created"].split()
    assert len(record.authors) == len(raw["authors_parsed"])
    for name, (last, first, *_) in zip(record.authors, raw["authors_parsed"], strict=True):
        assert name.startswith(normalise_space(first)) or not first
        assert normalise_space(last) in name
    assert "\n" not in record.title and "  " not in record.abstract


def test_fields_are_mapped_normalised_and_tex_rendered(tmp_path):
    [record], skipped = read_arxiv(write_lines(tmp_path / "a.json", [json.dumps(RAW_RECORD)]))
    assert skipped == []
    assert record == Record(
        id="2301.00001",
        title="Fair Scheduling at 11× the Speed",
        abstract="We reach 75% of peak throughput.",
        authors=("Ada Lovelace", "Alan Turing Jr"),
        year=2023,
        categories=("cs.DC", "cs.LG"),
        source="arXiv",
        url="https://arxiv.org/abs/2301.00001",
        doi="10.1000/xyz",
        comments="12 pages",
    )


def test_tex_accents_in_parsed_author_names_are_decoded(tmp_path):
    raw = dict(RAW_RECORD, authors_parsed=[["Bal\\'azs", "C.", ""], ['G\\"ahler', "Franz", ""]])
    [record], _ = read_arxiv(write_lines(tmp_path / "a.json", [json.dumps(raw)]))
    assert record.authors == ("C. Balázs", "Franz Gähler")


def test_authors_string_is_the_fallback_without_authors_parsed(tmp_path):
    raw = {k: v for k, v in RAW_RECORD.items() if k != "authors_parsed"}
    raw["authors"] = "C. Bal\\'azs, E. L. Berger (ANL),\n  and C.-P. Yuan"
    [record], _ = read_arxiv(write_lines(tmp_path / "a.json", [json.dumps(raw)]))
    assert record.authors == ("C. Balázs", "E. L. Berger", "C.-P. Yuan")


def test_year_falls_back_to_update_date(tmp_path):
    no_versions = {k: v for k, v in RAW_RECORD.items() if k != "versions"}
    bad_date = dict(RAW_RECORD, versions=[{"version": "v1", "created": "sometime"}])
    records, _ = read_arxiv(
        write_lines(tmp_path / "a.json", [json.dumps(no_versions), json.dumps(bad_date)])
    )
    assert [r.year for r in records] == [2024, 2024]


def test_v1_date_wins_over_later_versions(tmp_path):
    versions = [
        {"version": "v2", "created": "Tue, 3 Jan 2023 10:00:00 GMT"},
        {"version": "v1", "created": "Fri, 30 Dec 2022 10:00:00 GMT"},
    ]
    line = json.dumps(dict(RAW_RECORD, versions=versions))
    [record], _ = read_arxiv(write_lines(tmp_path / "a.json", [line]))
    assert record.year == 2022


def test_gzipped_file_reads_like_the_plain_one(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(json.dumps(RAW_RECORD) + "\n")
    [record] = read_records([path])
    assert record.id == "2301.00001"


def test_invalid_json_line_in_the_middle_is_skipped_with_file_and_line(tmp_path):
    good = json.dumps(RAW_RECORD)
    second = json.dumps(dict(RAW_RECORD, id="2301.00002"))
    path = write_lines(tmp_path / "a.json", [good, '{"id": "2301.0000', second])
    records, skipped = read_arxiv(path)
    assert [r.id for r in records] == ["2301.00001", "2301.00002"]
    [skip] = skipped
    assert (skip.path, skip.line) == (str(path), 2)
    assert skip.reason.startswith("invalid JSON")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"title": 42}, "'title' must be a string"),
        ({"categories": ["cs.DC"]}, "'categories' must be a string"),
        ({"authors_parsed": "Lovelace, Ada"}, "'authors_parsed' must be a list"),
        ({"authors_parsed": [["Lovelace", 1]]}, "must hold lists of strings"),
        ({"versions": "v1"}, "'versions' must be a list"),
        ({"id": None}, "no 'id'"),
        ({"title": "  "}, "title must be a non-empty string"),
        ({"id": "2301.00001\r\n2"}, "record id '2301.00001\\r\\n2' has U+000D (carriage return)"),
        ({"id": "2301.\x0000001"}, "has U+0000 (NUL) at character 6"),
        ({"id": "2301." + "1" * 600}, "record id is 605 characters long: at most 512"),
    ],
)
def test_wrong_types_are_skipped_with_a_reason(tmp_path, change, reason):
    lines = [json.dumps(dict(RAW_RECORD, **change)), json.dumps(RAW_RECORD)]
    records, [skip] = read_arxiv(write_lines(tmp_path / "a.json", lines))
    assert len(records) == 1
    assert skip.line == 1 and reason in skip.reason


def test_old_style_ids_with_a_slash_are_read_and_surrounding_spaces_dropped(tmp_path):
    lines = [json.dumps(dict(RAW_RECORD, id=" hep-th/9901001 "))]
    [record], skipped = read_arxiv(write_lines(tmp_path / "a.json", lines))
    assert (record.id, record.url, skipped) == (
        "hep-th/9901001",
        "https://arxiv.org/abs/hep-th/9901001",
        [],
    )


def test_non_object_lines_and_blank_lines(tmp_path):
    lines = ["[1, 2]", "", "   ", '"text"', json.dumps(RAW_RECORD)]
    records, skipped = read_arxiv(write_lines(tmp_path / "a.json", lines))
    assert len(records) == 1
    assert [s.line for s in skipped] == [1, 4]


def test_ten_megabyte_line_is_skipped_quickly(tmp_path):
    huge = json.dumps(dict(RAW_RECORD, abstract="x" * (10 * 1024 * 1024)))
    path = write_lines(tmp_path / "a.json", [json.dumps(RAW_RECORD), huge, json.dumps(RAW_RECORD)])
    started = time.perf_counter()
    records, skipped = read_arxiv(path)
    assert time.perf_counter() - started < 2
    assert len(records) == 2
    assert skipped == [Skipped(str(path), 2, "record too large (over 1 MiB)")]


def test_undecodable_line_is_skipped(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(json.dumps(RAW_RECORD).encode() + b"\n\xff\xfe junk\n")
    records, [skip] = read_arxiv(path)
    assert len(records) == 1
    assert (skip.line, skip.reason.startswith("not valid UTF-8")) == (2, True)


def test_worker_processes_give_the_same_records_and_skips_in_order(tmp_path, monkeypatch):
    # A file over the size threshold is converted by worker processes in batches; records and
    # skip reports must come back exactly as the serial read gives them, in line order.
    lines = []
    for i in range(1_300):
        raw = dict(RAW_RECORD, id=f"2301.{i:05d}", title=f"Paper {i} at $\\alpha_{i}$ speed")
        lines.append(json.dumps(raw))
        if i % 250 == 7:
            lines.extend(["{not json", "", json.dumps({"id": 5}), "[1, 2]"])
    path = write_lines(tmp_path / "big.jsonl", lines)
    serial_records, serial_skipped = read_arxiv(path)
    monkeypatch.setattr(jsonl, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(jsonl, "_BATCH_LINES", 97)  # batch edges fall everywhere
    parallel_records, parallel_skipped = read_arxiv(path)
    assert len(serial_records) == 1_300 and len(serial_skipped) == 18
    assert parallel_records == serial_records
    assert parallel_skipped == serial_skipped


def test_a_damaged_gzip_fails_the_parallel_read_cleanly(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "PARALLEL_MIN_BYTES", 0)
    data = gzip.compress(("\n".join([json.dumps(RAW_RECORD)] * 2_000) + "\n").encode())
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(SourceError, match="cannot read"):
        read_arxiv(path)
