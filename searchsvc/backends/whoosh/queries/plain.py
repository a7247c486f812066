"""Plain words -> the Whoosh query the general compiler builds for them, without building it.

Nearly every real query is a few plain words ("graph neural networks"), whose tree is an OR of
unfielded words. The general compiler makes one OR group per word with a term per ranked field,
then Whoosh's `normalize` flattens the groups into one, drops duplicates (the first one stays)
and the words no field kept (stop words), and unwraps a single term: `normalize` alone
deep-copies every term, a cost long queries pay on every search. For words of ASCII letters
and digits, the result comes down to this: each word is analysed by each ranked field as
`QueryParser.term_query` does (`process_text` in query mode, stop words removed) and becomes a
Term with the field's boost and the word's characters.

`PlainWords.compile` builds that result directly and returns None for any other tree, which then
goes to the general compiler. tests/whoosh/test_plain_queries.py checks on random plain texts,
for every choice of ranked fields, that the result equals the general compiler's and the one
Whoosh's own query parser made of the text: same tree, classes, boosts and every term's
startchar/endchar (did-you-mean and highlighting read them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from whoosh import query
from whoosh.fields import Schema

from searchsvc.domain import querylang as ql

_WORD = re.compile(r"[A-Za-z0-9]+")
# Analysed words remembered: queries repeat words, and Whoosh's analyzer chain costs a good part
# of the compile time of a word. Bounded: a miss only costs the analysis again.
_MAX_ANALYSED = 100_000


class PlainWords:
    """The fast path for one choice of ranked fields (and their boosts)."""

    def __init__(
        self, schema: Schema, search_fields: Sequence[str], boosts: Mapping[str, float]
    ) -> None:
        self._fields = []
        for name in search_fields:
            field = schema[name]
            if field.self_parsing():
                raise ValueError(f"field {name!r} parses its own queries")
            self._fields.append((name, field, boosts.get(name, 1.0)))
        self._analysed: dict[str, tuple[tuple[str, str, float], ...]] = {}

    def compile(self, root: ql.Node) -> query.Query | None:
        """The query of a tree of plain words, or None for any other tree."""
        words = _plain_words(root)
        if words is None:
            return None
        # Keyed by what Term equality compares: normalize keeps the first of equal terms.
        terms: dict[tuple[str, str, float], query.Term] = {}
        for word in words:
            kept = self._analysed.get(word.text)
            if kept is None:
                kept = self._analyse(word.text)
                if kept is None:
                    return None
            for key in kept:
                if key not in terms:
                    name, analysed, boost = key
                    term = query.Term(name, analysed, boost=boost)
                    term.startchar, term.endchar = word.start, word.end
                    terms[key] = term
        if not terms:
            return query.NullQuery
        if len(terms) == 1:
            return next(iter(terms.values()))
        return query.Or(list(terms.values()))

    def _analyse(self, raw: str) -> tuple[tuple[str, str, float], ...] | None:
        """(field, term, boost) of each ranked field that keeps the word; None if a field
        splits it in parts (the general compiler then groups them)."""
        kept: list[tuple[str, str, float]] = []
        for name, field, boost in self._fields:
            # Exactly the call QueryParser.term_query makes for a word.
            analysed = list(field.process_text(raw, mode="query", tokenize=True, removestops=True))
            if len(analysed) > 1:
                return None
            kept.extend((name, term_text, boost) for term_text in analysed)
        if len(self._analysed) >= _MAX_ANALYSED:
            self._analysed.clear()
        self._analysed[raw] = result = tuple(kept)
        return result


def _plain_words(root: ql.Node) -> Sequence[ql.Word] | None:
    """The words of a tree that is a plain word or an OR of them, else None."""
    if isinstance(root, ql.Or):
        if root.boost != 1.0:
            return None
        children = root.children
    else:
        children = (root,)
    for child in children:
        if not (
            type(child) is ql.Word
            and child.field is None
            and child.boost == 1.0
            and _WORD.fullmatch(child.text)
        ):
            return None
    return children  # type: ignore[return-value]
