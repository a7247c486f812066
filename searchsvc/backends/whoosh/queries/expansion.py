"""Parsed query -> runnable query: wildcard and fuzzy words become a bounded set of index terms.

Whoosh's own Prefix/Wildcard/FuzzyTerm queries expand to every matching term of the field
(`a*` to thousands, `*ing` after walking the whole term table); here each becomes an OR of at
most MAX_EXPANSION real terms, found in the in-memory lexicon, chosen by document frequency
within a postings budget.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator

from whoosh import query
from whoosh.reading import IndexReader

from searchsvc.backends.shared.expansion import (
    MAX_CANDIDATES,
    MAX_EXPANSION,
    MAX_EXPANSION_POSTINGS,
    MIN_LITERAL_PREFIX,
    most_frequent_first,
)
from searchsvc.backends.whoosh.accel.lexicon import Lexicon
from searchsvc.domain.querylang.limits import MAX_FUZZY_DISTANCE
from searchsvc.domain.texts import fold

# Fields whose values are exact facet values, looked up case- and accent-insensitively.
EXACT_FIELDS = ("category",)

# Limits on expansion, the same on every engine (the query language limits how many wildcard
# and fuzzy words there are).
FUZZY_PREFIX = 1  # fuzzy matches share the first letter: a typo there is rare, the walk far shorter

_WORD = re.compile(r"\w+")

LexiconOf = Callable[[str], Lexicon]


class QueryRewriter:
    """Replaces wildcard and fuzzy words by a bounded set of real index terms and resolves
    exact values. (How many such words a query may have is the query language's limit.)"""

    def __init__(self, reader: IndexReader, exact_values, lexicon: LexiconOf, text: str) -> None:
        self.reader = reader
        self.exact_values = exact_values
        self.lexicon = lexicon
        self.text = text

    def rewrite(self, q: query.Query) -> query.Query:
        if isinstance(q, query.Every):
            # Every("field") walks every posting of the field; all documents is what `*` means.
            return query.Every()
        if isinstance(q, query.MultiTerm):
            texts = self._fuzzy(q) if isinstance(q, query.FuzzyTerm) else self._pattern(q)
            return _any_of(q.fieldname, texts, q.boost)
        if isinstance(q, query.Term) and q.fieldname in EXACT_FIELDS:
            values = self.exact_values(q.fieldname, q.text)
            return _any_of(q.fieldname, values, q.boost) if values else query.NullQuery
        if q.is_leaf():
            return q
        return q.apply(self.rewrite)

    def _pattern(self, q: query.MultiTerm) -> list[str]:
        field = q.fieldname
        fieldobj = self.reader.schema[field]
        texts = set(_pattern_terms(self.lexicon(field), q))
        if fieldobj.separate_spelling():
            # Index terms are stems ("congest"), so `congest?on` is matched against the
            # unstemmed words kept for spelling, whose stems are then searched.
            words = _pattern_terms(self.lexicon(fieldobj.spelling_fieldname(field)), q)
            texts.update(stem for word in words for stem in fieldobj.process_text(word))
        # A short literal start (`a*`, `*ing`) means "a sample", not "the commonest word".
        literal = re.split(r"[*?]", q.text, maxsplit=1)[0]
        return self._most_frequent(field, texts, keep_first=len(literal) >= MIN_LITERAL_PREFIX)

    def _fuzzy(self, q: query.FuzzyTerm) -> list[str]:
        field = q.fieldname
        fieldobj = self.reader.schema[field]
        distance = min(q.maxdist, MAX_FUZZY_DISTANCE)
        prefix = max(q.prefixlength, FUZZY_PREFIX)
        # The parser has analysed the word (stemmed it for text fields), so it is compared
        # with the field's own terms first.
        stems = set(self.lexicon(field).within(q.text, distance, prefix)[:MAX_CANDIDATES])
        original = self._typed_word(q) if fieldobj.separate_spelling() else None
        if original:
            # Stemming can move a typo further away ("schedulng" vs "schedul"): also compare
            # the word as typed with the unstemmed spelling words.
            spelling = self.lexicon(fieldobj.spelling_fieldname(field))
            for word in spelling.within(original, distance, prefix)[:MAX_CANDIDATES]:
                stems.update(fieldobj.process_text(word, mode="query"))
        return self._most_frequent(field, stems)

    def _typed_word(self, q: query.Query) -> str | None:
        start, end = getattr(q, "startchar", None), getattr(q, "endchar", None)
        if start is None or end is None:
            return None
        typed = re.sub(r"^\w+:|~\d*$", "", self.text[start:end])
        return fold(typed) if _WORD.fullmatch(typed) else None

    def _most_frequent(
        self, field: str, texts: Iterable[str], keep_first: bool = True
    ) -> list[str]:
        return most_frequent(
            self.reader, field, texts, MAX_EXPANSION, MAX_EXPANSION_POSTINGS, keep_first
        )


def most_frequent(
    reader: IndexReader,
    field: str,
    texts: Iterable[str],
    limit: int,
    max_postings: int | None = None,
    keep_first: bool = True,
) -> list[str]:
    """The `limit` of `texts` in most documents of `field` (absent ones dropped).

    With `max_postings`, terms are taken most frequent first only while their documents add
    up to at most that many; the most frequent term is taken anyway if `keep_first`.
    """
    present = ((reader.doc_frequency(field, t), t) for t in texts)
    return most_frequent_first(present, limit, max_postings, keep_first)


def _pattern_terms(lexicon: Lexicon, q: query.MultiTerm) -> Iterator[str]:
    found = lexicon.prefixed(q.text) if isinstance(q, query.Prefix) else lexicon.matching(q.text)
    return itertools.islice(found, MAX_CANDIDATES)


def _any_of(field: str, texts: list[str], boost: float) -> query.Query:
    if not texts:
        return query.NullQuery
    return query.Or([query.Term(field, text, boost=boost) for text in sorted(texts)])
