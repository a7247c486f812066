"""How a wildcard or fuzzy word becomes index terms, the same on every engine: at most
MAX_EXPANSION real terms, the most frequent first, within a postings budget.

Each engine finds the candidate terms in its own vocabulary (the Whoosh backend in its
in-memory lexicons, the Solr backend through the terms component) and chooses among them here,
so that `sched*` or `schedulng~` means the same records on either.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

MAX_EXPANSION = 16  # index terms one wildcard/fuzzy word may become (the most frequent)
# Documents the terms of one wildcard/fuzzy word may hold in all: `*ing` or `a*` would
# otherwise become the most common words of the corpus and match (and score) all of it.
MAX_EXPANSION_POSTINGS = 5_000
MIN_LITERAL_PREFIX = 3  # a wildcard word starting with fewer letters stays within the budget
MAX_CANDIDATES = 2_000  # matching index terms looked at to choose those
# Terms of a field a leading wildcard (`*ing`, `?ache`: no literal start to narrow them by) is
# tested against: the first this many in index order, on every engine (the Whoosh lexicon, the
# Solr terms component), so that it costs the same bounded scan and finds the same terms.
# Engines read it at call time (`expansion.MAX_LEXICON_SCAN`): a test may set it.
MAX_LEXICON_SCAN = 200_000


def most_frequent_first(
    frequencies: Iterable[tuple[int, str]],
    limit: int,
    max_postings: int | None = None,
    keep_first: bool = True,
) -> list[str]:
    """The `limit` terms of (document frequency, term) pairs in most documents (absent ones,
    frequency 0, dropped), taken most frequent first only while their documents add up to at
    most `max_postings`; the most frequent is taken anyway if `keep_first`."""
    chosen: list[str] = []
    postings = 0
    for frequency, text in heapq.nlargest(limit, frequencies):
        if frequency == 0:
            break
        first = keep_first and not chosen
        if not first and max_postings is not None and postings + frequency > max_postings:
            continue
        chosen.append(text)
        postings += frequency
    return chosen
