"""The engines the contract suite runs on, and indexes built on each through the contract.

Every test under tests/contract/ takes its backend from these fixtures, so it runs once per
registered engine. To register an engine, add its name to ENGINES and a session fixture
`<name>_engine` returning an Engine (it may start servers; it stops them when the session ends).
An engine is done when this suite passes on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from searchsvc.backends import SearchBackend, open_backend
from tests.support import FIXTURE_RECORDS, build_index

ENGINES = ("whoosh",)


@dataclass(frozen=True)
class Engine:
    """A registered engine: its name, and a maker of fresh, empty index locations."""

    name: str
    new_location: Callable[[], str]


@pytest.fixture(scope="session")
def whoosh_engine(tmp_path_factory) -> Engine:
    return Engine("whoosh", lambda: str(tmp_path_factory.mktemp("whoosh") / "index"))


@pytest.fixture(scope="session", params=ENGINES)
def engine(request) -> Engine:
    return request.getfixturevalue(f"{request.param}_engine")


@pytest.fixture(scope="session")
def fixture_backend(engine) -> Iterator[SearchBackend]:
    """The 5 fixture records (tests.support.FIXTURE_RECORDS) on the engine. Do not modify."""
    with open_backend(build_index(engine.new_location(), FIXTURE_RECORDS)) as backend:
        yield backend


@pytest.fixture(scope="session")
def seed_backend(engine, seed_records) -> Iterator[SearchBackend]:
    """The 33 seed records on the engine. Do not modify."""
    with open_backend(build_index(engine.new_location(), seed_records)) as backend:
        yield backend


@pytest.fixture
def empty_backend(engine) -> Iterator[SearchBackend]:
    """A backend on a fresh location with no index yet, for tests that write."""
    with open_backend(engine.new_location()) as backend:
        yield backend
