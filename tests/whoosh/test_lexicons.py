"""Lexicon.within (rapidfuzz) finds exactly the terms Whoosh's Levenshtein automaton finds."""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.automata.fsa import find_all_matches
from whoosh.automata.lev import levenshtein_automaton

from searchsvc.backends.whoosh.accel.lexicon import Lexicon
from tests.support import examples

_WORDS = st.text(alphabet="abcdeé", min_size=1, max_size=7)  # terms are never empty


def _lexicon(terms: list[str]) -> Lexicon:
    return Lexicon(sorted(set(terms)))


def _whoosh_within(terms: list[str], word: str, distance: int, prefix: int) -> list[str]:
    def next_term(text: str) -> str | None:
        position = bisect.bisect_left(terms, text)
        return terms[position] if position < len(terms) else None

    automaton = levenshtein_automaton(word, distance, min(prefix, len(word))).to_dfa()
    return list(find_all_matches(automaton, next_term))


@settings(max_examples=examples(300), deadline=None)
@given(
    terms=st.lists(_WORDS, max_size=60),
    word=_WORDS,
    distance=st.integers(0, 2),
    prefix=st.integers(0, 2),
)
def test_within_matches_whoosh_levenshtein_automaton(terms, word, distance, prefix):
    lexicon = _lexicon(terms)
    expected = _whoosh_within(lexicon.terms, word, distance, prefix)
    assert lexicon.within(word, distance, prefix) == expected


def test_within_on_an_empty_lexicon_finds_nothing():
    assert _lexicon([]).within("word", 2) == []
