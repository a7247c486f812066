"""The Solr schema's analysis, done by the service on query words (and for highlighting).

The configset analyses text at index time (solr/configset: tokenize on `\\w+(\\.\\w+)*`,
lowercase, fold accents, drop stop words and one-letter words, make acronym plurals singular
(backends/acronym_plurals.py), Snowball English stems); the service sends queries already
analysed, so the query tree's words, phrases and expansions become exactly the index's terms,
and highlighting marks the words whose analysed form a query holds.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources

import Stemmer

from searchsvc.backends.shared.acronym_plurals import singular

_TOKEN = re.compile(r"\w+(?:\.\w+)*")
_MIN_WORD = 2
_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The configset's stop words (one file for the index and the queries)."""
    text = (
        resources.files("searchsvc.backends.solr")
        .joinpath("configset/conf/stopwords.txt")
        .read_text(encoding="utf-8")
    )
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


@lru_cache(maxsize=200_000)
def fold_word(raw: str) -> str:
    """Lowercased, accents folded (as LowerCaseFilter then ASCIIFoldingFilter do)."""
    word = raw.lower()
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=200_000)
def word_fate(raw: str) -> tuple[str, str | None]:
    """(folded word, stem) of a raw word; the stem None when the word is dropped."""
    word = fold_word(raw)
    if len(word) < _MIN_WORD or word in stop_words():
        return word, None
    return word, _STEMMER.stemWord(singular(word))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def stems(text: str) -> list[str]:
    """PyStemmer's stems of the kept words of `text`, in order: what highlighting compares
    (the index's own stems come from Solr: terms.IndexStems)."""
    return [stem for raw in tokens(text) if (stem := word_fate(raw)[1]) is not None]


def words(text: str) -> list[str]:
    """The kept words of `text`, folded, unstemmed, in order: the index terms of `text_words`,
    and what the index stems (`text_stemmed`)."""
    return [
        word for raw in tokens(text) if word_fate(raw)[1] is not None for word in [fold_word(raw)]
    ]


def name_words(text: str) -> list[str]:
    """The index terms of author names (`text_names`): folded words, nothing dropped."""
    return [fold_word(raw) for raw in tokens(text)]


def highlight_matcher(terms: frozenset[str]):
    """A highlighting matcher: the raw words whose stem (or, for a stop word, folded form) is
    one of `terms`."""

    def matcher(raws: Iterable[str]) -> dict[str, str]:
        found = {}
        for raw in raws:
            word, stemmed = word_fate(raw)
            term = word if stemmed is None else stemmed
            if term in terms:
                found[raw] = term
        return found

    return matcher
