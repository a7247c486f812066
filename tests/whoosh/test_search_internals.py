"""The Whoosh engine's search internals: bounded wildcard expansion, the in-memory lexicons,
searchers that follow the index directory without a refresh, and the build details of stats."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.queries.expansion import MAX_EXPANSION, most_frequent
from searchsvc.backends.whoosh.search.execute import compile_for
from searchsvc.backends.whoosh.store import IndexDirectory, version_token
from searchsvc.domain.errors import IndexUnavailable
from searchsvc.domain.query import SearchRequest
from tests.support import FIXTURE_RECORDS, build_index


@pytest.fixture(scope="module")
def backend(fixture_index):
    with WhooshBackend.open(fixture_index) as backend:
        yield backend


def compiled(backend, q, fields=("title", "abstract")):
    request = SearchRequest(q=q, fields=fields)
    with backend._searchers.view() as view:
        return compile_for(view, request.tree, request.fields)


def test_a_lone_star_compiles_to_match_all(backend):
    assert compiled(backend, "*").match_all
    assert compiled(backend, "*:*").match_all


def test_wildcard_expansion_is_capped(backend):
    parsed = compiled(backend, "?*")
    assert not parsed.match_all
    assert 0 < len(list(parsed.query.leaves())) <= MAX_EXPANSION


def test_a_short_wildcard_start_keeps_within_the_postings_budget(backend):
    with backend._searchers.view() as view:
        reader = view.searcher.reader()
        words = ["learn", "deep", "schedul", "cach"]  # in 2, 2, 1 and 1 documents
        assert most_frequent(reader, "content", words, 10, max_postings=2) == ["learn"]
        sample = most_frequent(reader, "content", words, 10, max_postings=1, keep_first=False)
        assert sample == ["schedul"]


def test_the_in_memory_lexicon_answers_prefix_pattern_and_distance(backend):
    with backend._searchers.view() as view:
        lexicon = view.lexicon("spell_content")
        assert list(lexicon.prefixed("sched")) == ["scheduling"]
        assert list(lexicon.matching("*ing")) == ["learning", "scheduling", "serving", "training"]
        assert lexicon.within("schedulng", 1) == ["scheduling"]
        assert lexicon.within("chedulng", 2) == []  # the first letter must match


def wait_for(condition, seconds=3.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_missing_index_is_searched_once_built_without_a_refresh(tmp_path):
    with WhooshBackend.open(tmp_path / "index") as backend:
        with pytest.raises(IndexUnavailable):
            backend.search(SearchRequest())
        build_index(tmp_path / "index")
        assert wait_for(lambda: backend.search(SearchRequest()).total == 5)


def test_a_rebuild_and_an_update_by_another_backend_become_visible_within_a_second(tmp_path):
    location = build_index(tmp_path / "index", FIXTURE_RECORDS[:2])
    with WhooshBackend.open(location) as backend, WhooshBackend.open(location) as writer:
        first_version = backend.version()
        assert backend.search(SearchRequest()).total == 2
        writer.rebuild(FIXTURE_RECORDS)  # a rebuild: a new generation behind CURRENT
        started = time.monotonic()
        assert wait_for(lambda: backend.search(SearchRequest()).total == 5)
        assert time.monotonic() - started < 1.5
        assert backend.version() != first_version

        renamed = replace(FIXTURE_RECORDS[0], title="Zebra Scheduling")
        writer.upsert([renamed])  # an update: a new TOC in the same generation
        assert wait_for(lambda: backend.search(SearchRequest(q="zebra")).total == 1)
        result = backend.search(SearchRequest(facet_size=100))
        assert result.total == 5  # the replaced document is not counted twice
        assert {v.value: v.count for v in result.facets["author"]}["Ada Lovelace"] == 1


def test_stats_report_the_index_directory_and_its_live_generation(fixture_index, backend):
    stats = backend.stats()
    directory = IndexDirectory(fixture_index)
    # The live generation's, digested: its name (with the builder's PID) stays on the server.
    live = directory.live_name()
    assert stats.version == version_token(live, int(stats.version.rsplit("-", 1)[1]))
    assert live not in stats.version
    assert stats.index_dir == str(directory.root)
    assert stats.size_bytes > 0
    assert backend.location == f"whoosh://{directory.root}"
