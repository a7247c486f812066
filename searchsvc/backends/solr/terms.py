"""The index's vocabulary, read through Solr's terms component (summed over the shards):
document frequencies of terms, and the terms near a word or matching a wildcard pattern.

Wildcard and fuzzy words become a bounded set of real index terms chosen by the rule every
engine follows (backends/expansion.py), so a query means the same on both engines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from searchsvc.backends.shared.expansion import (
    MAX_CANDIDATES,
    MAX_EXPANSION,
    MAX_EXPANSION_POSTINGS,
    most_frequent_first,
)
from searchsvc.backends.solr.connection import SolrConnection

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

    def within(
        self,
        field: str,
        word: str,
        distance: int,
        scorer: Callable[..., int] = Levenshtein.distance,
    ) -> list[str]:
        """Terms within `distance` edits (Levenshtein's, or a rapidfuzz `scorer`'s) of `word`
        sharing its first letter, in order."""
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
        found = process.extract(word, candidates, scorer=scorer, score_cutoff=distance, limit=None)
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
        pairs = ((count, term) for term, count in counts.items())
        return most_frequent_first(pairs, limit, max_postings, keep_first)


def _term_counts(answer: dict, field: str) -> dict[str, int]:
    # Solr's JSON answer lists terms and counts flat: [term, count, term, count, ...].
    flat = answer.get("terms", {}).get(field, [])
    if isinstance(flat, dict):
        return {str(term): int(count) for term, count in flat.items()}
    return {str(flat[i]): int(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


def _java_literal(ch: str) -> str:
    return "\\" + ch if not ch.isalnum() else ch


class IndexStems:
    """Words -> the stems Solr's index holds for them, asked of Solr's field analysis and kept.

    Lucene's Snowball English is an older release of the algorithm than PyStemmer's: most words
    stem alike, but not all ("organization": `organ` in the index, `organiz` in PyStemmer), and a
    query must search the index's own terms. Stems never change for a configset, so each word is
    asked once per process (words not seen before in one request per search).
    """

    FIELD_TYPE = "text_stemmed"
    MAX_CACHED = 200_000

    def __init__(self, connection: SolrConnection) -> None:
        self.connection = connection
        self._cache: dict[str, str] = {}

    def of(self, words: Iterable[str]) -> dict[str, str]:
        """The index stem of each word (folded, not a stop word: analysis.kept_words)."""
        wanted = list(dict.fromkeys(words))
        missing = [word for word in wanted if word not in self._cache]
        if missing:
            self._learn(missing)
        return {word: self._cache.get(word) or word for word in wanted}

    def stems(self, words: Iterable[str]) -> list[str]:
        listed = list(words)
        known = self.of(listed)
        return [known[word] for word in listed]

    def _learn(self, words: list[str]) -> None:
        answer = self.connection.post(
            "analysis/field",
            [("analysis.fieldtype", self.FIELD_TYPE), ("analysis.fieldvalue", " ".join(words))],
            form=True,
        )
        stages = answer.get("analysis", {}).get("field_types", {}).get(self.FIELD_TYPE, {})
        tokens = stages.get("index") or [[]]
        stems = [str(token["text"]) for token in tokens[-1]]
        if len(stems) != len(words):
            # Each word is one token of the same tokenizer, so this does not happen; if Solr
            # ever splits one, the words are asked one at a time.
            if len(words) > 1:
                for word in words:
                    self._learn([word])
            return
        if len(self._cache) + len(words) > self.MAX_CACHED:
            self._cache.clear()
        self._cache.update(zip(words, stems, strict=True))
