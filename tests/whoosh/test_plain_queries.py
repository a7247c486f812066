"""The plain-words fast path (queries/plain.py) compiles exactly what the general compiler and,
before the product's query language, Whoosh's own query parser made of the same text.

Plain words are nearly every real query. For random plain texts and every choice of ranked fields,
`PlainWords.compile` must give, node by node (classes, boosts, startchar/endchar, every attribute),
what `compile_tree` gives for the same tree and what Whoosh's `MultifieldParser`, configured as the
backend configured it, gave for the text: the guarantee that plain-word answers did not change.
"""

from __future__ import annotations

import itertools
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import query

from searchsvc.backends.shared.ranked_fields import SEARCH_FIELDS, index_fields
from searchsvc.backends.whoosh.queries import compile as compiler
from searchsvc.backends.whoosh.queries.compile import compile_query, compile_tree
from searchsvc.backends.whoosh.queries.expansion import QueryRewriter
from searchsvc.backends.whoosh.queries.plain import PlainWords
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.errors import QueryError
from searchsvc.domain.querylang import parse_query
from tests.support import examples
from tests.whoosh.support import assert_same_query, whoosh_parser

REQUEST_FIELD_CHOICES = [
    fields
    for size in (1, 2, 3)
    for fields in itertools.combinations(("title", "abstract", "authors"), size)
]
SEARCH_FIELD_CHOICES = sorted({index_fields(fields) for fields in REQUEST_FIELD_CHOICES})
# Operators of Whoosh's parser (in capitals, on their own). AND, OR and NOT are the query
# language's too; the others are plain words now (an intended change, tested below).
WHOOSH_OPERATORS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "REQUIRE"})

# Stop words, single letters, numbers, mixed case, words sharing a stem, operator words in other
# cases than the parsers', and real words.
_VOCABULARY = st.sampled_from(
    [
        "the", "of", "a", "is", "to", "in", "be", "A", "The", "OF",
        "x", "I", "Z", "q", "0", "7", "42", "2020", "1e5", "3d", "x2", "v1",
        "GraPH", "NEURAL", "Networks", "networks", "network",
        "learning", "learned", "learns", "Learning", "learn", "LEARNS",
        "and", "or", "not", "andnot", "andmaybe", "require", "to", "TO",
        "And", "Or", "Not", "nOT", "Andnot", "To",
        "graph", "neural", "sparsely", "supervised", "scalable", "proxies", "human", "evaluation",
        "both", "quantum", "balazs", "scheduling", "caches", "datacenter", "congestion",
    ]
)  # fmt: skip
_ANY_WORD = st.text(string.ascii_letters + string.digits, min_size=1, max_size=12).filter(
    lambda word: word not in WHOOSH_OPERATORS
)
# Whitespace, or an OR between two words (the language's OR of words is a plain tree too).
_GAP = st.sampled_from([" ", "  ", "\t", "\n", " \t\n ", "\n\n", " OR ", "\tOR\n"])


@st.composite
def plain_texts(draw) -> str:
    words = draw(st.lists(st.one_of(_VOCABULARY, _ANY_WORD), min_size=1, max_size=12))
    gaps = [draw(_GAP) for _ in range(len(words) - 1)]
    text = "".join(word + gap for word, gap in zip(words, [*gaps, ""], strict=True))
    return draw(st.sampled_from(["", " ", "\n\t"])) + text + draw(st.sampled_from(["", " ", "\t"]))


def fast_path(text: str, search_fields: tuple[str, ...]) -> query.Query | None:
    """What compile_query's fast path gives for the text (None: not plain words)."""
    return compiler._plain_words(search_fields).compile(parse_query(text).root)


def assert_fast_path_is_the_general_compilers_and_whooshs(text: str) -> None:
    tree = parse_query(text)
    for search_fields in SEARCH_FIELD_CHOICES:
        fast = compiler._plain_words(search_fields).compile(tree.root)
        assert fast is not None, (text, search_fields)
        assert_same_query(fast, compile_tree(tree.root, search_fields))
        # Whoosh's parser read the cleaned text (control characters blanked) as the tree does.
        assert_same_query(fast, whoosh_parser(search_fields).parse(tree.text))


@settings(max_examples=examples(300), deadline=None)
@given(plain_texts())
def test_plain_words_compile_as_the_general_compiler_and_whooshs_parser_for_every_field_choice(
    text: str,
) -> None:
    assert_fast_path_is_the_general_compilers_and_whooshs(text)


@settings(max_examples=examples(100), deadline=None)
@given(plain_texts())
def test_the_rewriter_has_nothing_to_change_in_a_plain_query(text: str) -> None:
    # compile_query returns a plain query without QueryRewriter: it would give it back equal.
    for search_fields in SEARCH_FIELD_CHOICES:
        fast = fast_path(text, search_fields)
        rewritten = QueryRewriter(None, None, None, text).rewrite(fast)
        assert_same_query(rewritten, fast)


@pytest.mark.parametrize(
    "text",
    [
        "graph neural networks",
        "sparsely supervised",
        "scalable proxies human evaluation both",
        "the of a is",  # all stop words: nothing for the text fields, words for author names
        "learning learned learns Learning",  # one stem, several author-name words
        "graph graph GRAPH",
        "x",
        "  \t2020\n",
        "graph OR neural OR networks",
    ],
)
def test_typical_queries_compile_as_the_general_compiler_and_whooshs_parser(text: str) -> None:
    assert_fast_path_is_the_general_compilers_and_whooshs(text)


@pytest.mark.parametrize(
    "text",
    [
        "(graph neural)",  # a group without a boost is an OR of its words
        "((graph)) networks",
        "graph\rneural",  # control and format characters are blanked before parsing
        "graph\x0bneural",
        "graph\x0cneural",
        "graph\x1cneural",
        "graph\x00",
        "graph\u200bneural",
        "graph\u00a0neural",  # Unicode spaces separate words
        "graph\u2003neural",
    ],
)
def test_syntax_that_leaves_only_plain_words_takes_the_fast_path(text: str) -> None:
    assert_fast_path_is_the_general_compilers_and_whooshs(text)


@pytest.mark.parametrize(
    "text", ["graph ANDNOT neural", "graph ANDMAYBE neural", "REQUIRE graph", "TO", "a TO b"]
)
def test_whooshs_other_operator_words_are_plain_words_searched_as_words(text: str) -> None:
    # An intended change: Whoosh's parser read ANDNOT, ANDMAYBE and REQUIRE as operators; the
    # query language searches them as the words they are (as Whoosh's parser searched them in
    # lower case: the analyzers lowercase every word, and the characters are the same).
    tree = parse_query(text)
    for search_fields in SEARCH_FIELD_CHOICES:
        fast = compiler._plain_words(search_fields).compile(tree.root)
        assert fast is not None
        assert_same_query(fast, compile_tree(tree.root, search_fields))
        assert_same_query(fast, whoosh_parser(search_fields).parse(text.lower()))


# One of each shape the fast path leaves to the general compiler (each a valid query).
NOT_PLAIN = [
    "title:graph", "author:smith", "graph Title:neural", "category:cs.DC",  # field prefixes
    '"graph neural"',  # phrases
    "gra*", "gr?ph", "*", "*:*",  # wildcards, every record
    "graph~", "graph~2",  # fuzzy words
    "graph^2", "(graph neural)^2", "year:[2020 TO 2021]", "year:2021", "year:2020..2022",
    "graph AND neural", "NOT graph", "graph NOT neural", "(graph OR neural) AND x",  # operators
    "+graph", "-graph", "graph,", "U.S.A.", "v1.2", "x_1", "don't", "GPU-based", "e.g.",
    "a<=b", "#graph", "graph!", "graph;", "a/b", "a\\b", "graph@x", "50%", "'graph neural'",
    "content:graph", "foo:bar", "graph:",  # other characters
    "Balázs", "naïve", "ﬁle", "İstanbul", "straße", "Ωmega",  # non-ASCII
]  # fmt: skip


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_a_tree_that_is_not_plain_words_goes_to_the_general_compiler(text: str) -> None:
    for search_fields in SEARCH_FIELD_CHOICES:
        assert fast_path(text, search_fields) is None


@settings(max_examples=examples(200), deadline=None)
@given(plain_texts(), st.sampled_from(NOT_PLAIN), st.integers(min_value=0))
def test_a_plain_text_with_any_other_shape_in_it_goes_to_the_general_compiler(
    text: str, other: str, where: int
) -> None:
    position = where % (len(text) + 1)
    mixed = [f"{text} {other}", f"{other} {text}", text[:position] + f" {other} " + text[position:]]
    if any(not (ch.isascii() and ch.isalnum()) and ch != " " for ch in other):
        # Syntax characters count inside a word too.
        mixed.append(text[:position] + other + text[position:])
    parsed = 0
    for variant in mixed:
        try:
            tree = parse_query(variant)
        except QueryError:
            continue  # e.g. `graph~` put inside a word: `grgraph~aph` (the parser's business)
        parsed += 1
        for search_fields in SEARCH_FIELD_CHOICES:
            assert compiler._plain_words(search_fields).compile(tree.root) is None, variant
    assert parsed >= 1


def test_compile_query_answers_plain_words_without_the_general_compiler(monkeypatch, fixture_index):
    def refuse(*args, **kwargs):
        raise AssertionError("the general compiler ran")

    monkeypatch.setattr(compiler, "compile_tree", refuse)
    monkeypatch.setattr(compiler._Compiler, "compile", refuse)
    fields = ("title", "abstract", "authors")
    with IndexDirectory(fixture_index).open().reader() as reader:
        parsed = compile_query(parse_query("Learned caches"), fields, reader, None, None)
        with pytest.raises(AssertionError, match="general compiler"):  # it would have noticed
            compile_query(parse_query('"Learned caches"'), fields, reader, None, None)

    expected = whoosh_parser(SEARCH_FIELDS).parse("Learned caches")
    assert_same_query(parsed.parsed, expected)
    assert_same_query(parsed.query, expected)
    assert parsed.text == "Learned caches"


def test_the_fast_path_refuses_a_field_that_parses_its_own_queries():
    schema = compiler._term_parser().schema
    with pytest.raises(ValueError, match="year"):
        PlainWords(schema, ["content", "year"], {})  # numbers: ranges, not analysed words
