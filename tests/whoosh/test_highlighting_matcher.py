"""The Whoosh engine's highlights are the engine-neutral highlighter's
(searchsvc/backends/shared/highlighting.py) given the same matched words: a plain table of words and
their stems, as another engine might supply, gives byte-identical output to the Whoosh wrapper's
(accel/highlight.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.shared import highlighting
from searchsvc.backends.whoosh.accel import highlight as whoosh_highlight
from searchsvc.backends.whoosh.analysis import highlight_terms
from tests.support import FIXTURE_RECORDS, examples

# Words with the term Whoosh's analysis gives them (checked below), others unlisted.
STEMS = {
    "scheduling": "schedul",
    "schedules": "schedul",
    "cache": "cach",
    "caches": "cach",
    "caching": "cach",
    "learned": "learn",
    "learning": "learn",
    "gpu": "gpu",
    "model": "model",
    "models": "model",
    "data": "data",
    "will": "will",  # a stop word: Whoosh highlights it by its folded text
    "script": "script",
    "alert": "alert",
}
_OTHER_WORDS = ["the", "of", "a", "x", "$x$", "naïve", "Balázs", "e.g.", "3.5", "<b>", "&", '"q"']


def table_matcher(terms):
    """A matcher of lowercase equality against STEMS, for the given terms."""
    wanted = {word: stem for word, stem in STEMS.items() if stem in terms}

    def matcher(words: set[str]) -> dict[str, str]:
        return {w: wanted[w.lower()] for w in words if w.lower() in wanted}

    return matcher


def test_the_table_holds_whooshs_terms():
    words = [*STEMS, *(word.upper() for word in STEMS), *(w.title() for w in STEMS)]
    assert {word: STEMS[word.lower()] for word in words} == highlight_terms(words)
    others = highlight_terms(["the", "of", "a", "x", "naïve", "Balázs", "e.g", "3.5", "b", "q"])
    assert not set(others.values()) & set(STEMS.values())


TEXTS = [
    "Fair Cluster Scheduling for Deep Learning Jobs",
    '<b>Learned</b> Caches & "GPU" models — the $x$ model\'s data will cache',
    " ".join(["filler"] * 60 + ["scheduling"] + ["filler"] * 60 + ["GPU", "models"] + ["x"] * 90),
    "We bound $O(n \\log n)$ caching cost of $$cache$$ schedules \\(model\\) data. " * 12,
    "",
    "no match at all " * 30,
]
TERM_SETS = [set(), {"schedul"}, {"cach", "learn"}, {"gpu", "model", "data", "will"}]


@pytest.mark.parametrize("terms", TERM_SETS, ids=lambda t: ",".join(sorted(t)) or "none")
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_neutral_highlights_equal_whooshs(text, terms):
    matcher = table_matcher(terms)
    assert highlighting.highlight_title(text, matcher) == whoosh_highlight.highlight_title(
        text, terms
    )
    assert highlighting.highlight_abstract(text, matcher) == (
        whoosh_highlight.highlight_abstract(text, terms)
    )


@pytest.mark.parametrize("terms", [*TERM_SETS, {"script", "alert"}], ids=str)
def test_the_neutral_record_highlights_equal_whooshs(terms):
    for record in FIXTURE_RECORDS:
        expected = whoosh_highlight.highlight_record(record, terms)
        assert highlighting.highlight_record(record, table_matcher(terms)) == expected


_WORDS = st.sampled_from([*STEMS, *(word.title() for word in STEMS), *_OTHER_WORDS])
_SEPARATORS = st.sampled_from([" ", " ", " ", ", ", ". ", "\n", " (", ") ", "—", "  "])
_TEXTS = st.lists(st.tuples(_WORDS, _SEPARATORS), max_size=150).map(
    lambda pairs: "".join(word + sep for word, sep in pairs)
)
_TERMS = st.sets(st.sampled_from(sorted(set(STEMS.values()))))


@settings(max_examples=examples(300), deadline=None)
@given(text=_TEXTS, terms=_TERMS)
def test_random_texts_highlight_alike(text, terms):
    matcher = table_matcher(terms)
    assert highlighting.highlight_title(text, matcher) == whoosh_highlight.highlight_title(
        text, terms
    )
    assert highlighting.highlight_abstract(text, matcher) == (
        whoosh_highlight.highlight_abstract(text, terms)
    )


def test_the_whoosh_matcher_maps_distinct_words_to_their_stems():
    matcher = whoosh_highlight.term_matcher({"schedul", "will"})
    assert matcher is not None
    assert matcher({"Scheduling", "schedules", "will", "cache"}) == {
        "Scheduling": "schedul",
        "schedules": "schedul",
        "will": "will",
    }
    assert whoosh_highlight.term_matcher(set()) is None
