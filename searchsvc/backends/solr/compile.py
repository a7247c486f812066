"""The product's query tree -> a Solr (Lucene syntax) query of index terms.

Words are analysed here as the schema analyses text (analysis.py) and sent as the index's own
terms; the fields' query analyzers only split on whitespace, so Solr searches exactly these
terms. The shapes follow the Whoosh backend's compiler (its queries/compile.py): a word without
a field searches each ranked field of the request with that field's boost, a word the analyser
splits (`GPU-based`) matches any of its parts, wildcard and fuzzy words become a bounded OR of
the most frequent matching terms, and what is excluded adds nothing to a score.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from searchsvc.backends.shared.expansion import MIN_LITERAL_PREFIX
from searchsvc.backends.shared.ranked_fields import FIELD_BOOSTS, index_fields
from searchsvc.backends.solr import analysis
from searchsvc.backends.solr.documents import SUBJECT_KEYS
from searchsvc.backends.solr.terms import IndexStems, Vocabulary
from searchsvc.domain import querylang as ql
from searchsvc.domain.subjects import taxonomy
from searchsvc.domain.texts import fold

# `category:` and `subject:` take a subject of any level (`cs.DC`, `cs`, `grp_cs`), matched
# among the keys of every category of a record (cross-lists always count in the query
# language); their wildcards match the records' own codes (CODES), as they always have.
SUBJECT_VALUES = SUBJECT_KEYS[False]
CODES = "category_key"
INDEX_FIELD_OF = {
    "title": "title",
    "abstract": "abstract",
    "author": "author_names",
    "category": SUBJECT_VALUES,
    "subject": SUBJECT_VALUES,
    "year": "year",
}
# Fields whose terms are stems of title/abstract words: highlighting marks them in both.
HIGHLIGHTED_FIELDS = ("content", "title", "abstract")
# Fields of title/abstract words: a word found in none of them may be a typo.
WORD_FIELDS = ("content", "title", "abstract")
# Unstemmed words of a stemmed field, searched for wildcards and fuzzy words.
SPELLING_FIELD = {"content": "content_words"}
NOTHING = "(-*:*)"  # matches no document
# Separators of an id list (id_set): the one the fewest ids of the list contain is used, the
# first of those on a tie (the last is of private-use characters, in no real id; Solr trims
# control characters off a separator). The id rule allows every one of them in ids.
_ID_SEPARATORS = (",", "|", ";", "\ue000\ue001\ue002")
_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|\s])')


@dataclass
class CompiledQuery:
    """A Solr query, with what highlighting and did-you-mean need to know about it."""

    text: str  # the query text (control characters blanked): word positions point into it
    query: str  # Lucene syntax, `*:*` for every record
    match_all: bool
    highlight_terms: frozenset[str]
    # A plain word's span in `text` -> its (field, term) pairs (did-you-mean looks at these).
    words: dict[tuple[int, int], list[tuple[str, str]]] = field(default_factory=dict)


def compile_query(
    tree: ql.QueryTree,
    request_fields: Iterable[str],
    vocabulary: Vocabulary,
    index_stems: IndexStems,
) -> CompiledQuery:
    if tree.match_all:
        return CompiledQuery(tree.text, "*:*", True, frozenset())
    # The index stems of every word of the query, in one request for those not known yet.
    index_stems.of(
        word
        for leaf in tree.leaves()
        if isinstance(leaf, ql.Word | ql.Phrase | ql.Fuzzy)
        for word in analysis.words(leaf.text)
    )
    compiler = _Compiler(index_fields(request_fields), vocabulary, index_stems)
    text = compiler.compile(tree.root, 1.0, positive=True)
    return CompiledQuery(
        tree.text,
        text or NOTHING,
        False,
        frozenset(compiler.highlight_terms),
        compiler.words,
    )


def term(field_name: str, text: str, boost: float = 1.0) -> str:
    clause = f"{field_name}:{escape(text)}"
    return clause if boost == 1.0 else f"{clause}^{_number(boost)}"


def escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Compiler:
    def __init__(
        self, search_fields: tuple[str, ...], vocabulary: Vocabulary, index_stems: IndexStems
    ) -> None:
        self.search_fields = search_fields
        self.vocabulary = vocabulary
        self.index_stems = index_stems
        self.highlight_terms: set[str] = set()
        # Index term -> what highlighting compares for it: PyStemmer's stems of the words it
        # came from (highlighting analyses the hits' text in Python, with PyStemmer).
        self.marked_as: dict[str, set[str]] = {}
        self.words: dict[tuple[int, int], list[tuple[str, str]]] = {}

    def compile(self, node: ql.Node, boost: float, positive: bool) -> str:
        """Lucene syntax for `node`, or "" for a node that matches nothing (a stop word)."""
        if isinstance(node, ql.Or):
            parts = [self.compile(c, boost * node.boost, positive) for c in node.children]
            return _group(" OR ", [p for p in parts if p])
        if isinstance(node, ql.And):
            return self._all_of(node, boost * node.boost, positive)
        if isinstance(node, ql.Not):
            excluded = self.compile(node.child, 1.0, positive=False)
            # What is excluded adds nothing to a score: every record, less the excluded.
            return f"(*:* -{excluded})" if excluded else "*:*"
        if isinstance(node, ql.MatchAll):
            return "*:*"
        if isinstance(node, ql.YearRange):
            years = f"year:{node.low}" if node.single_year else f"year:[{node.low} TO {node.high}]"
            return _boosted(years, boost * node.boost)
        boost *= node.boost
        if node.field is None:
            copies = [
                self._leaf(node, name, FIELD_BOOSTS.get(name, 1.0) * boost, positive)
                for name in self.search_fields
            ]
            return _group(" OR ", [c for c in copies if c])
        return self._leaf(node, INDEX_FIELD_OF[node.field], boost, positive)

    def _all_of(self, node: ql.And, boost: float, positive: bool) -> str:
        wanted = [
            self.compile(c, boost, positive) for c in node.children if not isinstance(c, ql.Not)
        ]
        excluded = [
            self.compile(c.child, 1.0, positive=False)
            for c in node.children
            if isinstance(c, ql.Not)
        ]
        if any(not part for part in wanted):
            # A word that matches nothing (a stop word alone) matches nothing in an AND
            # either... as in the Whoosh backend, where it is left out of the group.
            wanted = [part for part in wanted if part]
        clauses = [f"+{part}" for part in wanted] + [f"-{part}" for part in excluded if part]
        if not wanted:
            clauses.insert(0, "+*:*")
        return "(" + " ".join(clauses) + ")"

    def _leaf(self, node: ql.Leaf, field_name: str, boost: float, positive: bool) -> str:
        if field_name == SUBJECT_VALUES:
            return self._exact(node, boost)
        if isinstance(node, ql.Word):
            terms = self._analysed(field_name, node.text)
            self.words.setdefault((node.start, node.end), []).extend((field_name, t) for t in terms)
        elif isinstance(node, ql.Phrase):
            return self._phrase(node, field_name, boost, positive)
        elif isinstance(node, ql.Wildcard):
            terms = self._pattern(field_name, fold(node.pattern))
        elif isinstance(node, ql.Fuzzy):
            terms = self._fuzzy(field_name, node)
        else:
            raise TypeError(f"not a word leaf: {node!r}")
        self._mark(terms, positive, field_name)
        return _group(" OR ", [term(field_name, t, boost) for t in dict.fromkeys(terms)])

    def _mark(self, terms: Iterable[str], positive: bool, field_name: str) -> None:
        if positive and field_name in HIGHLIGHTED_FIELDS:
            for index_term in terms:
                self.highlight_terms.update(self.marked_as.get(index_term, {index_term}))

    def _exact(self, node: ql.Leaf, boost: float) -> str:
        if isinstance(node, ql.Word | ql.Phrase):
            # Exact, no prefix (`cs.D` is nothing); an alias is its canonical category.
            wanted = fold(taxonomy().canonical(node.text))
            return _boosted(f"{SUBJECT_VALUES}:{quoted(wanted)}", boost)
        if isinstance(node, ql.Wildcard):
            return _boosted(f"{CODES}:{escape_wildcard(fold(node.pattern))}", boost)
        if isinstance(node, ql.Fuzzy):
            return _boosted(f"{CODES}:{escape(fold(node.text))}~{node.distance}", boost)
        return ""

    def _phrase(self, node: ql.Phrase, field_name: str, boost: float, positive: bool) -> str:
        terms = self._analysed(field_name, node.text)
        self._mark(terms, positive, field_name)
        if not terms:
            return ""
        if len(terms) == 1:
            return term(field_name, terms[0], boost)
        phrase = f"{field_name}:{quoted(' '.join(terms))}"
        if node.slop:
            phrase += f"~{node.slop}"
        return _boosted(phrase, boost)

    def _analysed(self, field_name: str, text: str) -> list[str]:
        """The index terms of `text` in a field, in order."""
        if field_name == "author_names":
            return analysis.name_words(text)
        return self._stemmed(analysis.words(text))

    def _stemmed(self, words: list[str]) -> list[str]:
        """The index stems of kept words (analysis.words), remembering what highlighting
        compares for each."""
        stems = self.index_stems.stems(words)
        for word, stemmed in zip(words, stems, strict=True):
            self.marked_as.setdefault(stemmed, set()).update(analysis.stems(word))
        return stems

    def _pattern(self, field_name: str, pattern: str) -> list[str]:
        found = set(self.vocabulary.matching(field_name, pattern))
        spelling = SPELLING_FIELD.get(field_name)
        if spelling:
            # Index terms are stems ("congest"), so `congest?on` is matched against the
            # unstemmed words, whose stems are then searched.
            found.update(self._stemmed(self.vocabulary.matching(spelling, pattern)))
        literal = re.split(r"[*?]", pattern, maxsplit=1)[0]
        # A short literal start (`a*`, `*ing`) means "a sample", not "the commonest word".
        return self.vocabulary.most_frequent(
            field_name, found, keep_first=len(literal) >= MIN_LITERAL_PREFIX
        )

    def _fuzzy(self, field_name: str, node: ql.Fuzzy) -> list[str]:
        typed = fold(node.text)
        analysed = self._analysed(field_name, typed)
        found: set[str] = set()
        if analysed:
            found.update(self.vocabulary.within(field_name, analysed[0], node.distance))
        spelling = SPELLING_FIELD.get(field_name)
        if spelling and re.fullmatch(r"\w+", typed):
            # Stemming can move a typo further away ("schedulng" vs "schedul"): the word as
            # typed is also compared with the unstemmed words.
            found.update(self._stemmed(self.vocabulary.within(spelling, typed, node.distance)))
        return self.vocabulary.most_frequent(field_name, found)


def id_set(ids: Sequence[str], param: str) -> tuple[str, list[tuple[str, str]]]:
    """A query of the documents with these ids, and the request parameters it reads: `param`
    holds the list (one `{!terms}` query however long it is, not a clause per id), separated
    by the separator the fewest ids hold (`param`_sep). (Not named `ids`: Solr reads a
    request's `ids` as the documents to return, whatever the query.)

    The id rule allows ids holding every separator: those that hold the chosen one go as a
    quoted clause beside the list (`({!terms ...}) OR id:("..." OR "...")`), or alone when
    every id does. Callers send at most ID_LOOKUP_BATCH (1,000) ids at once, within Solr's
    1,024 clauses, and real ids hold none of them."""
    if not ids:
        return NOTHING, []
    separator = min(_ID_SEPARATORS, key=lambda s: sum(s in i for i in ids))
    listed = [i for i in ids if separator not in i]
    odd = [i for i in ids if separator in i]
    clause = f"id:({' OR '.join(quoted(i) for i in odd)})" if odd else ""
    if not listed:
        return clause, []
    query = f"{{!terms f=id separator=${param}_sep v=${param}}}"
    params = [(param, separator.join(listed)), (f"{param}_sep", separator)]
    return (f"({query}) OR {clause}" if odd else query), params


def escape_wildcard(pattern: str) -> str:
    return "".join(ch if ch in "*?" else escape(ch) for ch in pattern)


def _group(operator: str, parts: list[str]) -> str:
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return "(" + operator.join(parts) + ")"


def _boosted(clause: str, boost: float) -> str:
    return clause if boost == 1.0 else f"({clause})^{_number(boost)}"


def _number(value: float) -> str:
    return f"{value:.6g}"
