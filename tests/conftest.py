"""Shared fixtures: the seed corpus, small record sets, real indexes built through the engine
contract in temp dirs, and the app, its test client and a CLI runner over them.

Session-scoped fixtures are built once for the whole run: tests must not write to them (a test
that writes builds its own index, e.g. with tests.support.build_index on `tmp_path`).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SEEDS_DIR = ROOT / "seeds"
SHARED_DATA = ROOT.parent / "shared" / "data"
KAGGLE_SAMPLE = SHARED_DATA / "arxiv-kaggle-sample" / "arxiv-metadata-oai-snapshot.head200.json"

# Embedding every record costs about 30 ms on these machines: indexes the tests build are
# lexical unless a test asks for vectors (tests/test_modes_on_every_surface.py and the
# contract's mode tests do, with vectors=True); the servers and commands the tests start
# inherit this.
os.environ.setdefault("SEARCHSVC_VECTORS", "off")


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    return SEEDS_DIR


@pytest.fixture(scope="session")
def kaggle_sample() -> Path:
    if not KAGGLE_SAMPLE.exists():
        pytest.skip(
            f"needs the 200-record Kaggle sample at {KAGGLE_SAMPLE} (the shared data directory "
            "beside the checkout, ../shared/data)"
        )
    return KAGGLE_SAMPLE


@pytest.fixture(scope="session")
def kaggle_records(kaggle_sample):
    """The 200 records of the Kaggle sample, read and deduplicated."""
    from tests.support import read_corpus

    return read_corpus(kaggle_sample)


ARXIV_2025 = SHARED_DATA / "arxiv-2025" / "arxiv-2025-kaggle-format.jsonl.gz"


@pytest.fixture(scope="session")
def arxiv_2025() -> Path:
    """The 40,717 real 2025 arXiv records (gzipped Kaggle JSON lines) of the shared data."""
    if not ARXIV_2025.exists():
        pytest.skip(f"needs the arXiv-2025 records at {ARXIV_2025} (../shared/data)")
    return ARXIV_2025


@pytest.fixture(scope="session")
def fixture_index(tmp_path_factory) -> str:
    """The location of a real index of tests.support.FIXTURE_RECORDS (5 records, one hostile).
    Do not modify."""
    from tests.support import build_index

    return build_index(tmp_path_factory.mktemp("fixture-index") / "index")


@pytest.fixture(scope="session")
def seed_records():
    """The seed corpus, read and deduplicated (33 records)."""
    from tests.support import read_corpus

    return read_corpus(SEEDS_DIR)


@pytest.fixture(scope="session")
def seed_vocabulary(seed_records) -> list[str]:
    """The 40 commonest title words of the seed corpus (letters only, over 3 letters)."""
    words = Counter(
        word.lower()
        for record in seed_records
        for word in record.title.split()
        if word.isalpha() and len(word) > 3
    )
    return [word for word, _ in words.most_common(40)]


@pytest.fixture(scope="session")
def seed_index(tmp_path_factory, seed_records) -> str:
    """The location of a real index of the 33 seed records. Do not modify."""
    from tests.support import build_index

    return build_index(tmp_path_factory.mktemp("seed-index") / "index", seed_records)


@pytest.fixture(scope="session")
def app(fixture_index):
    """The Flask app over the fixture index."""
    from searchsvc.app import create_app

    return create_app({"INDEX": fixture_index, "TESTING": True})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def seed_app(seed_index):
    """The Flask app over the seed index."""
    from searchsvc.app import create_app

    return create_app({"INDEX": seed_index, "TESTING": True})


@pytest.fixture
def seed_client(seed_app):
    return seed_app.test_client()


@pytest.fixture
def runner():
    """Runs `searchsvc` commands in-process: runner(*args) -> click's Result."""
    from searchsvc.cli import main

    cli = CliRunner()
    return lambda *args: cli.invoke(main, [str(arg) for arg in args])


@pytest.fixture(scope="session")
def solr_cluster(tmp_path_factory):
    """A running local SolrCloud (ZooKeeper + 2 nodes, tests.solr.cluster), shared by the whole
    session and started only when a test asks for it (about 10-25 s). Do not stop or kill its
    nodes: start your own with tests.solr.cluster.running_cluster for that."""
    from tests.solr.cluster import running_cluster

    with running_cluster(tmp_path_factory.mktemp("solr-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def solr_hosts(request) -> str:
    """HOST:PORT,... of the session's SolrCloud, or of a running one named by
    SEARCHSVC_TEST_SOLR=solr://HOST:PORT,... (then no cluster is started)."""
    hosts = os.environ.get("SEARCHSVC_TEST_SOLR", "").removeprefix("solr://").strip("/")
    if not hosts:
        hosts = request.getfixturevalue("solr_cluster").solr_location("x").split("/")[2]
    return hosts
