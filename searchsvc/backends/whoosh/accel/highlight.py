"""Highlighted title and abstract: escaped HTML whose only tags are `<mark>` around matches.

The fragments are the ones Whoosh's `highlight()` picks with a `ContextFragmenter` (or a
`WholeFragmenter` for titles) and its `BasicFragmentScorer`, but computed from the one-pass word
spans of analysis.py instead of Whoosh's Token stream: re-analysing each hit's abstract through
Whoosh's filter chain was a large part of a faceted, highlighted search.
tests/whoosh/test_search_highlight.py checks the output against Whoosh's own `highlight()`.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Collection
from dataclasses import dataclass
from html import escape

from whoosh.highlight import DEFAULT_CHARLIMIT, Formatter, Fragment, get_text

from searchsvc.backends.whoosh.analysis import matched_words, word_bounds
from searchsvc.records import Record

ELLIPSIS = "…"
FRAGMENT_CHARS = 220  # longest abstract fragment
FRAGMENT_CONTEXT = 70  # characters of context around the matched words
ABSTRACT_FRAGMENTS = 2
LEAD_CHARS = 240  # the start of the abstract shown when none of its words matched
# TeX math: a <mark> inside it would break the rendering on the page.
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)

_WORD = re.compile(r"\w")


class MarkFormatter(Formatter):
    """Wraps matches in <mark>, escapes everything else and marks cut edges with an ellipsis."""

    between = f" {ELLIPSIS} "

    def _text(self, text: str) -> str:
        return escape(text, quote=False)

    def format_token(self, text: str, token, replace: bool = False) -> str:
        return f"<mark>{escape(get_text(text, token, replace), quote=False)}</mark>"

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

    def format(self, fragments: list[Fragment], replace: bool = False) -> str:
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


def _math_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in _MATH.finditer(text)]


_FORMATTER = MarkFormatter()


def highlight_record(record: Record, terms: Collection[str]) -> dict[str, str]:
    """Escaped HTML of the title (whole) and abstract (fragments), matched words in <mark>.

    `terms` are analysed index terms (stems), as the query holds them.
    """
    return {
        "title": highlight_title(record.title, terms),
        "abstract": highlight_abstract(record.abstract, terms),
    }


def highlight_title(title: str, terms: Collection[str]) -> str:
    marked = _format(title, _whole_fragments(title, frozenset(terms))) if terms else ""
    return marked or escape(title, quote=False)


def highlight_abstract(abstract: str, terms: Collection[str]) -> str:
    if not abstract:
        return ""
    marked = _format(abstract, _context_fragments(abstract, frozenset(terms))) if terms else ""
    return marked or escape(lead(abstract), quote=False)


def lead(text: str, limit: int = LEAD_CHARS) -> str:
    """The start of a text, cut at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + ELLIPSIS


@dataclass(slots=True)
class _Match:
    """A matched word, with what Whoosh's Fragment, scorer and formatter read of a Token."""

    text: str
    startchar: int
    endchar: int
    boost: float = 1.0


def _format(text: str, fragments: list[Fragment]) -> str:
    return _FORMATTER(text, fragments) if fragments else ""


def _whole_fragments(text: str, terms: frozenset[str]) -> list[Fragment]:
    """WholeFragmenter: the whole text as one fragment, if any word in it matched."""
    words, starts, ends = word_bounds(text)
    limit = bisect.bisect_right(ends, DEFAULT_CHARLIMIT)
    hits = _hits(words, terms)
    matches = [
        _Match(hits[w], starts[i], ends[i]) for i, w in enumerate(words[:limit]) if w in hits
    ]
    # Whoosh's BasicFragmentScorer gives a fragment without matches 0, below its minscore 1.
    return [Fragment(text, matches)] if matches else []


def _context_fragments(text: str, terms: frozenset[str]) -> list[Fragment]:
    """ContextFragmenter(FRAGMENT_CHARS, FRAGMENT_CONTEXT), then the best ABSTRACT_FRAGMENTS.

    The fragments of Whoosh's `ContextFragmenter.fragment_tokens` (kept in step with it by
    tests/whoosh/test_search_highlight.py), without walking every word: outside a fragment,
    unmatched words only fill a queue of context starts, so the walk jumps to the next matched
    word and finds where its context begins by bisection.
    """
    words, starts, ends = word_bounds(text)
    hits = _hits(words, terms)
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
                matches.append(_Match(hits[words[j]], startchar, endchar))
            length += width
            countdown -= width
            if countdown <= 0:
                fragments.append(_fragment(text, matches, first, endchar))
                resume = j + 1
                break
        else:
            # The text (or the character limit) ended inside the fragment: Whoosh ends it at
            # the last word it looked at, the one past the limit included.
            last = ends[limit] if limit < len(words) else ends[-1]
            fragments.append(_fragment(text, matches, first, last))
            break
    # Whoosh breaks ties between equally scored fragments by object id (memory address), so
    # its choice varies from run to run; here the earlier fragment wins.
    best = heapq.nlargest(ABSTRACT_FRAGMENTS, fragments, key=lambda f: (_score(f), -f.startchar))
    chosen = [f for f in best if _score(f) >= 1]
    chosen.sort(key=lambda f: f.startchar)
    return chosen


def _hits(words: list[str], terms: frozenset[str]) -> dict[str, str]:
    """The distinct raw words whose analysed form is a query term, with that term."""
    return matched_words(words, terms)


def _fragment(text: str, matches: list[_Match], first: int | None, endchar: int) -> Fragment:
    # Whoosh's mkfrag: a fragment without a recorded start begins at its first match.
    startchar = matches[0].startchar if first is None and matches else (first or 0)
    return Fragment(text, matches, startchar=startchar, endchar=endchar)


def _score(fragment: Fragment) -> float:
    # BasicFragmentScorer: matched words, times 100 per distinct matched term.
    return len(fragment.matches) * ((len(fragment.matched_terms) * 100) or 1)
