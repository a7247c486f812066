"""The product's query tree -> a Whoosh query, its words analysed as the schema's fields analyse.

Each leaf becomes what Whoosh's own query parser made of the same text (`QueryParser.term_query`
with the flags its word, wildcard and fuzzy nodes use; phrases tokenized with their character
ranges), so that searches answer as they did when Whoosh parsed the text. A word without a field
searches every ranked field of the request (`ranked_fields.index_fields`) with that field's boost.
The compiled query is then normalised as Whoosh's parser normalised its own, and wildcard and
fuzzy words are expanded into a bounded set of index terms (expansion.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from whoosh import query
from whoosh.fields import Schema
from whoosh.qparser import OrGroup, QueryParser
from whoosh.reading import IndexReader

from searchsvc.backends.shared.ranked_fields import FIELD_BOOSTS, index_fields
from searchsvc.backends.whoosh.queries.expansion import LexiconOf, QueryRewriter
from searchsvc.backends.whoosh.queries.plain import PlainWords
from searchsvc.backends.whoosh.ranking import INDEX_FIELD_OF
from searchsvc.backends.whoosh.schema import QUERY_FIELDS, build_schema
from searchsvc.domain import querylang as ql


@dataclass(frozen=True)
class ParsedQuery:
    """A query ready to run, with what did-you-mean and highlighting need to know about it."""

    text: str  # the query text (control characters blanked): leaves' positions point into it
    parsed: query.Query  # as compiled: words keep their positions in `text`
    query: query.Query  # wildcards and fuzzy words expanded, exact values resolved

    @property
    def match_all(self) -> bool:
        return isinstance(self.query, query.Every)


def compile_query(
    tree: ql.QueryTree,
    request_fields: Iterable[str],
    reader: IndexReader,
    exact_values: Callable[[str, str], tuple[str, ...]],
    lexicon: LexiconOf,
) -> ParsedQuery:
    """The Whoosh query of a tree, for a request searching `request_fields` by default.

    `exact_values(field, value)` gives the indexed values an exact value selects (a subject
    selects every category under it);
    `lexicon(field)` the field's terms in memory (for wildcard and fuzzy words).
    """
    if tree.match_all:
        return ParsedQuery(tree.text, query.Every(), query.Every())
    search_fields = index_fields(request_fields)
    # Plain words (most queries) skip the general compiler: see plain.py. Their terms, all of
    # ranked text fields, leave the rewriter nothing to expand or resolve.
    plain = _plain_words(search_fields).compile(tree.root)
    if plain is not None:
        return ParsedQuery(tree.text, plain, plain)
    compiled = compile_tree(tree.root, search_fields)
    rewritten = QueryRewriter(reader, exact_values, lexicon, tree.text).rewrite(compiled)
    if isinstance(rewritten, query.Every):
        rewritten = query.Every()
    return ParsedQuery(tree.text, compiled, rewritten)


def compile_tree(root: ql.Node, search_fields: tuple[str, ...]) -> query.Query:
    """The normalised Whoosh query of a tree, before expansion (no index needed)."""
    return _Compiler(search_fields).compile(root).normalize()


def positive_terms(q: query.Query) -> Iterator[tuple[str, str]]:
    """(field, text) of the terms a match contains: negated parts left out (for highlighting)."""
    if isinstance(q, query.Not):
        return
    if isinstance(q, query.AndNot):
        yield from positive_terms(q.a)
        return
    if q.is_leaf():
        for fieldname, text in q.terms(phrases=True):
            if isinstance(text, str):
                yield fieldname, text
        return
    for child in q.children():
        yield from positive_terms(child)


class _Compiler:
    def __init__(self, search_fields: tuple[str, ...]) -> None:
        self.search_fields = search_fields
        self.parser = _term_parser()
        self.schema = self.parser.schema

    def compile(self, node: ql.Node, boost: float = 1.0) -> query.Query:
        """The query of `node`; `boost` is what the groups above it multiply its scores by.

        A group's boost is carried down to its leaves (a group's score is the sum of its
        leaves'), so no compiled group has a boost of its own: Whoosh's pruning of the top
        documents misjudges how high a boosted group can score.
        """
        if isinstance(node, ql.Or):
            boost *= node.boost
            return query.Or([self.compile(child, boost) for child in node.children])
        if isinstance(node, ql.And):
            return self._all_of(node, boost * node.boost)
        if isinstance(node, ql.Not):
            # What is excluded adds nothing to a score.
            return query.Not(self.compile(node.child))
        if isinstance(node, ql.MatchAll):
            return query.Every()
        if isinstance(node, ql.YearRange):
            return self._years(node, boost * node.boost)
        boost *= node.boost
        if node.field is None:
            # One copy per ranked field, as Whoosh's MultifieldPlugin made (its OR group has
            # no character range of its own).
            copies = [
                self._leaf(node, name, FIELD_BOOSTS.get(name, 1.0) * boost)
                for name in self.search_fields
            ]
            return query.Or([q for q in copies if q is not None])
        leaf = self._leaf(node, INDEX_FIELD_OF[node.field], boost)
        return query.NullQuery if leaf is None else leaf

    def _all_of(self, node: ql.And, boost: float) -> query.Query:
        wanted = [self.compile(c, boost) for c in node.children if not isinstance(c, ql.Not)]
        excluded = [self.compile(c.child) for c in node.children if isinstance(c, ql.Not)]
        if not wanted or not excluded:
            return query.And([*wanted, *map(query.Not, excluded)])
        # AndNot scores a match by its wanted part alone (the And with a Not that Whoosh's
        # parser made added the same constant to every score).
        positive = wanted[0] if len(wanted) == 1 else query.And(wanted)
        negative = excluded[0] if len(excluded) == 1 else query.Or(excluded)
        return query.AndNot(positive, negative)

    def _leaf(self, node: ql.Leaf, field: str, boost: float) -> query.Query | None:
        if isinstance(node, ql.Word):
            q = self.parser.term_query(field, node.text, query.Term, boost, True, True)
        elif isinstance(node, ql.Wildcard):
            q = self.parser.term_query(field, node.pattern, query.Wildcard, boost, False, False)
        elif isinstance(node, ql.Fuzzy):
            q = self.parser.term_query(field, node.text, query.FuzzyTerm, boost, False, False)
            if isinstance(q, query.FuzzyTerm):
                q.maxdist, q.prefixlength = node.distance, 0
        elif isinstance(node, ql.Phrase):
            q = self._phrase(node, field, boost)
        else:
            raise TypeError(f"not a word leaf: {node!r}")
        return _attach(q, node.start, node.end)

    def _phrase(self, node: ql.Phrase, field: str, boost: float) -> query.Query:
        tokens = self.schema[field].tokenize(node.text, mode="query", chars=True)
        words, char_ranges = [], []
        for token in tokens:
            words.append(token.text)
            char_ranges.append((node.text_start + token.startchar, node.text_start + token.endchar))
        # Whoosh's slop counts positions apart (1: adjacent), the language extra words (0).
        return query.Phrase(field, words, slop=node.slop + 1, boost=boost, char_ranges=char_ranges)

    def _years(self, node: ql.YearRange, boost: float) -> query.Query:
        field = self.schema["year"]
        if node.single_year:
            q = field.parse_query("year", str(node.low), boost=boost)
        else:
            q = field.parse_range("year", str(node.low), str(node.high), False, False, boost)
        return _attach(q, node.start, node.end)


def _attach(q: query.Query | None, start: int, end: int) -> query.Query | None:
    # What the parser's `attach` did: the leaf's query (an OR of the parts of a word the
    # analyzer split, e.g. `GPU-based`) knows the characters it came from.
    if q:
        q.startchar, q.endchar = start, end
    return q


@lru_cache(maxsize=1)
def _term_parser() -> QueryParser:
    full = build_schema()
    # OR groups, as the MultifieldParser of old: a word the analyzer splits in parts
    # (`GPU-based`) matches any of them (`term_query` groups the parts with the parser's group).
    return QueryParser(None, Schema(**{name: full[name] for name in QUERY_FIELDS}), group=OrGroup)


@lru_cache(maxsize=16)
def _plain_words(search_fields: tuple[str, ...]) -> PlainWords:
    boosts = {name: FIELD_BOOSTS.get(name, 1.0) for name in search_fields}
    return PlainWords(_term_parser().schema, search_fields, boosts)
