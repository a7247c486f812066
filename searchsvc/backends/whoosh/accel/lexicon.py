"""The terms of one field in memory, for wildcard, fuzzy, autocomplete and spelling lookups.

Walking Whoosh's on-disk term table costs a seek per step, and a leading wildcard or an
edit-distance automaton walks much of it per query. A sorted list of the field's terms, read
once per index snapshot, answers the same questions in memory, by bisection.
Edit distances are computed by rapidfuzz (C++) over the terms sharing the word's first letters,
rather than by stepping Whoosh's Levenshtein automaton, whose construction alone (in Python, for
every word) was the slowest part of a did-you-mean.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterator

from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import extract
from whoosh.reading import IndexReader, TermNotFound

from searchsvc.backends.shared import expansion
from searchsvc.backends.whoosh.accel.term_tables import field_terms


class Lexicon:
    """The sorted terms of one field of one index snapshot."""

    def __init__(self, terms: list[str]) -> None:
        self.terms = terms  # sorted, distinct

    @classmethod
    def read(cls, reader: IndexReader, field: str) -> Lexicon:
        """The field's terms as the index holds them."""
        try:
            return cls(field_terms(reader, field))
        except TermNotFound:  # a field no document has
            return cls([])

    def __len__(self) -> int:
        return len(self.terms)

    def prefixed(self, prefix: str) -> Iterator[str]:
        """Terms starting with `prefix`, in order."""
        position = bisect.bisect_left(self.terms, prefix)
        for term in itertools.islice(self.terms, position, None):
            if not term.startswith(prefix):
                return
            yield term

    def matching(self, pattern: str) -> Iterator[str]:
        """Terms matching a wildcard pattern (`*` any run, `?` one character)."""
        literal = re.split(r"[*?]", pattern, maxsplit=1)[0]
        regex = re.compile(
            "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
        )
        # Without a literal start, the first terms only, as on every engine (read here, at
        # call time, so that a test's setting reaches it).
        scan = expansion.MAX_LEXICON_SCAN
        candidates = self.prefixed(literal) if literal else itertools.islice(self.terms, scan)
        return (term for term in candidates if regex.fullmatch(term))

    def within(
        self,
        word: str,
        distance: int,
        prefix: int = 1,
        scorer: Callable[..., int] = Levenshtein.distance,
    ) -> list[str]:
        """Terms within a Levenshtein distance (or a rapidfuzz `scorer`'s) of `word` sharing its
        first `prefix` characters.

        In order; the same terms as Whoosh's `levenshtein_automaton(word, distance, prefix)`.
        (Two strings with a common prefix are as far apart as what follows the prefix.)
        """
        start = word[: min(prefix, len(word))]
        low = bisect.bisect_left(self.terms, start)
        high = low
        if start:
            high = bisect.bisect_left(self.terms, start + _AFTER_EVERY_CHARACTER, low)
        candidates = self.terms[low:high] if start else self.terms
        found = extract(word, candidates, scorer=scorer, score_cutoff=distance, limit=None)
        return sorted(term for term, _, _ in found)


# Sorts after any continuation of a prefix, so [prefix, prefix + this) holds all its extensions.
_AFTER_EVERY_CHARACTER = "\U0010ffff"
