"""The terms of one field in memory, for wildcard, fuzzy, autocomplete and spelling lookups.

Walking Whoosh's on-disk term table costs a seek per step: a leading wildcard or an
edit-distance automaton took seconds per query on a loaded machine. A sorted list of the
field's terms, read once per index snapshot, answers the same questions in milliseconds.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from functools import lru_cache

from whoosh.automata.fsa import DFA, find_all_matches
from whoosh.automata.lev import levenshtein_automaton
from whoosh.reading import IndexReader, TermNotFound

# Terms a leading wildcard may test against its pattern.
MAX_LEXICON_SCAN = 200_000


class Lexicon:
    """The sorted terms of one field of one index snapshot."""

    def __init__(self, reader: IndexReader, field: str) -> None:
        try:
            self.terms = [term.decode("utf-8", "replace") for term in reader.lexicon(field)]
        except TermNotFound:  # a field no document has
            self.terms = []

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
        candidates = (
            self.prefixed(literal) if literal else itertools.islice(self.terms, MAX_LEXICON_SCAN)
        )
        return (term for term in candidates if regex.fullmatch(term))

    def within(self, word: str, distance: int, prefix: int = 1) -> list[str]:
        """Terms within an edit distance of `word`, sharing its first `prefix` characters."""
        if not self.terms:
            return []
        return list(find_all_matches(_automaton(word, distance, prefix), self._next_term))

    def _next_term(self, text: str) -> str | None:
        position = bisect.bisect_left(self.terms, text)
        return self.terms[position] if position < len(self.terms) else None


@lru_cache(maxsize=256)
def _automaton(word: str, distance: int, prefix: int) -> DFA:
    # Building the automaton for distance 2 takes tens of milliseconds: reuse it.
    return levenshtein_automaton(word, distance, min(prefix, len(word))).to_dfa()
