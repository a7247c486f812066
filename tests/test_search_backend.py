"""WhooshBackend: records, sorting, paging, author view, and searchers that follow the index."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from searchsvc.backends import SearchBackend
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.documents import to_document
from searchsvc.errors import IndexUnavailable, InvalidRequest, RecordNotFound
from searchsvc.query import FacetValue, SearchRequest
from tests.support import FIXTURE_RECORDS, build_index


@pytest.fixture(scope="module")
def backend(fixture_index):
    with WhooshBackend(fixture_index) as backend:
        yield backend


def ids(result):
    return [hit.record.id for hit in result.hits]


def test_it_implements_the_search_backend_protocol(backend):
    checked: SearchBackend = backend
    assert checked.version()


def test_get_returns_the_record_and_raises_for_an_unknown_id(backend):
    assert backend.get("2201.00002") == FIXTURE_RECORDS[1]
    with pytest.raises(RecordNotFound):
        backend.get("nope")


def test_records_yields_every_record(backend):
    assert sorted(backend.records(), key=lambda r: r.id) == sorted(
        FIXTURE_RECORDS, key=lambda r: r.id
    )


def test_sorts(backend):
    assert ids(backend.search(SearchRequest(sort="oldest")))[:2] == [
        "0704.0001",
        "seed-hostile0001",
    ]
    # Title order ignores case, accents and punctuation ("<script>..." sorts as "script").
    assert ids(backend.search(SearchRequest(sort="title"))) == [
        "0704.0001",
        "2101.00003",
        "2301.00001",
        "2201.00002",
        "seed-hostile0001",
    ]
    ranked = backend.search(SearchRequest(q="learning", sort="newest"))
    assert ids(ranked) == ["2301.00001", "2201.00002"]
    assert all(hit.score is None for hit in ranked.hits)


def test_relevance_hits_carry_descending_scores(backend):
    result = backend.search(SearchRequest(q="deep learning inference"))
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True) and all(scores)
    assert ids(result)[0] == "2201.00002"


def test_pages_split_the_hits_and_a_page_past_the_end_is_empty(backend):
    pages = [ids(backend.search(SearchRequest(page=p, per_page=2))) for p in (1, 2, 3)]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert len({i for page in pages for i in page}) == 5
    past = backend.search(SearchRequest(page=7, per_page=2))
    assert past.hits == () and past.total == 5 and past.pages == 3
    ranked = [ids(backend.search(SearchRequest(q="learning", page=p, per_page=1))) for p in (1, 2)]
    assert sorted(ranked[0] + ranked[1]) == ["2201.00002", "2301.00001"]


def test_relevance_with_filters_pages_only_filtered_hits(backend):
    result = backend.search(SearchRequest.from_params(q="learning", year=(2023,)))
    assert ids(result) == ["2301.00001"] and result.total == 1


def test_similar_records_exclude_the_record_itself(backend):
    similar = backend.similar("2301.00001", limit=3)
    assert similar and "2301.00001" not in [hit.record.id for hit in similar]
    assert similar[0].record.id == "2201.00002"
    with pytest.raises(RecordNotFound):
        backend.similar("nope")


def test_author_view_lists_records_newest_first_with_counts(backend):
    view = backend.author("aditya akella")
    assert view.name == "Aditya Akella" and view.total == 2
    assert [r.id for r in view.records] == ["2201.00002", "2101.00003"]
    assert view.years == (FacetValue("2022", 1), FacetValue("2021", 1))
    assert {v.value: v.count for v in view.categories} == {"cs.LG": 1, "cs.NI": 1, "cs.DC": 1}
    assert view.coauthors == (FacetValue("Shivaram Venkataraman", 1),)
    assert backend.author("Aditya Akella", page=2, per_page=1).records[0].id == "2101.00003"
    with pytest.raises(RecordNotFound):
        backend.author("Nobody At All")
    with pytest.raises(InvalidRequest):
        backend.author("Aditya Akella", per_page=0)


def test_stats_and_version_agree(backend):
    stats = backend.stats()
    assert stats.documents == 5
    assert stats.version == backend.version()


def test_a_missing_index_is_unavailable_until_built(tmp_path):
    with WhooshBackend.open(tmp_path / "index") as backend:
        with pytest.raises(IndexUnavailable):
            backend.search(SearchRequest())
        build_index(tmp_path / "index")
        backend._searchers._checked_at = 0  # no need to wait for the next look
        assert backend.search(SearchRequest()).total == 5


def wait_for(condition, seconds=3.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_rebuild_and_an_update_become_visible_within_a_second(tmp_path):
    directory = build_index(tmp_path, FIXTURE_RECORDS[:2])
    with WhooshBackend(directory) as backend:
        first_version = backend.version()
        assert backend.search(SearchRequest()).total == 2
        build_index(tmp_path, FIXTURE_RECORDS)  # a rebuild: a new generation behind CURRENT
        started = time.monotonic()
        assert wait_for(lambda: backend.search(SearchRequest()).total == 5)
        assert time.monotonic() - started < 1.5
        assert backend.version() != first_version

        renamed = replace(FIXTURE_RECORDS[0], title="Zebra Scheduling")
        with directory.update() as index:  # an update: a new TOC in the same generation
            writer = index.writer()
            writer.update_document(**to_document(renamed))
            writer.commit()
        assert wait_for(lambda: backend.search(SearchRequest(q="zebra")).total == 1)
        result = backend.search(SearchRequest(facet_size=100))
        assert result.total == 5  # the replaced document is not counted twice
        assert {v.value: v.count for v in result.facets["author"]}["Ada Lovelace"] == 1


def test_threads_can_search_one_backend_at_once(backend):
    queries = ["learning", "scheduling", "", "author:akella", "category:cs.DC", "cach*"] * 20
    expected = {q: backend.search(SearchRequest(q=q)).total for q in set(queries)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        totals = list(pool.map(lambda q: backend.search(SearchRequest(q=q)).total, queries))
    assert totals == [expected[q] for q in queries]
