"""Plain query text -> the query Whoosh's parser would build from it, without running the parser.

Nearly every real query is a few plain words ("graph neural networks"), and Whoosh's pure-Python
parser spends 0.5-1 ms on one (a tenth of a faceted, highlighted search): its taggers try every
plugin at every character, its filters walk the node tree once per plugin, and `normalize`
deep-copies every term. For a text of ASCII letters, digits and whitespace alone none of that
syntax can apply, and the parse comes down to this: each word (the text between two whitespace
runs, which gives its startchar/endchar) is analysed by each search field as
`QueryParser.term_query` does (`process_text` in query mode, stop words removed) and becomes a
Term with the field's boost; `normalize` then flattens the OR groups into one, drops duplicates
(the first one stays) and words no field kept, and unwraps a single term.

`PlainParser.parse` builds that result directly and returns None for anything else, which then
goes to the parser. tests/test_plain_queries.py checks on random plain texts, for every choice of
search fields, that the result equals the parser's: same tree, classes, boosts and every term's
startchar/endchar (did-you-mean and highlighting read them).
"""

from __future__ import annotations

import re

from whoosh import query
from whoosh.qparser import MultifieldPlugin, OrGroup, QueryParser

# The only characters of a plain text: no quote, bracket, colon, wildcard, tilde, caret, no
# non-ASCII letter (whose analysis may differ) and no other whitespace than clean() leaves.
_PLAIN = re.compile(r"[A-Za-z0-9 \t\n]*")
_WORD = re.compile(r"[A-Za-z0-9]+")
# Words the default parser's plugins read as syntax (case-sensitive, as their patterns are):
# OperatorsPlugin's AND, OR, ANDNOT, ANDMAYBE, NOT, REQUIRE; RangePlugin's TO only counts between
# brackets, which plain text has none of, but is kept out all the same.
OPERATOR_WORDS = frozenset({"AND", "OR", "ANDNOT", "ANDMAYBE", "NOT", "REQUIRE", "TO"})
# Analysed words remembered: queries repeat words, and Whoosh's analyzer chain costs ~15 us a
# word and field. Bounded like analysis.py's cache: a miss only costs the analysis again.
_MAX_ANALYSED = 100_000


class PlainParser:
    """The fast path beside one MultifieldParser (OR group, Term leaves) of queries.py."""

    def __init__(self, parser: QueryParser) -> None:
        (multifield,) = [p for p in parser.plugins if isinstance(p, MultifieldPlugin)]
        # What this module reproduces; another parser set-up needs its own reasoning.
        if not (parser.group is OrGroup and multifield.group is OrGroup):
            raise ValueError("PlainParser reproduces OR-grouped multifield parsers only")
        if parser.termclass is not query.Term:
            raise ValueError("PlainParser reproduces parsers of Term queries only")
        self._fields = []
        for name in multifield.fieldnames:
            field = parser.schema[name]
            if field.self_parsing():
                raise ValueError(f"field {name!r} parses its own queries")
            self._fields.append((name, field, multifield.boosts.get(name, 1.0)))
        self._analysed: dict[str, tuple[tuple[str, str, float], ...]] = {}

    def parse(self, text: str) -> query.Query | None:
        """What the parser makes of `text` if it is plain words, else None."""
        if _PLAIN.fullmatch(text) is None:
            return None
        # Keyed by what Term equality compares: normalize keeps the first of equal terms.
        terms: dict[tuple[str, str, float], query.Term] = {}
        for word in _WORD.finditer(text):
            kept = self._analysed.get(word.group())
            if kept is None:
                kept = self._analyse(word.group())
                if kept is None:
                    return None
            for key in kept:
                if key not in terms:
                    name, analysed, boost = key
                    term = query.Term(name, analysed, boost=boost)
                    term.startchar, term.endchar = word.span()
                    terms[key] = term
        if not terms:
            return query.NullQuery
        if len(terms) == 1:
            return next(iter(terms.values()))
        return query.Or(list(terms.values()))

    def _analyse(self, raw: str) -> tuple[tuple[str, str, float], ...] | None:
        """(field, term, boost) of each search field that keeps the word; None if the word is
        one the fast path leaves to the parser."""
        if raw in OPERATOR_WORDS:
            return None
        kept = []
        for name, field, boost in self._fields:
            # Exactly the call QueryParser.term_query makes for a word.
            analysed = list(field.process_text(raw, mode="query", tokenize=True, removestops=True))
            if len(analysed) > 1:  # the parser would join the parts (multitoken_query)
                return None
            kept.extend((name, term_text, boost) for term_text in analysed)
        if len(self._analysed) >= _MAX_ANALYSED:
            self._analysed.clear()
        self._analysed[raw] = kept = tuple(kept)
        return kept
