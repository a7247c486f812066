"""Shared fixtures: the seed corpus, small record sets and real Whoosh indexes in temp dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS_DIR = ROOT / "seeds"
SHARED_DATA = ROOT.parent / "shared" / "data"
KAGGLE_SAMPLE = SHARED_DATA / "arxiv-kaggle-sample" / "arxiv-metadata-oai-snapshot.head200.json"


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    return SEEDS_DIR


@pytest.fixture(scope="session")
def kaggle_sample() -> Path:
    if not KAGGLE_SAMPLE.exists():
        pytest.skip(f"{KAGGLE_SAMPLE} is not present")
    return KAGGLE_SAMPLE


@pytest.fixture(scope="session")
def fixture_index(tmp_path_factory):
    """A real index of tests.support.FIXTURE_RECORDS (5 records, one hostile). Do not modify."""
    from tests.support import build_index

    return build_index(tmp_path_factory.mktemp("fixture-index"))


@pytest.fixture(scope="session")
def seed_records():
    """The seed corpus, read and deduplicated (33 records)."""
    from searchsvc.records import Deduplicator
    from searchsvc.sources import read_records

    dedupe = Deduplicator()
    for record in read_records([SEEDS_DIR]):
        dedupe.add(record)
    return tuple(dedupe.records())


@pytest.fixture(scope="session")
def seed_index(tmp_path_factory, seed_records):
    """A real index of the 33 seed records. Do not modify."""
    from tests.support import build_index

    return build_index(tmp_path_factory.mktemp("seed-index"), seed_records)
