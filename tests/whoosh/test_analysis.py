"""The one-pass analysis (analysis.py) gives exactly what the schema's Whoosh analyzers give."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.shared import words as splitting
from searchsvc.backends.whoosh import analysis
from searchsvc.backends.whoosh.schema import name_analyzer, text_analyzer
from tests.support import examples

# Words, stop words, accents, dotted tokens, numbers, TeX, acronym plurals and punctuation mixed
# at random.
_PIECES = st.sampled_from(
    [
        "the", "a", "of", "Scheduling", "schedulers", "caches", "Balázs", "ÉCOLE", "naïve",
        "U.S.A.", "v1.2", "x", "I", "İstanbul", "straße", "ﬁle", "3.14", "$\\alpha$", "e.g.",
        "GPU-based", "don't", "—", "\n", "  ", ",", ".", "(", ")", "über", "Ωmega", "_", "x_1",
        "GPUs", "LLMs", "thus", "virus",
    ]
)  # fmt: skip
_TEXTS = st.one_of(
    st.lists(_PIECES, max_size=30).map(" ".join),
    st.lists(_PIECES, max_size=30).map("".join),
    st.text(max_size=80),
)


def _whoosh_text(text: str) -> list[tuple[str, int, int, int]]:
    tokens = text_analyzer()(text, positions=True, chars=True)
    return [(t.text, t.pos, t.startchar, t.endchar) for t in tokens]


def _whoosh_highlight_tokens(text: str) -> list[tuple[str, int, int]]:
    # What whoosh.highlight.highlight analyses: query mode, stop words kept (marked stopped).
    tokens = text_analyzer()(text, chars=True, mode="query", removestops=False)
    return [(t.text, t.startchar, t.endchar) for t in tokens]


@settings(max_examples=examples(400), deadline=None)
@given(_TEXTS)
def test_text_words_and_positions_match_whoosh(text: str) -> None:
    expected = _whoosh_text(text)
    first, words = analysis.text_words(text)
    assert [stem for _, stem in words] == [term for term, _, _, _ in expected]
    assert [first + i for i in range(len(words))] == [pos for _, pos, _, _ in expected]


@settings(max_examples=examples(400), deadline=None)
@given(_TEXTS)
def test_word_bounds_and_terms_match_what_whoosh_highlights(text: str) -> None:
    words, starts, ends = analysis.word_bounds(text)
    terms = analysis.highlight_terms(words)
    spans = [(terms[w], s, e) for w, s, e in zip(words, starts, ends, strict=True)]
    assert spans == _whoosh_highlight_tokens(text)
    assert [text[s:e] for s, e in zip(starts, ends, strict=True)] == words


_ASCII_PIECES = st.sampled_from(
    [
        "the", "a", "Scheduling", "U.S.A.", "v1.2", "3.14", "e.g.", "x_1", "_", ".", "..",
        ".a", "a.", "a..b", "GPU-based", "don't", "$\\alpha$", "\n", "\t", "  ", ",", "(", "~",
    ]
)  # fmt: skip
_ASCII_TEXTS = st.one_of(
    st.lists(_ASCII_PIECES, max_size=200).map(" ".join),
    st.lists(_ASCII_PIECES, max_size=200).map("".join),
    st.text(st.characters(max_codepoint=127), max_size=600),
)


@settings(max_examples=examples(400), deadline=None)
@given(_ASCII_TEXTS)
def test_array_split_of_ascii_text_equals_the_regex_split(text: str) -> None:
    # Long ASCII texts (abstracts) take the array path; it must find the regex's very tokens.
    parts = splitting.WORD_SPLIT.split(text)
    offsets = [0, *itertools.accumulate(map(len, parts))]
    expected = (parts[1::2], offsets[1:-1:2], offsets[2::2])
    assert splitting.ascii_word_bounds(text) == expected


def test_long_ascii_text_takes_the_array_split_and_highlights_as_whoosh() -> None:
    text = "Schedulers (e.g. U.S.A. v1.2) cache x_1, don't they? " * 20
    assert len(text) >= splitting.ARRAY_SPLIT_MIN_CHARS
    words, starts, ends = analysis.word_bounds(text)
    terms = analysis.highlight_terms(words)
    spans = [(terms[w], s, e) for w, s, e in zip(words, starts, ends, strict=True)]
    assert spans == _whoosh_highlight_tokens(text)


@settings(max_examples=examples(300), deadline=None)
@given(_TEXTS)
def test_spelling_words_match_whoosh_without_stemming(text: str) -> None:
    expected = [t.text for t in text_analyzer()(text, no_morph=True)]
    assert [word for word, _ in analysis.text_words(text)[1]] == expected


@settings(max_examples=examples(300), deadline=None)
@given(_TEXTS)
def test_name_words_match_whoosh(text: str) -> None:
    assert analysis.name_words(text) == [t.text for t in name_analyzer()(text)]


def test_the_cache_is_bounded(monkeypatch) -> None:
    monkeypatch.setattr(analysis, "_MAX_CACHED", 3)
    analysis._cache.clear()
    analysis._kept_cache.clear()
    analysis.text_words("alpha beta gamma delta epsilon")
    assert len(analysis._cache) <= 3
    assert len(analysis._kept_cache) <= 3
    assert analysis.text_words("alpha beta")[1] == [("alpha", "alpha"), ("beta", "beta")]


def test_folding_leaves_lowercase_ascii_alone_so_ascii_words_skip_it():
    # analysis._lower_folded only translates non-ASCII words; that holds while accent_map maps
    # every lowercase ASCII character to itself.
    from whoosh.support.charset import accent_map

    ascii_text = "".join(chr(c) for c in range(128))
    assert ascii_text.lower().translate(accent_map) == ascii_text.lower()
    for word in ("ÉCOLE", "Résumé", "Straße", "Network"):
        assert analysis._lower_folded(word) == word.lower().translate(accent_map)
