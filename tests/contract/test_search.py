"""Search on the contract: get, sorts, relevance, paging, similar records, a missing index, and
one backend shared by threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from searchsvc.backends import SearchBackend, open_backend
from searchsvc.domain.errors import IndexUnavailable, InvalidRequest, RecordNotFound
from searchsvc.domain.query import SearchRequest
from tests.contract.reference import hit_ids
from tests.support import FIXTURE_RECORDS, build_index

NEWEST = ["2301.00001", "2201.00002", "2101.00003", "seed-hostile0001", "0704.0001"]


def test_the_backend_is_a_search_backend_with_a_version_and_a_location(fixture_backend):
    assert isinstance(fixture_backend, SearchBackend)
    assert fixture_backend.version()
    assert "://" in fixture_backend.location


def test_get_returns_the_record_as_indexed(fixture_backend):
    for record in FIXTURE_RECORDS:
        assert fixture_backend.get(record.id) == record


def test_get_of_an_unknown_id_raises_record_not_found(fixture_backend):
    with pytest.raises(RecordNotFound):
        fixture_backend.get("nope")
    with pytest.raises(RecordNotFound):
        fixture_backend.get("2301.0000")  # a prefix of an indexed id is not that id


def test_browsing_without_a_query_lists_every_record_newest_first(fixture_backend):
    result = fixture_backend.search(SearchRequest())
    assert result.total == 5 and hit_ids(result) == NEWEST
    assert all(hit.score is None for hit in result.hits)


def test_oldest_sort_puts_the_oldest_records_first(fixture_backend):
    result = fixture_backend.search(SearchRequest(sort="oldest"))
    assert hit_ids(result) == list(reversed(NEWEST))


def test_title_sort_ignores_case_accents_and_punctuation(fixture_backend):
    # "<script>..." sorts as "script", "Calculation" before "Congestion" before "Fair".
    assert hit_ids(fixture_backend.search(SearchRequest(sort="title"))) == [
        "0704.0001",
        "2101.00003",
        "2301.00001",
        "2201.00002",
        "seed-hostile0001",
    ]


def test_a_query_sorted_by_date_has_no_scores(fixture_backend):
    ranked = fixture_backend.search(SearchRequest(q="learning", sort="newest"))
    assert hit_ids(ranked) == ["2301.00001", "2201.00002"]
    assert all(hit.score is None for hit in ranked.hits)
    oldest = fixture_backend.search(SearchRequest(q="learning", sort="oldest"))
    assert hit_ids(oldest) == ["2201.00002", "2301.00001"]


def test_relevance_hits_carry_descending_scores_best_match_first(fixture_backend):
    result = fixture_backend.search(SearchRequest(q="deep learning inference"))
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True) and all(scores)
    assert hit_ids(result) == ["2201.00002", "2301.00001"] and result.total == 2


def test_pages_split_the_hits_and_a_page_past_the_end_is_empty(fixture_backend):
    pages = [hit_ids(fixture_backend.search(SearchRequest(page=p, per_page=2))) for p in (1, 2, 3)]
    assert pages == [NEWEST[:2], NEWEST[2:4], NEWEST[4:]]
    past = fixture_backend.search(SearchRequest(page=7, per_page=2))
    assert past.hits == () and past.total == 5 and past.pages == 3


def test_relevance_pages_hold_each_match_once(fixture_backend):
    ranked = [
        hit_ids(fixture_backend.search(SearchRequest(q="learning", page=p, per_page=1)))
        for p in (1, 2, 3)
    ]
    assert sorted(ranked[0] + ranked[1]) == ["2201.00002", "2301.00001"]
    assert ranked[2] == []


def test_relevance_with_filters_pages_only_filtered_hits(fixture_backend):
    result = fixture_backend.search(SearchRequest.from_params(q="learning", year=(2023,)))
    assert hit_ids(result) == ["2301.00001"] and result.total == 1


def test_similar_records_exclude_the_record_itself(fixture_backend):
    similar = fixture_backend.similar("2301.00001", limit=3)
    assert similar and "2301.00001" not in [hit.record.id for hit in similar]
    assert similar[0].record.id == "2201.00002"
    assert len(fixture_backend.similar("2301.00001", limit=1)) == 1


def test_similar_of_an_unknown_id_raises_and_a_bad_limit_is_invalid(fixture_backend):
    with pytest.raises(RecordNotFound):
        fixture_backend.similar("nope")
    with pytest.raises(InvalidRequest):
        fixture_backend.similar("2301.00001", limit=0)


def test_similar_seed_records_are_other_records_up_to_the_limit(seed_backend, seed_records):
    scheduling = next(r for r in seed_records if r.title.startswith("Shockwave:"))
    similar = seed_backend.similar(scheduling.id, limit=5)
    assert len(similar) == 5 and scheduling.id not in [hit.record.id for hit in similar]
    assert len({hit.record.id for hit in similar}) == 5


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.search(SearchRequest()),
        lambda b: b.get("2301.00001"),
        lambda b: b.similar("2301.00001"),
        lambda b: b.suggest("lea"),
        lambda b: b.facet_values("author"),
        lambda b: b.author("Aditya Akella"),
        lambda b: b.stats(),
        lambda b: b.version(),
        lambda b: list(b.records()),
    ],
    ids=[
        "search",
        "get",
        "similar",
        "suggest",
        "facet_values",
        "author",
        "stats",
        "version",
        "records",
    ],
)
def test_every_read_of_a_missing_index_raises_index_unavailable(empty_backend, call):
    with pytest.raises(IndexUnavailable):
        call(empty_backend)


def test_an_index_built_by_another_backend_is_seen_after_refresh(empty_backend):
    with pytest.raises(IndexUnavailable):
        empty_backend.search(SearchRequest())
    build_index(empty_backend.location)  # through a backend of its own
    empty_backend.refresh()
    assert empty_backend.search(SearchRequest()).total == 5


def test_a_location_opens_the_same_index_again(fixture_backend):
    with open_backend(fixture_backend.location) as again:
        assert again.version() == fixture_backend.version()
        assert again.search(SearchRequest()).total == 5


def test_threads_can_search_one_backend_at_once(fixture_backend):
    queries = ["learning", "scheduling", "", "author:akella", "category:cs.DC", "cach*"] * 20
    expected = {q: fixture_backend.search(SearchRequest(q=q)).total for q in set(queries)}
    assert expected == {
        "learning": 2,
        "scheduling": 1,
        "": 5,
        "author:akella": 2,
        "category:cs.DC": 2,
        "cach*": 1,
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        totals = list(pool.map(lambda q: fixture_backend.search(SearchRequest(q=q)).total, queries))
    assert totals == [expected[q] for q in queries]
