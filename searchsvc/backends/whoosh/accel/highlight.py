"""Highlighted title and abstract of the Whoosh engine: searchsvc.backends.shared.highlighting's,
with the words matched as Whoosh's highlighter matches them.

The fragmenting and formatting live in the engine-neutral searchsvc/backends/shared/highlighting.py;
this module only supplies its matcher, which maps a text's distinct raw words to their analysed
forms (analysis.py's `matched_words`) and keeps those that are query terms.
tests/whoosh/test_search_highlight.py checks the output against Whoosh's own `highlight()`.
"""

from __future__ import annotations

from collections.abc import Collection

from whoosh.highlight import Formatter

from searchsvc.backends.shared import highlighting
from searchsvc.backends.shared.highlighting import (
    ABSTRACT_FRAGMENTS,
    DEFAULT_CHARLIMIT,
    ELLIPSIS,
    FRAGMENT_CHARS,
    FRAGMENT_CONTEXT,
    LEAD_CHARS,
    Fragment,
    Matcher,
    format_fragments,
    lead,
)
from searchsvc.backends.whoosh.analysis import matched_words
from searchsvc.domain.records import Record

__all__ = [
    "ABSTRACT_FRAGMENTS",
    "DEFAULT_CHARLIMIT",
    "ELLIPSIS",
    "FRAGMENT_CHARS",
    "FRAGMENT_CONTEXT",
    "LEAD_CHARS",
    "MarkFormatter",
    "highlight_abstract",
    "highlight_record",
    "highlight_title",
    "lead",
    "term_matcher",
]


class MarkFormatter(highlighting.MarkFormatter, Formatter):
    """searchsvc.backends.shared.highlighting's formatter as a Whoosh Formatter, for Whoosh's own
    highlight()."""


def term_matcher(terms: Collection[str]) -> Matcher | None:
    """The matcher of analysed index terms (stems, as the query holds them); None for none."""
    if not terms:
        return None
    termset = frozenset(terms)
    return lambda words: matched_words(words, termset)


def highlight_record(record: Record, terms: Collection[str]) -> dict[str, str]:
    """Escaped HTML of the title (whole) and abstract (fragments), matched words in <mark>.

    `terms` are analysed index terms (stems), as the query holds them.
    """
    return highlighting.highlight_record(record, term_matcher(terms))


def highlight_title(title: str, terms: Collection[str]) -> str:
    return highlighting.highlight_title(title, term_matcher(terms))


def highlight_abstract(abstract: str, terms: Collection[str]) -> str:
    return highlighting.highlight_abstract(abstract, term_matcher(terms))


def _format(text: str, fragments: list[Fragment]) -> str:
    return format_fragments(text, fragments)


def _whole_fragments(text: str, terms: frozenset[str]) -> list[Fragment]:
    return highlighting.whole_fragments(text, term_matcher(terms))


def _context_fragments(text: str, terms: frozenset[str]) -> list[Fragment]:
    return highlighting.context_fragments(text, term_matcher(terms))
