"""The schema's analysis done in one pass per text, for the writer and the highlighter.

Whoosh analyses by chaining generators of Token objects (tokenizer | lowercase | accent fold |
stop | stem), and a field is analysed again for every use: the writer runs the chain for title,
abstract, content and the spelling words of the same text, the highlighter once more per hit.
Here a raw word's fate (stopped, or its folded word and stem) is worked out once and cached,
and one regex pass yields everything those uses need. The results are identical to the schema's
analyzers (`schema.text_analyzer`, `schema.name_analyzer`); tests/whoosh/test_analysis.py checks
that with random text against Whoosh itself.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import cast

from whoosh.analysis import STOP_WORDS
from whoosh.support.charset import accent_map

from searchsvc.backends.shared.words import word_bounds as word_bounds
from searchsvc.backends.whoosh.schema import english_stem

# Whoosh's RegexTokenizer default pattern, `\w+(\.?\w+)*`, in a form that matches the same
# words with less backtracking (the optional dot made every word character a branch point).
# shared/words.py splits texts into the same words (`word_bounds`).
_TOKEN = re.compile(r"\w+(?:\.\w+)*")
_MIN_WORD = 2  # StopFilter's minsize
_STOP_WORDS = frozenset(STOP_WORDS)
# Raw word -> (folded word, stem), the stem None for a stop word. Bounded: distinct tokens
# (numbers, identifiers) keep growing with the corpus, and a miss only costs the work again.
_MAX_CACHED = 500_000
_cache: dict[str, tuple[str, str | None]] = {}
# The same for `text_words`: raw word -> (folded word, stem), or False for a stop word.
_kept_cache: dict[str, tuple[str, str] | bool] = {}
# Raw word -> what highlighting compares with query terms (see `highlight_terms`).
_highlight_cache: dict[str, str] = {}


def _lower_folded(raw: str) -> str:
    word = raw.lower()
    # accent_map maps lowercase ASCII to itself: only other text needs the (slower) translate.
    return word if word.isascii() else word.translate(accent_map)


def _fate(raw: str) -> tuple[str, str | None]:
    word = _lower_folded(raw)
    stopped = len(word) < _MIN_WORD or word in _STOP_WORDS
    stem = None if stopped else english_stem(word)
    if len(_cache) >= _MAX_CACHED:
        _cache.clear()
        _kept_cache.clear()
    _cache[raw] = (word, stem)
    _kept_cache[raw] = False if stem is None else (word, stem)
    return word, stem


def text_words(text: str) -> tuple[int, list[tuple[str, str]]]:
    """The kept words of `text` as (folded word, stem), and the position of the first one.

    Whoosh's StopFilter renumbers the kept words consecutively from the original position of
    the first kept word, so word i of the list is at position `first + i`.
    """
    raws = _TOKEN.findall(text)
    # Looked up and filtered by C-level calls: a Python loop pays the interpreter per word.
    fates = list(map(_kept_cache.get, raws))
    if None in fates:  # words not seen before
        for position, fate in enumerate(fates):
            if fate is None:
                raw = raws[position]
                if raw not in _kept_cache:
                    _fate(raw)
                fates[position] = _kept_cache[raw]
    kept = cast("list[tuple[str, str]]", list(filter(None, fates)))  # stop words are False
    # Every word before the first kept one is a stop word (False), unequal to any pair.
    return (fates.index(kept[0]) if kept else 0), kept


def highlight_terms(raws: Iterable[str]) -> dict[str, str]:
    """What Whoosh's highlighter compares with the query terms for each raw word: its stem, or
    for a stop word its folded text (Whoosh highlights with `removestops=False`)."""
    cache = _highlight_cache
    missing = [raw for raw in raws if raw not in cache]
    if missing:
        if len(cache) + len(missing) > _MAX_CACHED:
            cache.clear()
        for raw in missing:
            word, stem = _cache[raw] if raw in _cache else _fate(raw)
            cache[raw] = word if stem is None else stem
    return {raw: cache[raw] for raw in raws}


def matched_words(words: Iterable[str], terms: Collection[str]) -> dict[str, str]:
    """The distinct raw words among `words` whose highlight term is in `terms`, with it."""
    distinct = set(words)
    # Once a text's words are all known (the usual case), look them up in the cache itself
    # rather than copying every one into a new mapping first; a word not seen before ends
    # that attempt, and the text's words are then analysed into the cache.
    try:
        return {word: term for word in distinct if (term := _highlight_cache[word]) in terms}
    except KeyError:
        known = highlight_terms(distinct)
        return {word: term for word in distinct if (term := known[word]) in terms}


def name_words(text: str) -> list[str]:
    """The words of an author-name text: lowercased and accent-folded, nothing dropped."""
    return [_lower_folded(raw) for raw in _TOKEN.findall(text)]


def token_count(text: str) -> int:
    """How many words the tokenizer finds in `text`, stop words included (their positions count)."""
    return len(_TOKEN.findall(text))
