"""Did-you-mean, autocomplete and facet value search."""

from __future__ import annotations

import pytest

from searchsvc.domain.errors import InvalidRequest, UnknownFacet
from searchsvc.domain.query import MAX_FACET_SIZE, FacetValue, SearchRequest
from searchsvc.domain.records import Record


def suggestion(backend, q):
    return backend.search(SearchRequest(q=q)).suggestion


def test_unknown_words_with_close_indexed_words_are_corrected(fixture_backend):
    assert suggestion(fixture_backend, "schedulng clustr") == "scheduling cluster"
    assert suggestion(fixture_backend, "schedulng deep") == "scheduling deep"


def test_known_words_names_and_stop_words_get_no_correction(fixture_backend):
    assert suggestion(fixture_backend, "scheduling") is None
    assert suggestion(fixture_backend, "akella") is None
    assert suggestion(fixture_backend, "the scheduling") is None
    assert suggestion(fixture_backend, "") is None


def test_words_with_nothing_close_get_no_correction(fixture_backend):
    assert suggestion(fixture_backend, "xylophone") is None


def test_corrections_keep_the_rest_of_the_query(fixture_backend):
    assert suggestion(fixture_backend, 'title:schedulng AND "deep learning"') == (
        'title:scheduling AND "deep learning"'
    )


def test_a_misspelt_seed_word_gets_a_suggestion(seed_backend):
    assert suggestion(seed_backend, "schedulng") == "scheduling"


def test_real_misspellings_get_the_word_meant(seed_backend):
    assert suggestion(seed_backend, "algoritm") == "algorithm"
    # Two neighbouring letters swapped count as one edit.
    assert suggestion(seed_backend, "memroy") == "memory"
    assert suggestion(seed_backend, "netwrok") == "network"


def test_an_unknown_acronym_is_not_changed_into_another_word(seed_backend):
    # The README's own example once suggested `caches OR two`: `tlb` found nothing, and every
    # three-letter string is an edit or two from some indexed word.
    assert suggestion(seed_backend, "caches OR tlb") is None
    assert suggestion(seed_backend, "title:(caches OR tlb)") is None


def test_words_that_found_records_are_never_changed(seed_backend):
    # Each is one edit from a word in many more seed records (models, faster, compute).
    for text in ("modes", "foster", "compete"):
        assert suggestion(seed_backend, text) is None, text
    assert suggestion(seed_backend, "modes schedulng") == "modes scheduling"


def test_a_word_far_from_every_indexed_word_gets_no_suggestion(seed_backend):
    # `fusion` is two edits from `fashion`, `pastry` from `partly`: too many for six letters.
    for text in ("fusion", "pastry", "xylophone", "tlb"):
        assert suggestion(seed_backend, text) is None, text


def test_the_nearest_word_wins_over_a_more_frequent_farther_one(empty_backend):
    records = [
        Record(id=f"p{n}", title=f"{word} design", abstract="")
        for n, word in enumerate(("processor", "process", "process", "process"))
    ]
    empty_backend.rebuild(records)
    assert suggestion(empty_backend, "procesor") == "processor"


def test_autocomplete_offers_titles_and_author_names(fixture_backend):
    found = fixture_backend.suggest("lea")
    assert found.prefix == "lea"
    assert set(found.titles) == {
        "Learned Caches for Inference Serving",
        "Fair Cluster Scheduling for Deep Learning Jobs",
    }
    assert found.authors == ()
    assert fixture_backend.suggest("aki").authors == ()
    assert fixture_backend.suggest("ak").authors == ("Aditya Akella",)
    assert fixture_backend.suggest("venkat").authors == ("Shivaram Venkataraman",)
    assert fixture_backend.suggest("bala").authors == ("C. Balázs",)


def test_autocomplete_completes_the_last_of_several_words(fixture_backend):
    assert fixture_backend.suggest("deep learning sched").titles == (
        "Fair Cluster Scheduling for Deep Learning Jobs",
    )


def test_autocomplete_gives_at_most_limit_titles(fixture_backend):
    assert len(fixture_backend.suggest("lea", limit=1).titles) == 1


def test_autocomplete_of_nothing_or_punctuation_is_empty(fixture_backend):
    for prefix in ("", "   ", "***", '"('):
        found = fixture_backend.suggest(prefix)
        assert found.titles == () and found.authors == ()


def test_facet_values_containing_a_word_prefix_with_counts(fixture_backend):
    assert fixture_backend.facet_values("author", "akel") == (FacetValue("Aditya Akella", 2),)
    assert fixture_backend.facet_values("author", "shivaram venk") == (
        FacetValue("Shivaram Venkataraman", 2),
    )
    assert fixture_backend.facet_values("author", "BALAZS") == (FacetValue("C. Balázs", 1),)
    assert fixture_backend.facet_values("category", "cs", limit=2) == (
        FacetValue("cs.DC", 2),
        FacetValue("cs.LG", 2),
    )
    assert fixture_backend.facet_values("category", "ni") == (FacetValue("cs.NI", 1),)
    assert fixture_backend.facet_values("year", "202", limit=1) == (FacetValue("2020", 1),)
    assert fixture_backend.facet_values("author", "nobody") == ()


def test_facet_values_without_a_prefix_are_every_value_most_records_first(fixture_backend):
    authors = fixture_backend.facet_values("author")
    assert len(authors) == 6
    assert [v.count for v in authors] == [2, 2, 1, 1, 1, 1]
    assert [v.value for v in authors[:2]] == ["Aditya Akella", "Shivaram Venkataraman"]


def test_facet_values_of_an_unknown_facet_are_refused_naming_the_facets(fixture_backend):
    # Was InvalidRequest; an unknown facet is now UnknownFacet (a LookupError naming the facets).
    with pytest.raises(UnknownFacet) as error:
        fixture_backend.facet_values("colour", "r")
    assert error.value.details["facets"] == ["author", "year", "category", "subject"]


def test_a_limit_out_of_range_is_invalid(fixture_backend):
    with pytest.raises(InvalidRequest):
        fixture_backend.suggest("a", limit=0)
    with pytest.raises(InvalidRequest):
        fixture_backend.facet_values("author", limit=0)
    with pytest.raises(InvalidRequest):
        fixture_backend.facet_values("author", limit=MAX_FACET_SIZE + 1)


def test_a_number_gets_no_correction(seed_backend):
    for text in ("2023", "1999", "42"):
        assert seed_backend.search(SearchRequest(q=text)).suggestion is None, text
