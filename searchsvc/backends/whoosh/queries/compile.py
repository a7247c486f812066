"""SearchRequest text -> Whoosh query: the query language, its field names and its limits."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from whoosh import fields, query, scoring
from whoosh.qparser import FieldAliasPlugin, FuzzyTermPlugin, MultifieldParser, OrGroup
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.array_scoring import ProbabilisticBM25F
from searchsvc.backends.whoosh.queries.expansion import LexiconOf, QueryRewriter
from searchsvc.backends.whoosh.queries.plain import PlainParser
from searchsvc.backends.whoosh.schema import QUERY_FIELDS, build_schema
from searchsvc.errors import QueryError
from searchsvc.records import MAX_YEAR, MIN_YEAR

# Ranking. One combined title+abstract field (`content`) ranks SciFact better than separate
# fields (0.678 vs 0.653 nDCG@10), and a title boost lowered it; author names count a little.
SEARCH_FIELDS = ("content", "author_names")
FIELD_BOOSTS = {"content": 1.0, "author_names": 0.5, "title": 1.0, "abstract": 1.0}
BM25_B = 0.6
BM25_K1 = 1.2

# SearchRequest.fields -> index fields. Title and abstract together are `content`.
REQUEST_FIELDS = {"title": "title", "abstract": "abstract", "authors": "author_names"}
# Field prefixes a query may use are schema.QUERY_FIELDS; `author:` searches author-name words.
FIELD_ALIASES = {"author_names": ["author", "authors"], "category": ["categories"]}

# Limits that keep any query cheap.
MAX_QUERY_WORDS = 100
MAX_NESTING = 16
MAX_WORD_LENGTH = 100  # the parser's taggers take time quadratic in the length of a word
MAX_OPERATORS = 200  # quotes, parentheses, wildcards and other syntax characters
MAX_WILDCARDS_PER_WORD = 4
_OPERATOR_CHARS = frozenset('"()[]{}*?~^:')
_OPERATOR = re.compile("[" + re.escape("".join(sorted(_OPERATOR_CHARS))) + "]")
_WILDCARDS = re.compile(r"\*+|\?")
# ASCII has no format (Cf) or surrogate (Cs) characters and its control characters (Cc) are
# U+0000-U+001F and U+007F: what clean() replaces in ASCII text, found without a category lookup
# per character.
_ASCII_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")

_WORDS = re.compile(r"\S+")
# `year:2020..2023`, `year:2020..`, `year:..2023` -> Whoosh's range syntax.
_YEAR_SPAN = re.compile(r"\byear:(\d{1,4})?\.\.(\d{1,4})?(?=$|[\s)])", re.IGNORECASE)
# Anything that is a field prefix to the parser: `title:` as well as `Title:`.
_FIELD_PREFIX = re.compile(r"\b(" + "|".join((*QUERY_FIELDS, "author", "authors")) + r"):", re.I)


def weighting() -> scoring.WeightingModel:
    return ProbabilisticBM25F(B=BM25_B, K1=BM25_K1)


def index_fields(request_fields: Iterable[str]) -> tuple[str, ...]:
    """The index fields that rank a query searching the request's `fields`."""
    wanted = set(request_fields)
    if wanted >= set(REQUEST_FIELDS):
        return SEARCH_FIELDS
    chosen: list[str] = []
    if {"title", "abstract"} <= wanted:
        chosen.append("content")
    else:
        chosen.extend(REQUEST_FIELDS[name] for name in ("title", "abstract") if name in wanted)
    if "authors" in wanted:
        chosen.append("author_names")
    return tuple(chosen)


@dataclass(frozen=True)
class ParsedQuery:
    """A query ready to run, with what did-you-mean and highlighting need to know about it."""

    text: str  # the query text as parsed (control characters removed, year spans rewritten)
    parsed: query.Query  # as the parser built it: words keep their positions in `text`
    query: query.Query  # wildcards and fuzzy words expanded, exact values resolved

    @property
    def match_all(self) -> bool:
        return isinstance(self.query, query.Every)


def parse(
    text: str,
    request_fields: Iterable[str],
    reader: IndexReader,
    exact_values: Callable[[str, str], str | None],
    lexicon: LexiconOf,
) -> ParsedQuery:
    """Parse query text for searching `request_fields`; QueryError says what and where.

    `exact_values(field, value)` gives the indexed form of an exact value (or None);
    `lexicon(field)` the field's terms in memory (for wildcard and fuzzy words).
    """
    cleaned = clean(text)
    if not cleaned.strip():
        return ParsedQuery(cleaned, query.Every(), query.Every())
    _check_limits(cleaned)
    cleaned = _FIELD_PREFIX.sub(lambda m: m.group(1).lower() + ":", cleaned)
    cleaned = _YEAR_SPAN.sub(
        lambda m: f"year:[{m.group(1) or MIN_YEAR} TO {m.group(2) or MAX_YEAR}]", cleaned
    )
    search_fields = index_fields(request_fields)
    # Plain words (most queries) skip Whoosh's parser for the same query: see plain_queries.py.
    # Their terms, all of ranked text fields, leave the rewriter nothing to expand or resolve.
    plain = _plain_parser(search_fields).parse(cleaned)
    if plain is not None:
        return ParsedQuery(cleaned, plain, plain)
    try:
        parsed = _parser(search_fields).parse(cleaned)
    except RecursionError as exc:
        raise QueryError("the query is nested too deeply") from exc
    except Exception as exc:  # the parser has no error type of its own for odd input
        raise QueryError(f"cannot parse the query: {exc}") from exc
    _check_errors(parsed)
    rewritten = QueryRewriter(reader, exact_values, lexicon, cleaned).rewrite(parsed)
    if isinstance(rewritten, query.Every):
        rewritten = query.Every()
    return ParsedQuery(cleaned, parsed, rewritten)


def clean(text: str) -> str:
    """Control and format characters (NUL included) become spaces, so offsets stay put."""
    if text.isascii():
        return _ASCII_CONTROLS.sub(" ", text)
    return "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Cs") and ch not in "\t\n" else ch
        for ch in text
    )


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


@lru_cache(maxsize=16)
def _parser(search_fields: tuple[str, ...]) -> MultifieldParser:
    full = build_schema()
    # The parser only knows the public fields, so `id:` or `source:` stay plain words.
    schema = fields.Schema(**{name: full[name] for name in QUERY_FIELDS})
    boosts = {name: FIELD_BOOSTS.get(name, 1.0) for name in search_fields}
    parser = MultifieldParser(list(search_fields), schema, fieldboosts=boosts, group=OrGroup)
    parser.add_plugin(FuzzyTermPlugin())
    parser.add_plugin(FieldAliasPlugin(FIELD_ALIASES))
    return parser


@lru_cache(maxsize=16)
def _plain_parser(search_fields: tuple[str, ...]) -> PlainParser:
    return PlainParser(_parser(search_fields))


def _check_limits(text: str) -> None:
    words = list(itertools.islice(_WORDS.finditer(text), MAX_QUERY_WORDS + 1))
    if len(words) > MAX_QUERY_WORDS:
        raise QueryError(
            f"the query has more than {MAX_QUERY_WORDS} words",
            position=words[MAX_QUERY_WORDS].start(),
        )
    operators = [match.start() for match in _OPERATOR.finditer(text)]
    if len(operators) > MAX_OPERATORS:
        raise QueryError(
            f"the query has more than {MAX_OPERATORS} operator characters",
            position=operators[MAX_OPERATORS],
        )
    for word in words:  # all of them: there are at most MAX_QUERY_WORDS
        if len(word.group()) > MAX_WORD_LENGTH:
            raise QueryError(
                f"a word of the query is longer than {MAX_WORD_LENGTH} characters",
                position=word.start(),
            )
        # Wildcards are operator characters: plain words (most queries) need no count.
        if operators and len(_WILDCARDS.findall(word.group())) > MAX_WILDCARDS_PER_WORD:
            raise QueryError(
                f"at most {MAX_WILDCARDS_PER_WORD} wildcards in one word", position=word.start()
            )
    if "(" not in text:
        return
    depth = 0
    for position, ch in enumerate(text):
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        if depth > MAX_NESTING:
            raise QueryError(
                f"parentheses are nested more than {MAX_NESTING} deep", position=position
            )


def _check_errors(q: query.Query) -> None:
    error = getattr(q, "error", None)
    if error:
        position = getattr(q, "startchar", None)
        details = {} if position is None else {"position": position}
        raise QueryError(f"invalid query: {error}", **details)
    for child in q.children():
        _check_errors(child)
