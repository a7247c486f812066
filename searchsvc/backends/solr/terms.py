"""The index's vocabulary, read through Solr's terms component (summed over the shards):
document frequencies of terms, and the terms near a word or matching a wildcard pattern.

Wildcard and fuzzy words become a bounded set of real index terms chosen here, as the Whoosh
backend chooses them (its queries/expansion.py): at most MAX_EXPANSION terms, the most
frequent first, within a postings budget. So a query means the same on both engines.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from searchsvc.backends.solr.connection import SolrConnection

MAX_EXPANSION = 16
MAX_EXPANSION_POSTINGS = 5_000
MIN_LITERAL_PREFIX = 3
MAX_CANDIDATES = 2_000
# Terms fetched to look for words within an edit distance (those sharing the first letter and
# of a length within reach): the distances are computed here.
MAX_NEAR_CANDIDATES = 50_000


class Vocabulary:
    """Term lookups on one collection."""

    def __init__(self, connection: SolrConnection) -> None:
        self.connection = connection

    def frequencies(self, field: str, terms: Iterable[str]) -> dict[str, int]:
        """Documents holding each term in `field` (0 for a term not indexed)."""
        wanted = sorted({term for term in terms if term and "," not in term})
        if not wanted:
            return {}
        answer = self.connection.post(
            "terms",
            [("terms.fl", field), ("terms.list", ",".join(wanted)), ("terms.limit", -1)],
            form=True,
        )
        found = _term_counts(answer, field)
        return {term: found.get(term, 0) for term in wanted}

    def matching(self, field: str, pattern: str, limit: int = MAX_CANDIDATES) -> list[str]:
        """Terms of `field` matching a wildcard pattern (`*` any characters, `?` one), in order."""
        literal = re.split(r"[*?]", pattern, maxsplit=1)[0]
        regex = "".join(
            ".*" if ch == "*" else "." if ch == "?" else _java_literal(ch) for ch in pattern
        )
        params: list[tuple[str, str | int]] = [
            ("terms.fl", field),
            ("terms.limit", limit),
            ("terms.sort", "index"),
            ("terms.regex", regex),
        ]
        if literal:
            params.append(("terms.prefix", literal))
        return list(_term_counts(self.connection.post("terms", params, form=True), field))

    def prefixed(self, field: str, prefix: str, limit: int = MAX_CANDIDATES) -> list[str]:
        params: list[tuple[str, str | int]] = [
            ("terms.fl", field),
            ("terms.limit", limit),
            ("terms.sort", "index"),
            ("terms.prefix", prefix),
        ]
        return list(_term_counts(self.connection.post("terms", params, form=True), field))

    def within(self, field: str, word: str, distance: int) -> list[str]:
        """Terms within `distance` edits of `word` sharing its first letter, in order."""
        if not word:
            return []
        low, high = max(1, len(word) - distance), len(word) + distance
        params: list[tuple[str, str | int]] = [
            ("terms.fl", field),
            ("terms.limit", MAX_NEAR_CANDIDATES),
            ("terms.sort", "index"),
            ("terms.prefix", word[0]),
            ("terms.regex", f".{{{low},{high}}}"),
        ]
        candidates = list(_term_counts(self.connection.post("terms", params, form=True), field))
        found = process.extract(
            word, candidates, scorer=Levenshtein.distance, score_cutoff=distance, limit=None
        )
        return sorted(term for term, _, _ in found)

    def most_frequent(
        self,
        field: str,
        terms: Iterable[str],
        limit: int = MAX_EXPANSION,
        max_postings: int | None = MAX_EXPANSION_POSTINGS,
        keep_first: bool = True,
    ) -> list[str]:
        """The `limit` of `terms` in most documents of `field` (absent ones dropped), taken
        most frequent first while their documents add up to at most `max_postings`; the most
        frequent is taken anyway if `keep_first`."""
        counts = self.frequencies(field, terms)
        chosen: list[str] = []
        postings = 0
        for frequency, text in heapq.nlargest(limit, ((n, t) for t, n in counts.items())):
            if frequency == 0:
                break
            first = keep_first and not chosen
            if not first and max_postings is not None and postings + frequency > max_postings:
                continue
            chosen.append(text)
            postings += frequency
        return chosen


def _term_counts(answer: dict, field: str) -> dict[str, int]:
    # Solr's JSON answer lists terms and counts flat: [term, count, term, count, ...].
    flat = answer.get("terms", {}).get(field, [])
    if isinstance(flat, dict):
        return {str(term): int(count) for term, count in flat.items()}
    return {str(flat[i]): int(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


def _java_literal(ch: str) -> str:
    return "\\" + ch if not ch.isalnum() else ch
