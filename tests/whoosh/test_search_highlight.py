"""The Whoosh engine's highlighter (accel/highlight.py): fragments of long abstracts, whole
titles, TeX math left unmarked, and its fast fragments held equal to Whoosh's own highlight()."""

from __future__ import annotations

from html import unescape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh.highlight import ContextFragmenter, Fragment, WholeFragmenter
from whoosh.highlight import highlight as whoosh_highlight

from searchsvc.backends.whoosh.accel.highlight import (
    ABSTRACT_FRAGMENTS,
    ELLIPSIS,
    FRAGMENT_CHARS,
    FRAGMENT_CONTEXT,
    MarkFormatter,
    _context_fragments,
    _format,
    _whole_fragments,
    highlight_abstract,
    highlight_title,
)
from searchsvc.backends.whoosh.schema import text_analyzer
from tests.support import examples, marks


def test_a_long_abstract_gives_fragments_with_ellipses_at_cut_edges():
    words = [f"filler{i}" for i in range(200)]
    words[100] = "scheduling"
    abstract = " ".join(words)
    fragment = highlight_abstract(abstract, {"schedul"})
    assert marks(fragment) == ["scheduling"]
    assert fragment.startswith(ELLIPSIS) and fragment.endswith(ELLIPSIS)
    assert len(fragment) < FRAGMENT_CHARS + 60


def test_an_unmatched_long_abstract_gives_its_start():
    abstract = "word " * 200
    fragment = highlight_abstract(abstract, {"schedul"})
    assert fragment.startswith("word word") and marks(fragment) == []
    assert fragment.endswith(ELLIPSIS) and len(fragment) < 300


def test_the_whole_title_is_kept_when_it_matches():
    title = "A very long title " * 10 + "about scheduling at the end"
    marked = highlight_title(title, {"schedul"})
    assert marks(marked) == ["scheduling"]
    assert unescape(marked.replace("<mark>", "").replace("</mark>", "")) == title


def test_no_mark_inside_tex_math():
    abstract = "We bound $O(n \\log n)$ scheduling cost where $n$ is the log size."
    fragment = highlight_abstract(abstract, {"log", "schedul"})
    assert marks(fragment) == ["scheduling", "log"]
    assert "$O(n \\log n)$" in fragment


# -- the fast fragments against Whoosh's own highlight() --------------------------------------
_WORDS = st.sampled_from(
    [
        "scheduling", "schedules", "the", "of", "a", "cache", "Caches", "learned", "GPU",
        "$x$", "naïve", "Balázs", "model", "models", "x", "data", "will", "e.g.", "3.5",
    ]
)  # fmt: skip
_SEPARATORS = st.sampled_from([" ", " ", " ", ", ", ". ", "\n", " (", ") ", "—", "  "])
# Short texts, and long ones (several fragments, where the fragmenter's edge cases are):
# Hypothesis alone draws mostly short lists.
_TEXTS = st.one_of(
    st.lists(st.tuples(_WORDS, _SEPARATORS), max_size=40),
    st.lists(st.tuples(_WORDS, _SEPARATORS), min_size=40, max_size=160),
).map(lambda pairs: "".join(word + sep for word, sep in pairs))
_TERMS = st.sets(st.sampled_from(["schedul", "cach", "learn", "gpu", "model", "data", "will"]))


def _whoosh_highlight(text: str, terms: frozenset[str], fragmenter, top: int) -> str:
    return whoosh_highlight(text, terms, text_analyzer(), fragmenter, MarkFormatter(), top=top)


@pytest.fixture
def earlier_fragments_win_ties(monkeypatch):
    # Whoosh orders equally scored fragments by id(); make it prefer the earlier, as we do.
    monkeypatch.setattr(Fragment, "__lt__", lambda self, other: self.startchar > other.startchar)


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=_TEXTS, terms=_TERMS)
def test_abstract_fragments_are_the_ones_whoosh_picks(earlier_fragments_win_ties, text, terms):
    fragmenter = ContextFragmenter(maxchars=FRAGMENT_CHARS, surround=FRAGMENT_CONTEXT)
    expected = _whoosh_highlight(text, frozenset(terms), fragmenter, ABSTRACT_FRAGMENTS)
    assert _format(text, _context_fragments(text, frozenset(terms))) == expected


def test_a_fragment_ending_exactly_at_its_countdown_takes_no_context_from_the_next_word(
    earlier_fragments_win_ties,
):
    # Found by the property test above: the first fragment's countdown reaches exactly 0 at
    # the second "data"; Whoosh then spends the next word ("the") on an empty fragment, so the
    # last "scheduling" starts its fragment without it.
    text = (
        "scheduling scheduling the the of a cache cache cache learned learned learned learned "
        "data data the scheduling "
    )
    fragmenter = ContextFragmenter(maxchars=FRAGMENT_CHARS, surround=FRAGMENT_CONTEXT)
    expected = _whoosh_highlight(text, frozenset({"schedul"}), fragmenter, ABSTRACT_FRAGMENTS)
    assert expected.endswith("data data … <mark>scheduling</mark>")
    assert _format(text, _context_fragments(text, frozenset({"schedul"}))) == expected


@settings(max_examples=examples(200), deadline=None)
@given(text=_TEXTS, terms=_TERMS)
def test_title_highlight_is_the_one_whoosh_gives(text, terms):
    expected = _whoosh_highlight(text, frozenset(terms), WholeFragmenter(), 1)
    assert _format(text, _whole_fragments(text, frozenset(terms))) == expected
