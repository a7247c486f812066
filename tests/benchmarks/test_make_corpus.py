"""benchmarks/make_corpus.py: a small synthetic corpus is reproducible and reads as arXiv data."""

from __future__ import annotations

import gzip
import json

import pytest

from benchmarks.make_corpus import (
    ID_PREFIX,
    YEAR_WEIGHTS,
    load_pool,
    parse_size,
    size_label,
    split_title,
    write_corpus,
)
from searchsvc.domain.records import Deduplicator, is_arxiv_id
from searchsvc.domain.texts import title_key
from searchsvc.sources import detect_format, read_records

COUNT = 50


@pytest.fixture(scope="module")
def pool(kaggle_sample):
    return load_pool(kaggle_sample)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, pool, kaggle_sample):
    path = tmp_path_factory.mktemp("corpus") / "synth.jsonl.gz"
    write_corpus(path, COUNT, seed=7, source=kaggle_sample, progress=False, pool=pool)
    return path


def test_same_seed_same_bytes_and_smaller_sizes_are_prefixes(tmp_path, corpus, pool, kaggle_sample):
    again = tmp_path / "again.jsonl.gz"
    write_corpus(again, COUNT, seed=7, source=kaggle_sample, progress=False, pool=pool)
    assert again.read_bytes() == corpus.read_bytes()

    smaller = tmp_path / "smaller.jsonl.gz"
    write_corpus(smaller, 20, seed=7, source=kaggle_sample, progress=False, pool=pool)
    assert _lines(smaller) == _lines(corpus)[:20]

    other = tmp_path / "other.jsonl.gz"
    write_corpus(other, COUNT, seed=8, source=kaggle_sample, progress=False, pool=pool)
    assert _lines(other) != _lines(corpus)


def test_every_record_reads_with_the_arxiv_reader_and_none_merge(corpus):
    assert detect_format(corpus) == "arxiv"
    skipped = []
    records = list(read_records([corpus], on_skip=skipped.append))
    assert skipped == []
    assert len(records) == COUNT
    ids = [record.id for record in records]
    assert len(set(ids)) == COUNT
    assert all(i.startswith(ID_PREFIX) and is_arxiv_id(i) for i in ids)
    # Unique titles too, so that no merge happens even by title.
    assert len({title_key(record.title) for record in records}) == COUNT
    dedupe = Deduplicator()
    for record in records:
        dedupe.add(record)
    assert dedupe.merged == 0
    assert len(dedupe) == COUNT
    assert all(record.authors and record.categories and record.abstract for record in records)


def test_years_spread_over_the_range(corpus):
    years = [record.year for record in read_records([corpus])]
    assert all(min(YEAR_WEIGHTS) <= year <= max(YEAR_WEIGHTS) for year in years)
    assert len(set(years)) >= 10


def test_sizes_and_title_splits():
    assert [parse_size(s) for s in ("2k", "40k", "1M", "2500")] == [2_000, 40_000, 1_000_000, 2500]
    assert [size_label(n) for n in (2_000, 1_000_000, 2500)] == ["2k", "1M", "2500"]
    assert split_title("VocalBench: A Benchmark") == ("VocalBench", ":", "A Benchmark")
    assert split_title("Robust Models for Speech") == ("Robust Models", " ", "for Speech")
    assert split_title("Plain Title Here") is None
    assert split_title("$a: b$ for c") == ("$a: b$", " ", "for c")


def _lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]
