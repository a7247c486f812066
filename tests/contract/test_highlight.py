"""Highlighting on the contract: escaped HTML whose only tags are <mark>, stems and phrases
marked, negated words not, and the hostile record's markup never passed through."""

from __future__ import annotations

from html import unescape

from searchsvc.domain.query import SearchRequest
from tests.support import FIXTURE_RECORDS, HOSTILE_TITLE, marks


def plain(fragment: str) -> str:
    return unescape(fragment.replace("<mark>", "").replace("</mark>", ""))


def highlights(backend, q, **options):
    result = backend.search(SearchRequest(q=q, **options))
    for hit in result.hits:
        for fragment in hit.highlights.values():
            marks(fragment)
    return {hit.record.id: hit.highlights for hit in result.hits}


def test_stems_of_the_query_words_are_marked_in_title_and_abstract(fixture_backend):
    found = highlights(fixture_backend, "schedule")["2301.00001"]
    assert found == {
        "title": "Fair Cluster <mark>Scheduling</mark> for Deep Learning Jobs",
        "abstract": (
            "We study <mark>scheduling</mark> of deep learning training jobs on shared GPU "
            "clusters."
        ),
    }


def test_phrase_words_are_marked(fixture_backend):
    found = highlights(fixture_backend, '"learned caches"')["2201.00002"]
    assert marks(found["title"]) == ["Learned", "Caches"]
    assert found["title"] == "<mark>Learned</mark> <mark>Caches</mark> for Inference Serving"


def test_the_hostile_record_comes_back_escaped(fixture_backend):
    found = highlights(fixture_backend, "script alert")["seed-hostile0001"]
    assert "<script" not in found["title"] and "<img" not in found["title"]
    assert "&lt;" in found["title"]
    assert "<b>" not in found["abstract"]
    assert marks(found["title"]) == ["script", "alert", "script", "alert"]
    assert marks(found["abstract"]) == ["script", "script"]


def test_unmarked_text_reads_back_as_the_original(fixture_backend):
    found = highlights(fixture_backend, "script")["seed-hostile0001"]
    assert plain(found["title"]) == HOSTILE_TITLE
    assert plain(found["abstract"]) == FIXTURE_RECORDS[4].abstract


def test_without_a_match_title_and_abstract_are_plain_escaped_text(fixture_backend):
    found = highlights(fixture_backend, "", filters={"category": ("cs.CR",)})["seed-hostile0001"]
    assert marks(found["title"]) == [] and marks(found["abstract"]) == []
    assert found["title"].startswith("&lt;script&gt;")
    assert plain(found["title"]) == HOSTILE_TITLE


def test_negated_words_are_not_marked(fixture_backend):
    found = highlights(fixture_backend, "learning NOT inference")["2301.00001"]
    assert marks(found["title"]) == ["Learning"]
    assert marks(found["abstract"]) == ["learning"]


def test_a_field_prefixed_word_is_marked_in_its_field(fixture_backend):
    found = highlights(fixture_backend, "title:congestion")["2101.00003"]
    assert marks(found["title"]) == ["Congestion"]


def test_highlighting_can_be_turned_off(fixture_backend):
    result = fixture_backend.search(SearchRequest(q="learning", highlight=False))
    assert result.total == 2
    assert all(hit.highlights == {} for hit in result.hits)
