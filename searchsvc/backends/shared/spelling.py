"""When did-you-mean proposes a correction, and which, the same on every engine.

Each engine knows which of a query's words found records and finds the indexed words near an
unknown one (with the records holding each); this module decides the rest: which words may be
corrected, how far a correction may be from the typed word, and which candidate wins.

The figures behind the constants are in benchmarks/README.md (`benchmarks/did_you_mean.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from rapidfuzz.distance import OSA, Levenshtein

from searchsvc.domain.texts import fold

# At most one edit per four letters of the typed word, and two in all. Shorter words are
# acronyms and symbols (`tlb`, `io`) more often than typos, and any three-letter string is an
# edit or two from some indexed word (`tlb` -> `two`); two edits leave too little of a word
# under eight letters (`fusion` -> `fashion`, `pastry` -> `partly`). On real misspellings this
# keeps nearly every right correction and drops most proposals for words spelt right
# (benchmarks/README.md, "did_you_mean.py").
MIN_CORRECTED_LENGTH = 4
TWO_EDITS_FROM = 8
MAX_CORRECTED_LENGTH = 32  # longer "words" are no typos, and slow to correct
# Two neighbouring letters swapped (`memroy`) is one edit (optimal string alignment), as
# Lucene's and Elasticsearch's fuzzy matching count it; False counts it two (Levenshtein).
TRANSPOSITION_IS_ONE_EDIT = True

_WORD = re.compile(r"\w+")


def edit_distance() -> Callable[..., int]:
    """The edit distance of corrections, a rapidfuzz scorer (engines find candidates with it)."""
    return OSA.distance if TRANSPOSITION_IS_ONE_EDIT else Levenshtein.distance


def max_edits(word: str) -> int:
    """How many edits a correction of `word` may be away from it (0: none is proposed)."""
    if len(word) < MIN_CORRECTED_LENGTH or len(word) > MAX_CORRECTED_LENGTH:
        return 0
    return 2 if len(word) >= TWO_EDITS_FROM else 1


def correctable(word: str) -> bool:
    """Whether a typed word may be a misspelling at all."""
    # A number is no misspelt word ("2023" is not a typo of "23").
    return bool(_WORD.fullmatch(word)) and not word.isdigit() and max_edits(word) > 0


def best_correction(word: str, frequencies: Mapping[str, int]) -> str | None:
    """The correction of `word` among indexed words near it, with the records holding each:
    the nearest, then the most frequent; None when none is within reach."""
    reach = max_edits(word)
    distance = edit_distance()
    by_distance: dict[int, list[str]] = {}
    for candidate, frequency in frequencies.items():
        if candidate != word and frequency > 0:
            # Above the cutoff, rapidfuzz answers cutoff + 1.
            edits = distance(word, candidate, score_cutoff=reach)
            if edits <= reach:
                by_distance.setdefault(edits, []).append(candidate)
    if not by_distance:
        return None
    # The nearest wins even over a much more frequent farther word: a typo is most often one
    # slip away, and preferring frequency cost precision where measured.
    nearest = by_distance[min(by_distance)]
    return max(nearest, key=lambda w: (frequencies[w], w))


def corrected_query(
    text: str,
    unknown: Iterable[tuple[int, int]],
    correct: Callable[[str], str | None],
) -> str | None:
    """`text` with its words at the `unknown` spans (words that found no records) replaced by
    `correct(folded word)`, or None when no word is corrected."""
    replacements = []
    for start, end in sorted(unknown):
        word = text[start:end]
        if correctable(word):
            corrected = correct(fold(word))
            if corrected:
                replacements.append((start, end, corrected))
    if not replacements:
        return None
    for start, end, corrected in reversed(replacements):
        text = text[:start] + corrected + text[end:]
    return " ".join(text.split())
