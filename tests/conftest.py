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
