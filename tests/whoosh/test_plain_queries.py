"""The plain-words fast path (plain_queries.py) builds exactly what Whoosh's parser builds."""

from __future__ import annotations

import itertools
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import query
from whoosh.qparser import AndGroup, MultifieldParser, OrGroup, QueryParser

from searchsvc.backends.whoosh.queries import compile as queries
from searchsvc.backends.whoosh.queries.expansion import QueryRewriter
from searchsvc.backends.whoosh.queries.plain import OPERATOR_WORDS, PlainParser
from tests.support import examples

REQUEST_FIELD_CHOICES = [
    fields
    for size in (1, 2, 3)
    for fields in itertools.combinations(("title", "abstract", "authors"), size)
]
SEARCH_FIELD_CHOICES = sorted({queries.index_fields(fields) for fields in REQUEST_FIELD_CHOICES})

# Stop words, single letters, numbers, mixed case, words sharing a stem, operator words in other
# cases than the parser's, and real words.
_VOCABULARY = st.sampled_from(
    [
        "the", "of", "a", "is", "to", "in", "be", "A", "The", "OF",
        "x", "I", "Z", "q", "0", "7", "42", "2020", "1e5", "3d", "x2", "v1",
        "GraPH", "NEURAL", "Networks", "networks", "network",
        "learning", "learned", "learns", "Learning", "learn", "LEARNS",
        "and", "or", "not", "andnot", "andmaybe", "require", "to",
        "And", "Or", "Not", "nOT", "Andnot", "To",
        "graph", "neural", "sparsely", "supervised", "scalable", "proxies", "human", "evaluation",
        "both", "quantum", "balazs", "scheduling", "caches", "datacenter", "congestion",
    ]
)  # fmt: skip
_ANY_WORD = st.text(string.ascii_letters + string.digits, min_size=1, max_size=12).filter(
    lambda word: word not in OPERATOR_WORDS
)
_SPACE = st.sampled_from([" ", "  ", "\t", "\n", " \t\n ", "\n\n"])


@st.composite
def plain_texts(draw) -> str:
    words = draw(st.lists(st.one_of(_VOCABULARY, _ANY_WORD), min_size=1, max_size=12))
    gaps = [draw(_SPACE) for _ in range(len(words) - 1)]
    text = "".join(word + gap for word, gap in zip(words, [*gaps, ""], strict=True))
    return draw(st.sampled_from(["", " ", "\n\t"])) + text + draw(st.sampled_from(["", " ", "\t"]))


def assert_same_query(fast: query.Query, parsed: query.Query) -> None:
    """Equal trees with the same classes, boosts and character ranges, node by node."""
    assert fast == parsed
    _assert_same_nodes(fast, parsed)


def _assert_same_nodes(fast: query.Query, parsed: query.Query) -> None:
    assert type(fast) is type(parsed)
    assert getattr(fast, "boost", None) == getattr(parsed, "boost", None)
    assert getattr(fast, "startchar", None) == getattr(parsed, "startchar", None)
    assert getattr(fast, "endchar", None) == getattr(parsed, "endchar", None)
    # Every attribute, minmatch/minquality and the like included.
    assert vars(fast) == vars(parsed)
    for fast_child, parsed_child in zip(fast.children(), parsed.children(), strict=True):
        _assert_same_nodes(fast_child, parsed_child)


@settings(max_examples=examples(300), deadline=None)
@given(plain_texts())
def test_plain_text_gives_the_parsers_query_for_every_field_choice(text: str) -> None:
    for search_fields in SEARCH_FIELD_CHOICES:
        fast = queries._plain_parser(search_fields).parse(text)
        assert fast is not None, text
        assert_same_query(fast, queries._parser(search_fields).parse(text))


@settings(max_examples=examples(100), deadline=None)
@given(plain_texts())
def test_the_rewriter_has_nothing_to_change_in_a_plain_query(text: str) -> None:
    # parse() returns a plain query as it is, without QueryRewriter: it would give it back equal.
    for search_fields in SEARCH_FIELD_CHOICES:
        fast = queries._plain_parser(search_fields).parse(text)
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
    ],
)
def test_typical_queries_match_the_parser(text: str) -> None:
    for search_fields in SEARCH_FIELD_CHOICES:
        fast = queries._plain_parser(search_fields).parse(text)
        assert fast is not None
        assert_same_query(fast, queries._parser(search_fields).parse(text))


# One of each shape the fast path leaves to the parser.
NOT_PLAIN = [
    "title:graph", "author:smith", "graph Title:neural",  # field prefixes
    '"graph neural"', "'graph neural'", 'graph"',  # phrases and quotes
    "gra*", "gr?ph", "*", "*:*",  # wildcards, every document
    "graph~", "graph~2", "graph~1/2",  # fuzzy words
    "graph^2", "(graph neural)", "graph)", "[a TO b]", "{a TO b}", "year:[2020 TO 2021]",
    "graph AND neural", "graph OR neural", "NOT graph", "graph ANDNOT neural",
    "graph ANDMAYBE neural", "REQUIRE graph", "AND", "OR", "NOT", "TO", "a TO b",  # operators
    "+graph", "-graph", "graph,", "U.S.A.", "v1.2", "x_1", "don't", "GPU-based", "e.g.",
    "a<=b", "#graph", "graph!", "graph;", "a/b", "a\\b", "graph@x", "50%",  # other characters
    "Balázs", "naïve", "ﬁle", "İstanbul", "straße", "Ωmega", "graph\u00a0neural",  # non-ASCII
    "graph\rneural", "graph\x0bneural", "graph\x0cneural", "graph\x1cneural", "graph\x00",
]  # fmt: skip


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_text_that_is_not_plain_goes_to_the_parser(text: str) -> None:
    for search_fields in SEARCH_FIELD_CHOICES:
        assert queries._plain_parser(search_fields).parse(text) is None


@settings(max_examples=examples(200), deadline=None)
@given(plain_texts(), st.sampled_from(NOT_PLAIN), st.integers(min_value=0))
def test_a_plain_text_with_any_other_shape_in_it_goes_to_the_parser(
    text: str, other: str, where: int
) -> None:
    position = where % (len(text) + 1)
    mixed = [text[:position] + f" {other} " + text[position:], f"{text} {other}", f"{other} {text}"]
    if any(not (ch.isascii() and ch.isalnum()) and ch != " " for ch in other):
        # Syntax characters count inside a word too; an operator word only on its own.
        mixed.append(text[:position] + other + text[position:])
    for search_fields in SEARCH_FIELD_CHOICES:
        for variant in mixed:
            assert queries._plain_parser(search_fields).parse(variant) is None, variant


def test_parse_answers_plain_words_without_running_whooshs_parser(monkeypatch, fixture_index):
    def refuse(self, text, normalize=True, debug=False):
        raise AssertionError(f"the parser ran for {text!r}")

    index = fixture_index.open()
    with index.searcher() as searcher:
        reader = searcher.reader()
        monkeypatch.setattr(QueryParser, "parse", refuse)
        parsed = queries.parse(
            "Learned caches", ("title", "abstract", "authors"), reader, None, None
        )
        monkeypatch.undo()
        expected = queries._parser(queries.SEARCH_FIELDS).parse("Learned caches")
    assert_same_query(parsed.parsed, expected)
    assert parsed.query == expected


def test_the_fast_path_refuses_parsers_it_does_not_reproduce():
    schema = queries._parser(queries.SEARCH_FIELDS).schema
    with pytest.raises(ValueError):
        PlainParser(MultifieldParser(["content"], schema, group=AndGroup))
    with pytest.raises(ValueError):
        PlainParser(
            MultifieldParser(["content"], schema, group=OrGroup, termclass=query.Variations)
        )
    with pytest.raises(ValueError):
        PlainParser(MultifieldParser(["year"], schema, group=OrGroup))  # numbers parse themselves
