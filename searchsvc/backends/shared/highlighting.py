"""Highlighted title and abstract, for any engine: escaped HTML whose only tags are `<mark>`.

An engine supplies only a matcher: a callable that takes the distinct raw words of a text (a set
of str) and returns {raw word: term} for those its query matches, the term being what counts as
one distinct matched term when fragments are scored (the Whoosh backend maps a word to its
stem). Everything else — the fragments of an abstract, the one fragment of a title, their
scoring and formatting, over the words of words.py — is here, so that every engine gives
byte-identical highlights for the same matched words.

The fragments are the ones Whoosh's `highlight()` picks with a `ContextFragmenter` (or a
`WholeFragmenter` for titles) and its `BasicFragmentScorer`, and the formatting the one of
`MarkFormatter` through Whoosh's `Formatter` protocol, but computed from one-pass word spans
instead of a Token stream, without importing Whoosh. tests/whoosh/test_search_highlight.py checks
the output against Whoosh's own `highlight()`.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from searchsvc.backends.shared.words import word_bounds
from searchsvc.domain.records import Record

# The distinct raw words of a text -> {raw word: term} for those that match the query.
Matcher = Callable[[set[str]], Mapping[str, str]]

ELLIPSIS = "…"
FRAGMENT_CHARS = 220  # longest abstract fragment
FRAGMENT_CONTEXT = 70  # characters of context around the matched words
ABSTRACT_FRAGMENTS = 2
LEAD_CHARS = 240  # the start of the abstract shown when none of its words matched
# Only words ending within this many characters are looked at (whoosh.highlight's value).
DEFAULT_CHARLIMIT = 2**15
# TeX math: a <mark> inside it would break the rendering on the page.
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)

_WORD = re.compile(r"\w")


# -- fragments ------------------------------------------------------------------------------------
@dataclass(slots=True)
class Match:
    """A matched word: the term it matched and its characters in the text."""

    text: str
    startchar: int
    endchar: int


@dataclass(slots=True)
class Fragment:
    """An extract of `text`, as whoosh.highlight.Fragment has it: `startchar` and `endchar`
    (-1 meaning the end of the text) bound it, `matches` are its matched words in text order,
    and `matched_terms` is the set of their terms."""

    text: str
    matches: Sequence[Match]
    startchar: int = 0
    endchar: int = -1
    matched_terms: set[str] = field(init=False)

    def __post_init__(self) -> None:
        if self.endchar == -1:
            self.endchar = len(self.text)
        self.matched_terms = {match.text for match in self.matches}


def whole_fragments(text: str, matcher: Matcher | None) -> list[Fragment]:
    """WholeFragmenter: the whole text as one fragment, if any word in it matched."""
    if matcher is None:
        return []
    words, starts, ends = word_bounds(text)
    hits = _hits(words, matcher)
    if not hits:
        return []
    limit = bisect.bisect_right(ends, DEFAULT_CHARLIMIT)
    matches = [Match(hits[w], starts[i], ends[i]) for i, w in enumerate(words[:limit]) if w in hits]
    # Whoosh's BasicFragmentScorer gives a fragment without matches 0, below its minscore 1.
    return [Fragment(text, matches)] if matches else []


def context_fragments(text: str, matcher: Matcher | None) -> list[Fragment]:
    """ContextFragmenter(FRAGMENT_CHARS, FRAGMENT_CONTEXT), then the best ABSTRACT_FRAGMENTS.

    The fragments of Whoosh's `ContextFragmenter.fragment_tokens` (kept in step with it by
    tests/whoosh/test_search_highlight.py), without walking every word: outside a fragment,
    unmatched words only fill a queue of context starts, so the walk jumps to the next matched
    word and finds where its context begins by bisection.
    """
    if matcher is None:
        return []
    words, starts, ends = word_bounds(text)
    hits = _hits(words, matcher)
    if not hits:
        return []
    # Whoosh stops at the first word that ends past its character limit.
    limit = bisect.bisect_right(ends, DEFAULT_CHARLIMIT)
    matched_at = [i for i, word in enumerate(words[:limit]) if word in hits]
    maxchars, surround = FRAGMENT_CHARS, FRAGMENT_CONTEXT
    fragments: list[Fragment] = []
    resume = 0  # the first word after the last fragment
    for m in matched_at:
        if m < resume:
            continue
        # Whoosh's queue of context starts holds, of the words since the last fragment, those
        # starting at most `surround` characters before the end of the word before the match.
        context = bisect.bisect_left(starts, ends[m - 1] - surround, resume, m) if m else m
        first = starts[context] if context < m else None
        countdown, length, matches = -1, 0, []
        for j in range(m, limit):
            startchar, endchar = starts[j], ends[j]
            width = endchar - startchar
            if length + width > maxchars:
                countdown = 0
            elif words[j] in hits:
                countdown = surround
                if first is None:  # no context before the first match: more after it
                    first = startchar
                    countdown += surround
                matches.append(Match(hits[words[j]], startchar, endchar))
            length += width
            countdown -= width
            if countdown <= 0:
                fragments.append(_fragment(text, matches, first, endchar))
                # A countdown ending at exactly 0 leaves Whoosh in the fragment for one more
                # word: an unmatched one closes an empty fragment and is nobody's context.
                swallowed = countdown == 0 and j + 1 < limit and words[j + 1] not in hits
                resume = j + 2 if swallowed else j + 1
                break
        else:
            # The text (or the character limit) ended inside the fragment: Whoosh ends it at
            # the last word it looked at, the one past the limit included.
            last = ends[limit] if limit < len(words) else ends[-1]
            fragments.append(_fragment(text, matches, first, last))
            break
    # Whoosh breaks ties between equally scored fragments by object id (memory address), so
    # its choice varies from run to run; here the earlier fragment wins.
    best = heapq.nlargest(
        ABSTRACT_FRAGMENTS, fragments, key=lambda f: (score_fragment(f), -f.startchar)
    )
    chosen = [f for f in best if score_fragment(f) >= 1]
    chosen.sort(key=lambda f: f.startchar)
    return chosen


def score_fragment(fragment: Fragment) -> float:
    """Whoosh's BasicFragmentScorer, every match boosted 1: matched words, times 100 per
    distinct matched term."""
    return len(fragment.matches) * ((len(fragment.matched_terms) * 100) or 1)


def _hits(words: list[str], matcher: Matcher) -> Mapping[str, str]:
    """The distinct raw words of a text that the query matches, with their terms: one call of
    the matcher per text."""
    return matcher(set(words)) if words else {}


def _fragment(text: str, matches: list[Match], first: int | None, endchar: int) -> Fragment:
    # Whoosh's mkfrag: a fragment without a recorded start begins at its first match.
    startchar = matches[0].startchar if first is None and matches else (first or 0)
    return Fragment(text, matches, startchar=startchar, endchar=endchar)


# -- formatting -----------------------------------------------------------------------------------
class MarkFormatter:
    """Wraps matches in <mark>, escapes everything else and marks cut edges with an ellipsis.

    It follows whoosh.highlight.Formatter's protocol (`format`, `format_fragment`,
    `format_token`, calling it with the text and fragments) and reads of a fragment only `text`,
    `matches`, `startchar` and `endchar`, and of a match `startchar` and `endchar` (and `text`
    with `replace`): Whoosh's own fragments format the same.
    """

    between = f" {ELLIPSIS} "

    def _text(self, text: str) -> str:
        return escape(text, quote=False)

    def format_token(self, text: str, token: Match, replace: bool = False) -> str:
        """A matched word in <mark>: its characters, or with `replace` its term."""
        word = token.text if replace else text[token.startchar : token.endchar]
        return f"<mark>{escape(word, quote=False)}</mark>"

    def format_fragment(self, fragment: Fragment, replace: bool = False) -> str:
        return self._format_fragment(fragment, _math_spans(fragment.text), replace)

    def _format_fragment(
        self, fragment: Fragment, math: list[tuple[int, int]], replace: bool
    ) -> str:
        text = fragment.text
        output = []
        index = fragment.startchar
        for token in fragment.matches:
            if token.startchar is None or token.startchar < index:
                continue
            if any(start <= token.startchar < end for start, end in math):
                continue
            output.append(self._text(text[index : token.startchar]))
            output.append(self.format_token(text, token, replace))
            index = token.endchar
        output.append(self._text(text[index : fragment.endchar]))
        return "".join(output).strip()

    def format(self, fragments: Sequence[Fragment], replace: bool = False) -> str:
        if not fragments:
            return ""
        text = fragments[0].text
        math = _math_spans(text)  # once per text, not once per fragment
        body = self.between.join(self._format_fragment(f, math, replace) for f in fragments)
        # Only a cut that drops words earns an ellipsis; stray punctuation is kept instead.
        before, after = text[: fragments[0].startchar], text[fragments[-1].endchar :]
        before = ELLIPSIS if _WORD.search(before) else self._text(before.strip())
        after = ELLIPSIS if _WORD.search(after) else self._text(after.strip())
        return f"{before}{body}{after}"

    def __call__(self, text: str, fragments: Sequence[Fragment]) -> str:
        # Whoosh's Formatter.__call__: the fragments carry the text.
        return self.format(fragments)


def _math_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in _MATH.finditer(text)]


_FORMATTER = MarkFormatter()


def format_fragments(text: str, fragments: Sequence[Fragment]) -> str:
    """The highlighted HTML of `text`'s fragments, or "" without fragments."""
    return _FORMATTER(text, fragments) if fragments else ""


# -- the highlights -------------------------------------------------------------------------------
def highlight_record(record: Record, matcher: Matcher | None) -> dict[str, str]:
    """Escaped HTML of the title (whole) and abstract (fragments), matched words in <mark>."""
    return {
        "title": highlight_title(record.title, matcher),
        "abstract": highlight_abstract(record.abstract, matcher),
    }


def highlight_title(title: str, matcher: Matcher | None) -> str:
    """The whole title, its matched words in <mark>; escaped plain text if none matched."""
    marked = format_fragments(title, whole_fragments(title, matcher)) if matcher is not None else ""
    return marked or escape(title, quote=False)


def highlight_abstract(abstract: str, matcher: Matcher | None) -> str:
    """The best fragments of the abstract, matched words in <mark>, cut edges marked with an
    ellipsis; the escaped lead of the abstract if none of its words matched."""
    if not abstract:
        return ""
    marked = (
        format_fragments(abstract, context_fragments(abstract, matcher))
        if matcher is not None
        else ""
    )
    return marked or escape(lead(abstract), quote=False)


def lead(text: str, limit: int = LEAD_CHARS) -> str:
    """The start of a text, cut at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + ELLIPSIS
