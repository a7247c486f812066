"""The query language in the domain: the tree of every construct, with the spans of its leaves,
and a QueryError at the exact position of every kind of malformed text (parser.py's docstring)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from searchsvc.domain.errors import QueryError
from searchsvc.domain.querylang import (
    And,
    Fuzzy,
    MatchAll,
    Not,
    Or,
    Phrase,
    QueryTree,
    Wildcard,
    Word,
    YearRange,
    parse_query,
)
from searchsvc.domain.querylang.lexer import tokenize
from searchsvc.domain.querylang.nodes import leaves
from searchsvc.domain.querylang.parser import _Parser, plain_words
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR
from tests.support import examples


def word(text: str, start: int, field: str | None = None, boost: float = 1.0) -> Word:
    """A Word whose span is the word itself, starting at `start`."""
    return Word(text, field, start, start + len(text), boost)


# -- the tree of every construct --------------------------------------------------------------

CONSTRUCTS = [
    # words
    ("learning", word("learning", 0)),
    ("  learning  ", word("learning", 2)),
    ("GPU-based", word("GPU-based", 0)),
    ("Balázs", word("Balázs", 0)),
    ("a b c", Or((word("a", 0), word("b", 2), word("c", 4)))),
    ("a\tb\nc", Or((word("a", 0), word("b", 2), word("c", 4)))),
    # phrases, with slop and boost
    ('"learned caches"', Phrase("learned caches", None, 0, 16, 1)),
    ('"learned caches"~2', Phrase("learned caches", None, 0, 18, 1, slop=2)),
    ('"learned caches"^2', Phrase("learned caches", None, 0, 18, 1, boost=2.0)),
    ('"learned caches"~2^3', Phrase("learned caches", None, 0, 20, 1, slop=2, boost=3.0)),
    ('x "a b"', Or((word("x", 0), Phrase("a b", None, 2, 7, 3)))),
    ('title:"learned caches"', Phrase("learned caches", "title", 6, 22, 7)),
    # field prefixes, any case, and their aliases
    ("title:learning", word("learning", 6, "title")),
    ("Title:learning", word("learning", 6, "title")),
    ("TITLE:learning", word("learning", 6, "title")),
    ("abstract:latency", word("latency", 9, "abstract")),
    ("author:lovelace", word("lovelace", 7, "author")),
    ("authors:lovelace", word("lovelace", 8, "author")),
    ("Authors:lovelace", word("lovelace", 8, "author")),
    ("category:cs.DC", word("cs.DC", 9, "category")),
    ("categories:cs.DC", word("cs.DC", 11, "category")),
    ('category:"cs.DC"', word("cs.DC", 10, "category")),
    ('category:" cs.DC "', Word("cs.DC", "category", 10, 17)),
    ("title:AND", word("AND", 6, "title")),  # a field's value is a word even if it reads as one
    # field groups
    ("title:(a OR b)", Or((word("a", 7, "title"), word("b", 12, "title")))),
    ("title:(a b)", Or((word("a", 7, "title"), word("b", 9, "title")))),
    (
        "title:(a AND NOT b)",
        And((word("a", 7, "title"), Not(word("b", 17, "title"), 13))),
    ),
    (
        "title:(a abstract:b)",
        Or((word("a", 7, "title"), word("b", 18, "abstract"))),
    ),
    # AND / OR / NOT precedence
    ("a OR b", Or((word("a", 0), word("b", 5)))),
    ("a AND b", And((word("a", 0), word("b", 6)))),
    ("a AND b OR c", Or((And((word("a", 0), word("b", 6))), word("c", 11)))),
    ("a OR b AND c", Or((word("a", 0), And((word("b", 5), word("c", 11)))))),
    ("a AND b c", Or((And((word("a", 0), word("b", 6))), word("c", 8)))),
    ("a AND b AND c", And((word("a", 0), word("b", 6), word("c", 12)))),
    ("(a OR b) AND c", And((Or((word("a", 1), word("b", 6))), word("c", 13)))),
    ("a AND (b OR c)", And((word("a", 0), Or((word("b", 7), word("c", 12)))))),
    ("NOT a AND b", And((Not(word("a", 4), 0), word("b", 10)))),
    ("a AND NOT b", And((word("a", 0), Not(word("b", 10), 6)))),
    ("and or not", Or((word("and", 0), word("or", 4), word("not", 7)))),  # lower case: words
    # NOT inside an OR group excludes from the whole group
    ("a b NOT c", And((Or((word("a", 0), word("b", 2))), Not(word("c", 8), 4)))),
    ("a NOT b NOT c", And((word("a", 0), Not(Or((word("b", 6), word("c", 12))), 2)))),
    ("a OR NOT b", And((word("a", 0), Not(word("b", 9), 5)))),
    # a lone NOT: every record without it
    ("NOT c", Not(word("c", 4), 0)),
    ("NOT NOT c", Not(Not(word("c", 8), 4), 0)),
    ("NOT a NOT b", Not(Or((word("a", 4), word("b", 10))), 0)),
    # wildcards
    ("sched*", Wildcard("sched*", None, 0, 6)),
    ("congest?on", Wildcard("congest?on", None, 0, 10)),
    ("title:sched*", Wildcard("sched*", "title", 6, 12)),
    ("sched*^2", Wildcard("sched*", None, 0, 6, 2.0)),
    # fuzzy
    ("schedulng~", Fuzzy("schedulng", 1, None, 0, 9)),
    ("schedulng~1", Fuzzy("schedulng", 1, None, 0, 9)),
    ("schedulng~2", Fuzzy("schedulng", 2, None, 0, 9)),
    ("title:schedulng~2^3", Fuzzy("schedulng", 2, "title", 6, 15, 3.0)),
    # every record
    ("", MatchAll()),
    ("   ", MatchAll()),
    ("*", MatchAll(0, 1)),
    ("*:*", MatchAll(0, 3)),
    ("  *:*", MatchAll(2, 5)),
    ("* learning", MatchAll(0, 1)),  # every record matches: the word adds nothing
    ("learning AND *", word("learning", 0)),
    ("* AND NOT x", And((MatchAll(0, 1), Not(word("x", 10), 6)))),
    # years
    ("year:2021", YearRange(2021, 2021, 5, 9)),
    ("Year:2021", YearRange(2021, 2021, 5, 9)),
    ("year:2020..2023", YearRange(2020, 2023, 5, 15)),
    ("year:2020..", YearRange(2020, MAX_YEAR, 5, 11)),
    ("year:..2023", YearRange(MIN_YEAR, 2023, 5, 11)),
    ("year:[2020 TO 2023]", YearRange(2020, 2023, 5, 19)),
    ("year:{2020 TO 2023}", YearRange(2021, 2022, 5, 19)),
    ("year:[2020 TO 2023}", YearRange(2020, 2022, 5, 19)),
    ("year:[2020 TO *]", YearRange(2020, MAX_YEAR, 5, 16)),
    ("year:{* TO 2020}", YearRange(MIN_YEAR, 2019, 5, 16)),
    ("year:[* TO *]", YearRange(MIN_YEAR, MAX_YEAR, 5, 13)),
    ("year:[ 2020 TO 2023 ]", YearRange(2020, 2023, 5, 21)),
    ("year:2021^2", YearRange(2021, 2021, 5, 9, 2.0)),
    ("year:[2020 TO 2023]^2", YearRange(2020, 2023, 5, 21, 2.0)),
    ("year:(2020 OR 2022)", Or((YearRange(2020, 2020, 6, 10), YearRange(2022, 2022, 14, 18)))),
    (
        "learning year:2021",
        Or((word("learning", 0), YearRange(2021, 2021, 14, 18))),
    ),
    # boosts on words, phrases and groups
    ("learning^2", word("learning", 0, boost=2.0)),
    ("learning^0.5", word("learning", 0, boost=0.5)),
    ("learning^.5", word("learning", 0, boost=0.5)),
    ("learning^100", word("learning", 0, boost=100.0)),
    ('"a b"^2', Phrase("a b", None, 0, 7, 1, boost=2.0)),
    ("(a b)^2", Or((word("a", 1), word("b", 3)), boost=2.0)),
    ("(a AND b)^2", And((word("a", 1), word("b", 7)), boost=2.0)),
    ("(learning)^2", word("learning", 1, boost=2.0)),
    ("(learning^2)^3", word("learning", 1, boost=6.0)),
    ("title:(a b)^2", Or((word("a", 7, "title"), word("b", 9, "title")), boost=2.0)),
    # unknown prefixes and punctuation stay words, for the engine's analysis
    ("foo:bar", word("foo:bar", 0)),
    ("titles:x", word("titles:x", 0)),
    ("http://example.org", word("http://example.org", 0)),
    ("title:year:2020", word("year:2020", 6, "title")),
    (":", word(":", 0)),
    ("{}", word("{}", 0)),
    ("[a", word("[a", 0)),
    # control characters become spaces, offsets kept
    ("learning\x00caches", Or((word("learning", 0), word("caches", 9)))),
]


@pytest.mark.parametrize(("text", "root"), CONSTRUCTS, ids=[repr(text) for text, _ in CONSTRUCTS])
def test_each_construct_parses_into_its_tree_with_exact_spans(text, root):
    tree = parse_query(text)
    assert isinstance(tree, QueryTree)
    assert tree.root == root


def test_the_tree_keeps_the_cleaned_text_at_the_same_offsets():
    tree = parse_query("learning\x00caches\u200b")
    assert tree.text == "learning caches "
    assert [leaf.start for leaf in tree.leaves()] == [0, 9]


def test_match_all_is_the_tree_of_an_empty_query_and_of_a_star():
    assert parse_query("").match_all and parse_query("*").match_all
    assert not parse_query("learning").match_all


def test_positive_leaves_leave_out_what_a_not_excludes():
    tree = parse_query("a b NOT c")
    assert [leaf.text for leaf in tree.leaves()] == ["a", "b", "c"]
    assert [leaf.text for leaf in tree.positive_leaves()] == ["a", "b"]


def test_a_single_year_range_says_so():
    assert parse_query("year:2021").root.single_year
    assert not parse_query("year:2021..2022").root.single_year


# -- malformed text: a QueryError naming the problem and where it is ------------------------

MALFORMED = [
    # a field prefix with nothing right after it
    ("title:", "title: needs a word", 0),
    ("author:", "author: needs a word", 0),
    ("authors:", "author: needs a word", 0),
    ("title: x", "title: needs a word", 0),
    ("learning title:", "title: needs a word", 9),
    ("title:)", "title: needs a word", 0),
    ("(title:)", "title: needs a word", 1),
    # unclosed quotes, parentheses and ranges
    ('"unclosed', "this quote is never closed", 0),
    ('"learned caches', "this quote is never closed", 0),
    ('"a b" "c', "this quote is never closed", 6),
    ("((learning", "this ( is never closed", 1),
    ("(a", "this ( is never closed", 0),
    ("title:(a b", "this ( is never closed", 6),
    ("(", "this ( is never closed", 0),
    ("year:[2020 TO", "this range is not complete", 5),
    # a ) without its (
    ("learning))", "this ) has no ( before it", 8),
    ("learning)", "this ) has no ( before it", 8),
    (")(", "this ) has no ( before it", 0),
    ("(a))", "this ) has no ( before it", 3),
    # empty parentheses and phrases
    ("()", "empty parentheses", 0),
    ("learning ( )", "empty parentheses", 9),
    ("title:()", "empty parentheses", 6),
    ('""', "empty phrase", 0),
    ('learning "  "', "empty phrase", 9),
    ('category:""', "empty phrase", 9),
    # an operator without the term it needs
    ("AND", "AND needs a word or a group before it", 0),
    ("OR", "OR needs a word or a group before it", 0),
    ("NOT", "NOT needs a word or a group after it", 0),
    ("learning AND", "AND needs a word or a group after it", 9),
    ("learning OR", "OR needs a word or a group after it", 9),
    ("learning NOT", "NOT needs a word or a group after it", 9),
    ("OR learning", "OR needs a word or a group before it", 0),
    ("AND learning", "AND needs a word or a group before it", 0),
    ("NOT NOT NOT", "NOT needs a word or a group after it", 8),
    ("a AND OR b", "AND needs a word or a group after it", 2),
    ("(a AND)", "AND needs a word or a group after it", 3),
    ("(NOT)", "NOT needs a word or a group after it", 1),
    # a year that is not a year, or a range that holds none
    ("year:abc", "year:abc is not a year", 5),
    ("learning year:abc", "year:abc is not a year", len("learning year:")),
    ("year:2020..abc", "year:2020..abc is not a year", 5),
    ("year:2020..99999", "years are from 1000 to 2999", len("year:2020..")),
    ("year:[abc TO 2020]", "year:abc is not a year", len("year:[")),
    ("year:2023..2020", "the year range 2023..2020 ends before it starts", 5),
    ("year:{2020 TO 2021}", "the range {2020 TO 2021} holds no year", 5),
    ("year:[2023 TO 2020]", "the range [2023 TO 2020] holds no year", 5),
    ("year:99999", "years are from 1000 to 2999", 5),
    ("year:999", "years are from 1000 to 2999", 5),
    ("year:..", "a year range needs a year on one side at least", 5),
    ("year:*", "year: takes a year such as 2021 or a range", 5),
    ("year:202?", "year: takes a year such as 2021 or a range", 5),
    ("year:2021~", "year: takes a year such as 2021 or a range", 5),
    ('year:"2021"', "year: takes a year or a range, not a phrase", 5),
    ("year:２０２１", "is not a year", 5),  # digits, but not ASCII ones
    # a range on another field than year
    ("[a TO z]", "ranges are for years only", 0),
    ("title:[a TO z]", "ranges are for years only", 6),
    ("quantum {a TO z}", "ranges are for years only", 8),
    ("[2020 TO 2023]", "ranges are for years only", 0),
    # boosts
    ("learning^", "^ must be followed by a boost", 8),
    ("learning^x", "^ must be followed by a boost", 8),
    ("learning^1e308", "^ must be followed by a boost", 8),
    ("learning^-1", "^ must be followed by a boost", 8),
    ('"a b"^', "^ must be followed by a boost", 5),
    ("(a b)^", "^ must be followed by a boost", 5),
    ("learning^200", "a boost may be at most 100", 8),
    ('"a b"^101', "a boost may be at most 100", 5),
    ("(a b)^1000", "a boost may be at most 100", 5),
    ("^2", "^ must follow a word", 0),
    ("learning ^2", "^ must follow a word", 9),
    # fuzzy words and phrase slop
    ("~", "~ must follow a word", 0),
    ("learning~9", "a fuzzy word allows 1 to 2 edits", 8),
    ("learning~0", "a fuzzy word allows 1 to 2 edits", 8),
    ("learning~3", "a fuzzy word allows 1 to 2 edits", 8),
    ("a~b", "~ ends a fuzzy word", 1),
    ("sch*~", "a word cannot be both a wildcard and fuzzy", 0),
    ("title:x*~", "a word cannot be both a wildcard and fuzzy", 6),
    ("category:cs~", "category: values are exact, they cannot be fuzzy", 9),
    ('"a b"~11', "a phrase's ~ may allow at most 10 words between", 5),
    ('"a b"~x', "~ after a phrase takes a number of words", 5),
    # too many words that each expand into many index terms
    ("a* b* c* d* e* f* g* h* i*", "at most 8 wildcard or fuzzy words per query", 24),
    ("a~ b~ c~ d~ e~ f~ g~ h~ i~", "at most 8 wildcard or fuzzy words per query", 24),
]


@pytest.mark.parametrize(
    ("text", "fragment", "position"), MALFORMED, ids=[repr(case[0]) for case in MALFORMED]
)
def test_malformed_text_is_a_query_error_at_the_position_of_its_cause(text, fragment, position):
    with pytest.raises(QueryError) as caught:
        parse_query(text)
    error = caught.value
    assert fragment in error.message
    assert error.details["position"] == position
    assert error.message.endswith(f"(at character {position + 1})")
    assert error.code == "invalid_query"


def test_a_bad_upper_bound_of_a_bracket_range_is_reported_where_it_is():
    with pytest.raises(QueryError) as caught:
        parse_query("year:[2020 TO abc]")
    assert caught.value.details["position"] == len("year:[2020 TO ")


def test_a_word_of_punctuation_only_is_no_error():
    for text in (":", "{}", "-", "?:", "&&", "||"):
        tree = parse_query(text)
        assert tree.root is not None


# -- properties -----------------------------------------------------------------------------

SYNTAX = st.sampled_from(
    [*'"()*?~^:[]{}.-+/\\', " ", "\t", "AND", "OR", "NOT", " TO ", "title:", "year:", "Authors:",
     "category:", "..", "2021", "~2", "^2", "*:*"]
)  # fmt: skip
ANY_TEXT = st.one_of(
    st.text(max_size=80),
    st.lists(st.one_of(SYNTAX, st.text(max_size=3)), max_size=30).map("".join),
)


def _spans_match_the_text(tree: QueryTree) -> None:
    """Each leaf's span lies within the text and holds what the leaf says it holds."""
    text = tree.text
    for leaf in tree.leaves():
        assert 0 <= leaf.start <= leaf.end <= len(text), leaf
        span = text[leaf.start : leaf.end]
        if isinstance(leaf, Word):
            assert leaf.text and leaf.text in span, leaf
        elif isinstance(leaf, Wildcard):
            assert span == leaf.pattern, leaf
        elif isinstance(leaf, Fuzzy):
            assert span == leaf.text, leaf
        elif isinstance(leaf, Phrase):
            assert text[leaf.text_start : leaf.text_start + len(leaf.text)] == leaf.text
            assert span.startswith('"') and leaf.start < leaf.text_start < leaf.end
        elif isinstance(leaf, YearRange):
            assert MIN_YEAR <= leaf.low <= leaf.high <= MAX_YEAR and span, leaf


def _no_not_directly_inside_an_or(node) -> None:
    if isinstance(node, Or):
        assert not any(isinstance(child, Not) for child in node.children), node
    if isinstance(node, And | Or):
        for child in node.children:
            _no_not_directly_inside_an_or(child)
    elif isinstance(node, Not):
        _no_not_directly_inside_an_or(node.child)


@settings(max_examples=examples(2000), deadline=None)
@given(ANY_TEXT)
@example("learning year:abc")
@example("\ud800(")
@example('"a b"~')
@example("title:(a b")
def test_any_text_gives_a_tree_or_a_query_error_within_the_text(text):
    try:
        tree = parse_query(text)
    except QueryError as error:
        position = error.details["position"]
        assert isinstance(position, int) and 0 <= position < len(text)
        assert error.message.endswith(f"(at character {position + 1})")
    else:
        assert len(tree.text) == len(text)
        _spans_match_the_text(tree)
        _no_not_directly_inside_an_or(tree.root)


PLAIN_TEXTS = st.lists(
    st.one_of(
        st.text(st.sampled_from("abcxyzABCXYZ0123456789"), min_size=1, max_size=8),
        st.sampled_from(["AN", "ANDY", "ORB", "NOTE", "and", "or", "not", "TO", "a1"]),
    ),
    max_size=20,
).flatmap(
    lambda words: st.lists(
        st.text(st.sampled_from(" \t\n"), min_size=1, max_size=3),
        min_size=len(words) + 1,
        max_size=len(words) + 1,
    ).map(lambda gaps: gaps[0] + "".join(w + g for w, g in zip(words, gaps[1:], strict=True)))
)


@settings(max_examples=examples(1000), deadline=None)
@given(PLAIN_TEXTS)
@example("learning")
@example(" a  b\tc\n")
@example("ANDY ORB NOTE")
def test_the_fast_path_for_plain_words_gives_the_grammars_tree(text):
    if not text.strip():
        return
    grammar = _Parser(text, tokenize(text)).parse()
    assert plain_words(text) == grammar
    assert parse_query(text).root == grammar


def test_the_fast_path_is_not_taken_for_operators_or_syntax():
    assert isinstance(parse_query("a AND b").root, And)
    assert isinstance(parse_query("a NOT b").root, And)
    assert parse_query("a-b").root == word("a-b", 0)  # the fast path would make two words


def test_leaves_walks_every_leaf_under_a_node_including_those_under_a_not():
    tree = parse_query('(a AND "b c") d~ NOT e*')
    assert [type(leaf) for leaf in leaves(tree.root)] == [Word, Phrase, Fuzzy, Wildcard]
    assert list(tree.leaves()) == list(leaves(tree.root))
