"""The index's vocabulary, read through Solr's terms component (summed over the shards):
document frequencies of terms, and the terms near a word or matching a wildcard pattern.

Wildcard and fuzzy words become a bounded set of real index terms chosen by the rule every
engine follows (backends/expansion.py), so a query means the same on both engines.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from searchsvc.backends.shared import expansion
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
# How long the last term a leading wildcard tests (the MAX_LEXICON_SCAN-th of a field) is kept
# while writes change the index: finding it reads that many terms of every shard (seconds for a
# field of 200,000), and writes move it only by the terms they add before it. It is found again
# after a rebuild, and after this long once the index has changed.
LAST_SCANNED_SECONDS = 600.0
# (rebuild, version) of the index a Vocabulary reads: its built_at and version token.
IndexState = Callable[[], tuple[str, str]]


class Vocabulary:
    """Term lookups on one collection; `state` says which state of it is visible."""

    def __init__(self, connection: SolrConnection, state: IndexState | None = None) -> None:
        self.connection = connection
        self.state = state or (lambda: ("", ""))
        # (field, scan) -> (rebuild, version, when found, the last term tested or None)
        self._last_scanned: dict[tuple[str, int], tuple[str, str, float, str | None]] = {}
        self._lock = threading.Lock()

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
        """Terms of `field` matching a wildcard pattern (`*` any characters, `?` one), in order.

        A pattern without a literal start is tested against the field's first MAX_LEXICON_SCAN
        terms only, as the Whoosh lexicon tests its own (shared/expansion.py)."""
        literal = re.split(r"[*?]", pattern, maxsplit=1)[0]
        regex = "".join(
            ".*" if ch == "*" else "." if ch == "?" else _java_literal(ch) for ch in pattern
        )
        params: list[tuple[str, str | int]] = [
            ("terms.fl", field),
            ("terms.limit", limit),
            ("terms.sort", "index"),
        ]
        last = None if literal else self.last_scanned(field)
        if literal:
            params.append(("terms.prefix", literal))
        elif last is not None:
            # Solr's terms component tests `terms.regex` before `terms.upper`, so a term that
            # fails the pattern never reaches the bound and the walk goes on to the end of
            # each shard's dictionary: the pattern is widened to every term after the bound,
            # so that the first of them stops the walk (without being returned).
            regex = f"(?:{regex})|{_java_after(last)}"
            params += [("terms.upper", last), ("terms.upper.incl", "true")]
        params.append(("terms.regex", regex))
        return list(_term_counts(self.connection.post("terms", params, form=True), field))

    def last_scanned(self, field: str) -> str | None:
        """The last term of `field` a leading wildcard tests: its MAX_LEXICON_SCAN-th in index
        order (None when it has fewer), found again as LAST_SCANNED_SECONDS says."""
        scan = expansion.MAX_LEXICON_SCAN  # read now: a test may set it
        rebuild, version = self.state()
        now = time.monotonic()
        with self._lock:
            known = self._last_scanned.get((field, scan))
        if known is not None:
            known_rebuild, known_version, found_at, last = known
            if known_version == version or (
                known_rebuild == rebuild and now - found_at < LAST_SCANNED_SECONDS
            ):
                return last
        # Each shard sends its first `scan` terms, and the merge keeps the first `scan` of
        # them: exactly the collection's first `scan`.
        params: list[tuple[str, str | int]] = [
            ("terms.fl", field),
            ("terms.limit", scan),
            ("terms.sort", "index"),
        ]
        terms = list(_term_counts(self.connection.post("terms", params, form=True), field))
        last = terms[-1] if len(terms) >= scan else None
        with self._lock:
            self._last_scanned[(field, scan)] = (rebuild, version, now, last)
        return last

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


def _java_after(term: str) -> str:
    """A Java regex matching exactly the strings that sort after `term` by code point (Lucene's
    order of terms, their UTF-8 bytes): `term` continued, or a common start then a greater
    character."""
    branches = ["".join(map(_java_literal, term)) + "[\\s\\S]+"]
    for position, ch in enumerate(term):
        if ord(ch) < 0x10FFFF:
            start = "".join(map(_java_literal, term[:position]))
            greater = f"[\\x{{{ord(ch) + 1:x}}}-\\x{{10ffff}}]"
            branches.append(f"{start}{greater}[\\s\\S]*")
    return "(?:" + "|".join(branches) + ")"


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
