"""The engines the contract suite runs on, and indexes built on each through the contract.

Every test under tests/contract/ takes its backend from these fixtures, so it runs once per
registered engine. To register an engine, add its name to ENGINES and a session fixture
`<name>_engine` returning an Engine (it may start servers; it stops them when the session ends).
An engine is done when this suite passes on it.

The Solr engine runs on a real two-node SolrCloud started for the session (tests/solr/cluster.py;
`SEARCHSVC_TEST_SOLR=solr://HOST:PORT,...` uses a running one instead); its tests are `slow`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from searchsvc.backends import SearchBackend, open_backend
from tests.support import FIXTURE_RECORDS, build_index

ENGINES = ("whoosh", pytest.param("solr", marks=pytest.mark.slow))


@dataclass
class Engine:
    """A registered engine: its name, and a maker of fresh, empty index locations.

    `new_location(keep=False)`; an engine may drop the index of an earlier location that was
    not kept when a new one is made (a test uses one location at a time), so that a session
    of hundreds of indexes fits a small cluster.
    """

    name: str
    make_location: Callable[[], str]
    drop: Callable[[str], None] | None = None
    _temporary: list[str] = field(default_factory=list)

    def new_location(self, keep: bool = False) -> str:
        if self.drop is not None:
            while self._temporary:
                self.drop(self._temporary.pop())
        location = self.make_location()
        if not keep:
            self._temporary.append(location)
        return location


@pytest.fixture(scope="session")
def whoosh_engine(tmp_path_factory) -> Engine:
    return Engine("whoosh", lambda: str(tmp_path_factory.mktemp("whoosh") / "index"))


@pytest.fixture(scope="session")
def solr_engine(request) -> Engine:
    from tests.solr.support import drop_collections

    # Asked for here, not as a parameter: a Whoosh-only session starts no cluster.
    hosts = request.getfixturevalue("solr_hosts")
    names = itertools.count()
    prefix = f"contract{os.getpid()}"
    return Engine(
        "solr",
        # Two shards (scores and counts merged across them), one replica each: replicas change
        # nothing a contract test sees, and halve the time a collection takes to create
        # (tests/solr/test_failover.py runs the default 2 x 2 and loses a node).
        lambda: f"solr://{hosts}/solr/{prefix}_{next(names)}?replicas=1",
        drop_collections,
    )


@pytest.fixture(scope="session", params=ENGINES)
def engine(request) -> Engine:
    return request.getfixturevalue(f"{request.param}_engine")


@pytest.fixture(scope="session")
def fixture_backend(engine) -> Iterator[SearchBackend]:
    """The 5 fixture records (tests.support.FIXTURE_RECORDS) on the engine. Do not modify."""
    with open_backend(build_index(engine.new_location(keep=True), FIXTURE_RECORDS)) as backend:
        yield backend


@pytest.fixture(scope="session")
def seed_backend(engine, seed_records) -> Iterator[SearchBackend]:
    """The 33 seed records on the engine. Do not modify."""
    with open_backend(build_index(engine.new_location(keep=True), seed_records)) as backend:
        yield backend


@pytest.fixture
def empty_backend(engine) -> Iterator[SearchBackend]:
    """A backend on a fresh location with no index yet, for tests that write."""
    with open_backend(engine.new_location()) as backend:
        yield backend
