"""Format detection by content, path expansion, and the inputs that are an error, not a skip."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from searchsvc.domain.errors import SourceError
from searchsvc.domain.records import Record
from searchsvc.sources import FORMATS, detect_format, input_files, read_records

SEED_PAGE = "arXiv subjects\n\nAda\n\nPublications and source records attributed to Ada.\n\n"
SEED_PAGE += "arXiv2020\n\nA Title\n\ncs.LG↗\n"
ARXIV_LINE = json.dumps(
    {"id": "0704.0001", "title": "T", "categories": "hep-ph", "authors": "A. B", "versions": []}
)
RECORD_LINE = json.dumps(Record(id="x-1", title="T", authors=("A",)).to_dict())


def write(path: Path, content: str | bytes) -> Path:
    data = content.encode() if isinstance(content, str) else content
    path.write_bytes(data)
    return path


def test_formats_are_named():
    assert FORMATS == ("seed", "arxiv", "jsonl")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (SEED_PAGE, "seed"),
        ("\n\n  DBLP2021\n\nA Title\n", "seed"),
        (ARXIV_LINE + "\n", "arxiv"),
        (json.dumps({"id": "1", "title": "T", "authors_parsed": []}) + "\n", "arxiv"),
        (RECORD_LINE + "\n", "jsonl"),
        ("{broken\n" + RECORD_LINE + "\n", "jsonl"),
    ],
)
def test_detects_by_content_whatever_the_name(tmp_path, content, expected):
    # A misleading name on purpose: detection reads the content.
    assert detect_format(write(tmp_path / "input.txt", content)) == expected


def test_detects_inside_gzip_whatever_the_suffix(tmp_path):
    path = tmp_path / "records.dat"
    path.write_bytes(gzip.compress((ARXIV_LINE + "\n").encode()))
    assert detect_format(path) == "arxiv"


def test_real_inputs_are_detected(seeds_dir, kaggle_sample):
    assert {detect_format(p) for p in seeds_dir.glob("*.txt")} == {"seed"}
    assert detect_format(kaggle_sample) == "arxiv"


def test_long_first_line_is_read_whole(tmp_path):
    long_line = json.dumps({"id": "1", "title": "T", "abstract": "x" * 500_000, "versions": []})
    assert detect_format(write(tmp_path / "a.json", long_line + "\n")) == "arxiv"


def test_first_line_too_large_to_read_is_judged_by_its_keys(tmp_path):
    huge = json.dumps({"versions": [], "id": "1", "title": "T", "abstract": "x" * 3_000_000})
    path = write(tmp_path / "a.json", huge + "\n" + ARXIV_LINE + "\n")
    assert detect_format(path) == "arxiv"
    assert [r.id for r in read_records([path], on_skip=lambda skipped: None)] == ["0704.0001"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("  \n\r\n\t\n", "is empty"),
        (b"\x00\x01\x02binary\xff\xfe", "is binary"),
        (b"\xff\xfe\xfdnot utf-8\n", "is not UTF-8 text"),
        ("just some prose\nwith no structure\n", "cannot tell the format"),
        ('{"no": "record fields"}\n', "cannot tell the format"),
    ],
)
def test_unusable_files_are_a_source_error_naming_the_path(tmp_path, content, message):
    path = write(tmp_path / "bad.txt", content)
    with pytest.raises(SourceError, match=message) as caught:
        list(read_records([path]))
    assert str(path) in caught.value.message


def test_empty_gzip_is_empty(tmp_path):
    path = write(tmp_path / "empty.gz", gzip.compress(b""))
    with pytest.raises(SourceError, match="is empty"):
        list(read_records([path]))


def test_corrupt_gzip_is_a_source_error(tmp_path):
    path = write(tmp_path / "bad.gz", gzip.compress((ARXIV_LINE + "\n").encode() * 50)[:40])
    with pytest.raises(SourceError, match=str(path)):
        list(read_records([path]))


def test_forced_format_still_refuses_empty_and_binary_files(tmp_path):
    for content in ("", b"\x00\x00\x00"):
        path = write(tmp_path / "x.jsonl", content)
        with pytest.raises(SourceError, match=str(path)):
            list(read_records([path], format="jsonl"))


def test_forced_format_applies_to_every_file(tmp_path):
    # Read as seed pages, JSON is no record at all: nothing comes out, nothing is guessed.
    path = write(tmp_path / "a.jsonl", RECORD_LINE + "\n")
    assert list(read_records([path], format="seed")) == []


def test_unknown_forced_format_is_an_error(tmp_path):
    with pytest.raises(SourceError, match="unknown format 'csv'"):
        list(read_records([write(tmp_path / "a.txt", SEED_PAGE)], format="csv"))


def test_missing_path_fails_before_any_record_is_read(tmp_path):
    good = write(tmp_path / "a.txt", SEED_PAGE)
    missing = tmp_path / "nope.txt"
    with pytest.raises(SourceError, match=f"{missing} does not exist"):
        next(read_records([good, missing]))


def test_directory_expands_to_input_files_sorted_by_name(tmp_path):
    write(tmp_path / "b.txt", SEED_PAGE)
    write(tmp_path / "a.jsonl", RECORD_LINE + "\n")
    write(tmp_path / "c.json.gz", gzip.compress((ARXIV_LINE + "\n").encode()))
    write(tmp_path / ".hidden.txt", "ignored")
    write(tmp_path / "notes.md", "ignored")
    (tmp_path / "sub.txt").mkdir()
    assert [p.name for p in input_files([tmp_path])] == ["a.jsonl", "b.txt", "c.json.gz"]
    assert [r.id for r in read_records([tmp_path])] == [
        "x-1",
        next(read_records([tmp_path / "b.txt"])).id,
        "0704.0001",
    ]


def test_directory_without_input_files_is_an_error(tmp_path):
    write(tmp_path / "notes.md", "nothing to read")
    with pytest.raises(SourceError, match="holds no input files"):
        list(read_records([tmp_path]))


def test_paths_may_be_strings_and_repeat(tmp_path, seeds_dir):
    records = list(read_records([str(seeds_dir), seeds_dir / "000_2d4200ce66a414ec.txt"]))
    assert len(records) == 36 + 18


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file_is_a_source_error(tmp_path):
    path = write(tmp_path / "locked.txt", SEED_PAGE)
    path.chmod(0)
    try:
        with pytest.raises(SourceError, match=f"cannot read {path}"):
            list(read_records([path]))
    finally:
        path.chmod(0o600)


def test_a_copy_of_the_seeds_reads_the_same(tmp_path, seeds_dir):
    copy = tmp_path / "seeds"
    shutil.copytree(seeds_dir, copy)
    assert list(read_records([copy])) == list(read_records([seeds_dir]))
