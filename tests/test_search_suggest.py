"""Did-you-mean, autocomplete and facet value search."""

from __future__ import annotations

import pytest

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.errors import InvalidRequest
from searchsvc.query import FacetValue, SearchRequest


@pytest.fixture(scope="module")
def backend(fixture_index):
    with WhooshBackend(fixture_index) as backend:
        yield backend


def suggestion(backend, q):
    return backend.search(SearchRequest(q=q)).suggestion


def test_unknown_words_with_close_indexed_words_are_corrected(backend):
    assert suggestion(backend, "schedulng clustr") == "scheduling cluster"
    assert suggestion(backend, "schedulng deep") == "scheduling deep"


def test_known_words_names_and_stop_words_get_no_correction(backend):
    assert suggestion(backend, "scheduling") is None
    assert suggestion(backend, "akella") is None
    assert suggestion(backend, "the scheduling") is None
    assert suggestion(backend, "") is None


def test_words_with_nothing_close_get_no_correction(backend):
    assert suggestion(backend, "xylophone") is None


def test_corrections_keep_the_rest_of_the_query(backend):
    assert suggestion(backend, 'title:schedulng AND "deep learning"') == (
        'title:scheduling AND "deep learning"'
    )


def test_autocomplete_offers_titles_and_author_names(backend):
    found = backend.suggest("lea")
    assert "Learned Caches for Inference Serving" in found.titles
    assert backend.suggest("aki").authors == ()
    assert backend.suggest("ak").authors == ("Aditya Akella",)
    assert backend.suggest("venkat").authors == ("Shivaram Venkataraman",)
    assert backend.suggest("bala").authors == ("C. Balázs",)


def test_autocomplete_completes_the_last_of_several_words(backend):
    assert backend.suggest("deep learning sched").titles == (
        "Fair Cluster Scheduling for Deep Learning Jobs",
    )


def test_autocomplete_of_nothing_or_punctuation_is_empty(backend):
    for prefix in ("", "   ", "***", '"('):
        found = backend.suggest(prefix)
        assert found.titles == () and found.authors == ()


def test_facet_values_containing_a_word_prefix_with_counts(backend):
    assert backend.facet_values("author", "akel") == (FacetValue("Aditya Akella", 2),)
    assert backend.facet_values("author", "shivaram venk") == (
        FacetValue("Shivaram Venkataraman", 2),
    )
    assert backend.facet_values("category", "cs", limit=2) == (
        FacetValue("cs.DC", 2),
        FacetValue("cs.LG", 2),
    )
    assert backend.facet_values("category", "ni") == (FacetValue("cs.NI", 1),)
    assert backend.facet_values("year", "202", limit=1) == (FacetValue("2020", 1),)
    assert len(backend.facet_values("author")) == 6


def test_facet_values_of_an_unknown_facet_or_limit_are_invalid(backend):
    with pytest.raises(InvalidRequest):
        backend.facet_values("colour", "r")
    with pytest.raises(InvalidRequest):
        backend.suggest("a", limit=0)
