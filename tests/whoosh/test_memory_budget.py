"""A build's memory budget: segments sized to it, and an index that answers exactly like one
built without it (issue 20). Memory itself is measured by benchmarks/bench_scale.py."""

from __future__ import annotations

import dataclasses
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.build import writer as writer_module
from searchsvc.backends.whoosh.build.writer import (
    DEFAULT_MEMORY_BUDGET,
    MAX_SEGMENT_RECORDS,
    MIN_SEGMENT_RECORDS,
    MULTIPROCESS_MIN_RECORDS,
    choose_procs,
    segment_records,
)
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record, title_key
from searchsvc.indexing.indexer import build_index_from_records
from tests.support import draw_seed_request, examples, multi_block_records

# Per record of a segment, as the writer reckons it, in the budgeted build below: a 256 MiB
# budget then makes segments of a few dozen records.
TINY_SEGMENT_BYTES = 4 * 1024**2
BUDGET = 256 * 1024**2


def test_segments_grow_with_the_budget_within_their_bounds():
    assert segment_records(2) == segment_records(2, DEFAULT_MEMORY_BUDGET)
    sizes = [segment_records(2, gib * 1024**3) for gib in (0.25, 0.5, 1, 2)]
    assert sizes == sorted(sizes)
    assert sizes[0] == MIN_SEGMENT_RECORDS < sizes[2]
    assert segment_records(2, 64 * 1024**3) == MAX_SEGMENT_RECORDS
    # One process writes its own segments: the memory of a second process goes to them.
    assert segment_records(1, 1024**3) > segment_records(2, 1024**3)


def test_a_budget_too_small_for_two_writers_gets_one():
    assert choose_procs(MULTIPROCESS_MIN_RECORDS * 10) == min(2, os.cpu_count() or 1)
    assert choose_procs(MULTIPROCESS_MIN_RECORDS * 10, memory_budget=256 * 1024**2) == 1
    assert choose_procs(MULTIPROCESS_MIN_RECORDS * 10, 2, memory_budget=256 * 1024**2) == 2


@pytest.fixture(scope="module")
def corpus(seed_records):
    # Common words and facet values with posting lists of several blocks, and the seed
    # records' varied text: segments cut through both.
    return [*seed_records, *multi_block_records(300)]


@pytest.fixture(scope="module")
def both_builds(tmp_path_factory, corpus):
    """(unbudgeted, budgeted) backends of the same records, both by two writer processes."""
    root = tmp_path_factory.mktemp("budget")
    build_index_from_records(corpus, root / "plain", procs=2)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writer_module, "SEGMENT_BYTES_PER_RECORD", TINY_SEGMENT_BYTES)
        patch.setattr(writer_module, "PROCESS_BYTES", 16 * 1024**2)
        patch.setattr(writer_module, "MIN_SEGMENT_RECORDS", 1)
        size = segment_records(2, BUDGET)
        build_index_from_records(corpus, root / "budgeted", procs=2, memory_budget=BUDGET)
    plain, budgeted = IndexDirectory(root / "plain"), IndexDirectory(root / "budgeted")
    with WhooshBackend(plain) as plain_backend, WhooshBackend(budgeted) as budgeted_backend:
        yield plain_backend, budgeted_backend, size


def test_a_small_budget_writes_more_smaller_segments(both_builds, corpus):
    plain, budgeted, size = both_builds
    assert 1 < size < len(corpus) // 4
    share = math.ceil(len(corpus) / 2)
    shares = [share, len(corpus) - share]
    assert len(plain.directory.open()._segments()) == 2
    segments = len(budgeted.directory.open()._segments())
    assert segments == sum(math.ceil(n / size) for n in shares)
    assert list(budgeted.records()) == list(plain.records()) == corpus


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_budgeted_build_answers_exactly_like_an_unbudgeted_one(
    both_builds, seed_records, seed_vocabulary, data
):
    plain, budgeted, _ = both_builds
    request = draw_seed_request(data, seed_records, [*seed_vocabulary, "learning", "graphs"])
    request = dataclasses.replace(request, page=data.draw(st.integers(1, 3)))
    expected = plain.search(request)
    got = budgeted.search(request)
    assert got.total == expected.total
    assert [hit.record for hit in got.hits] == [hit.record for hit in expected.hits]
    assert [hit.score for hit in got.hits] == pytest.approx([h.score for h in expected.hits])
    assert got.facets == expected.facets


def test_title_order_breaks_long_shared_prefixes_and_ties_across_segments(tmp_path, monkeypatch):
    # The table orders by a prefix of each title's sort key first (accel/title_rank.py):
    # titles that share more than that prefix, equal titles (kept in record order) and
    # non-ASCII titles, spread over several segments.
    monkeypatch.setattr(writer_module, "MAX_SEGMENT_RECORDS", 7)
    stems = [
        "Scalable distributed training of large models",
        "Scalable distributed training of large graphs",
        "Scalable distributed training",
        "Scalable",
        "Émile and the scalable distributed trainers",
        "Zürich scalable distributed training of large",
    ]
    records = [
        Record(id=f"2402.{n:05d}", title=f"{stems[n % len(stems)]} {'abc'[n % 3] * (n % 4)}")
        for n in range(60)
    ]
    location = tmp_path / "index"
    build_index_from_records(records, location, procs=1)
    with WhooshBackend(IndexDirectory(location)) as backend:
        assert len(backend.directory.open()._segments()) > 5
        result = backend.search(SearchRequest(sort="title", per_page=100, facets=()))
    expected = sorted(records, key=lambda record: title_key(record.title))  # stable: ties by order
    assert [hit.record.id for hit in result.hits] == [record.id for record in expected]
