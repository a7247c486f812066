"""Highlighted title and abstract: escaped HTML whose only tags are `<mark>` around matches."""

from __future__ import annotations

import re
from collections.abc import Collection
from html import escape

from whoosh.analysis import Analyzer
from whoosh.highlight import (
    ContextFragmenter,
    Formatter,
    Fragment,
    WholeFragmenter,
    get_text,
    highlight,
)

from searchsvc.backends.whoosh.schema import text_analyzer
from searchsvc.records import Record

ELLIPSIS = "…"
FRAGMENT_CHARS = 220  # longest abstract fragment
FRAGMENT_CONTEXT = 70  # characters of context around the matched words
ABSTRACT_FRAGMENTS = 2
LEAD_CHARS = 240  # the start of the abstract shown when none of its words matched
# TeX math: a <mark> inside it would break the rendering on the page.
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)

_WORD = re.compile(r"\w")
_ANALYZER: Analyzer = text_analyzer()


class MarkFormatter(Formatter):
    """Wraps matches in <mark>, escapes everything else and marks cut edges with an ellipsis."""

    between = f" {ELLIPSIS} "

    def _text(self, text: str) -> str:
        return escape(text, quote=False)

    def format_token(self, text: str, token, replace: bool = False) -> str:
        return f"<mark>{escape(get_text(text, token, replace), quote=False)}</mark>"

    def format_fragment(self, fragment: Fragment, replace: bool = False) -> str:
        text = fragment.text
        math = [m.span() for m in _MATH.finditer(text)]
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
        body = self.between.join(self.format_fragment(f, replace) for f in fragments)
        # Only a cut that drops words earns an ellipsis; stray punctuation is kept instead.
        before, after = text[: fragments[0].startchar], text[fragments[-1].endchar :]
        before = ELLIPSIS if _WORD.search(before) else self._text(before.strip())
        after = ELLIPSIS if _WORD.search(after) else self._text(after.strip())
        return f"{before}{body}{after}"


_FORMATTER = MarkFormatter()
_WHOLE = WholeFragmenter()
_CONTEXT = ContextFragmenter(maxchars=FRAGMENT_CHARS, surround=FRAGMENT_CONTEXT)


def highlight_record(record: Record, terms: Collection[str]) -> dict[str, str]:
    """Escaped HTML of the title (whole) and abstract (fragments), matched words in <mark>.

    `terms` are analysed index terms (stems), as the query holds them.
    """
    return {
        "title": highlight_title(record.title, terms),
        "abstract": highlight_abstract(record.abstract, terms),
    }


def highlight_title(title: str, terms: Collection[str]) -> str:
    marked = _highlight(title, terms, _WHOLE, top=1) if terms else ""
    return marked or escape(title, quote=False)


def highlight_abstract(abstract: str, terms: Collection[str]) -> str:
    if not abstract:
        return ""
    marked = _highlight(abstract, terms, _CONTEXT, top=ABSTRACT_FRAGMENTS) if terms else ""
    return marked or escape(lead(abstract), quote=False)


def lead(text: str, limit: int = LEAD_CHARS) -> str:
    """The start of a text, cut at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + ELLIPSIS


def _highlight(text: str, terms: Collection[str], fragmenter, top: int) -> str:
    return highlight(text, frozenset(terms), _ANALYZER, fragmenter, _FORMATTER, top=top)
