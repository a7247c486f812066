"""A text's raw words and where each starts and ends: the one splitting every engine's highlights
use, and the Whoosh engine's analysis too (so that the words highlighted are the words indexed).
"""

from __future__ import annotations

import itertools
import re
import string

import numpy as np

# Whoosh's RegexTokenizer default pattern, `\w+(\.?\w+)*`, in a form that matches the same words
# with less backtracking (the optional dot made every word character a branch point); captured,
# so that a split yields gap, word, gap, word, ..., gap.
WORD_SPLIT = re.compile(r"(\w+(?:\.\w+)*)")
# Which bytes are word characters (`\w`) in ASCII text, and ASCII's full stop.
_ASCII_WORD = np.zeros(256, dtype=bool)
_ASCII_WORD[[ord(ch) for ch in string.ascii_letters + string.digits + "_"]] = True
_DOT, _SPACE = ord("."), ord(" ")
# From about this length on, ASCII text is split faster by array operations than by the regex
# (the regex pays for every character, the arrays mostly a fixed cost per call).
ARRAY_SPLIT_MIN_CHARS = 400


def word_bounds(text: str) -> tuple[list[str], list[int], list[int]]:
    """The raw words of `text` (stop words included) with their start and end characters.

    One C-level split and running sum instead of a match object per word: highlighting needs
    the bounds of every word (for context) but the analysis of only the distinct ones.
    """
    if len(text) >= ARRAY_SPLIT_MIN_CHARS and text.isascii():
        return ascii_word_bounds(text)
    parts = WORD_SPLIT.split(text)  # gap, word, gap, word, ..., gap
    bounds = list(itertools.accumulate(map(len, parts)))
    return parts[1::2], bounds[0:-1:2], bounds[1::2]


def ascii_word_bounds(text: str) -> tuple[list[str], list[int], list[int]]:
    """`word_bounds` of ASCII text with array operations (no regex step per character).

    A token of `WORD_SPLIT` is a run of word characters in which a full stop between two word
    characters counts as one too ("e.g" of "e.g.", "3.5"): the regex takes a full stop only
    after a word character and only when a word character follows.
    """
    codes = np.frombuffer(text.encode("ascii"), np.uint8)
    in_word = _ASCII_WORD[codes]
    in_word[1:-1] |= in_word[:-2] & in_word[2:] & (codes[1:-1] == _DOT)
    padded = np.zeros(len(in_word) + 2, dtype=bool)
    padded[1:-1] = in_word
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # start, end, start, end, ...
    # Non-word characters become spaces, so a whitespace split yields the tokens in order.
    words = np.where(in_word, codes, _SPACE).tobytes().decode("ascii").split()
    return words, edges[0::2].tolist(), edges[1::2].tolist()
