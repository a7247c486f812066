"""The limits that keep every query cheap on every engine (querylang/limits.py): each one refused
through parse_query at the position of what exceeds it, and clean()/check_limits() held to the
plain per-character versions they replaced."""

from __future__ import annotations

import itertools
import re
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from searchsvc.domain.errors import QueryError
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.querylang import parse_query
from searchsvc.domain.querylang.limits import (
    MAX_BOOST,
    MAX_EXPANDING_WORDS,
    MAX_FUZZY_LENGTH,
    MAX_NESTING,
    MAX_OPERATORS,
    MAX_QUERY_WORDS,
    MAX_SLOP,
    MAX_WILDCARDS_PER_WORD,
    MAX_WORD_LENGTH,
    check_limits,
    clean,
)
from tests.support import examples

# -- each limit, through parse_query ----------------------------------------------------------


def _error(text: str) -> QueryError:
    with pytest.raises(QueryError) as caught:
        parse_query(text)
    return caught.value


def _words(count: int, word: str = "w") -> str:
    return " ".join([word] * count)


LIMITS = [
    # (name, the largest text within the limit, a text over it, the message, its position)
    (
        "words",
        _words(MAX_QUERY_WORDS),
        _words(MAX_QUERY_WORDS + 1),
        f"more than {MAX_QUERY_WORDS} words",
        2 * MAX_QUERY_WORDS,  # the first word over the limit
    ),
    (
        "operator characters",
        ":" * 100 + " " + ":" * 100,
        ":" * 100 + " " + ":" * 100 + " :",
        f"more than {MAX_OPERATORS} operator characters",
        202,  # the first operator character over the limit
    ),
    (
        "word length",
        "a " + "x" * MAX_WORD_LENGTH,
        "a " + "x" * (MAX_WORD_LENGTH + 1),
        f"longer than {MAX_WORD_LENGTH} characters",
        2,
    ),
    (
        "wildcards per word",
        "learning a*b*c*d?",
        "learning a*b*c*d*e? now",
        f"at most {MAX_WILDCARDS_PER_WORD} wildcards in one word",
        9,
    ),
    (
        "nesting",
        "(" * MAX_NESTING + "a" + ")" * MAX_NESTING,
        "(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1),
        f"nested more than {MAX_NESTING} deep",
        MAX_NESTING,  # the first ( too deep
    ),
    (
        "expanding words",
        " ".join(f"w{n}*" for n in range(MAX_EXPANDING_WORDS)),
        " ".join(f"w{n}*" for n in range(MAX_EXPANDING_WORDS + 1)),
        f"at most {MAX_EXPANDING_WORDS} wildcard or fuzzy words",
        4 * MAX_EXPANDING_WORDS,  # "wN* " each: the ninth word
    ),
    (
        "wildcard and fuzzy words together",
        "a* b~ c* d~ e* f~ g* h~",
        "a* b~ c* d~ e* f~ g* h~ learning i~",
        f"at most {MAX_EXPANDING_WORDS} wildcard or fuzzy words",
        len("a* b~ c* d~ e* f~ g* h~ learning "),
    ),
    (
        "fuzzy word length",
        "learning " + "x" * MAX_FUZZY_LENGTH + "~",
        "learning " + "x" * (MAX_FUZZY_LENGTH + 1) + "~",
        f"a fuzzy word may have at most {MAX_FUZZY_LENGTH} characters",
        9,
    ),
    (
        "phrase slop",
        f'"a b"~{MAX_SLOP}',
        f'"a b"~{MAX_SLOP + 1}',
        f"at most {MAX_SLOP} words between",
        5,
    ),
    (
        "boost",
        f"learning^{MAX_BOOST:g}",
        f"learning^{MAX_BOOST + 1:g}",
        f"a boost may be at most {MAX_BOOST:g}",
        8,
    ),
]


@pytest.mark.parametrize(
    ("within", "over", "message", "position"),
    [case[1:] for case in LIMITS],
    ids=[case[0] for case in LIMITS],
)
def test_each_limit_is_refused_at_the_position_of_what_exceeds_it(within, over, message, position):
    parse_query(within)  # exactly at the limit: accepted
    error = _error(over)
    assert message in error.message
    assert error.details["position"] == position
    assert error.message.endswith(f"(at character {position + 1})")


def test_the_limits_hold_for_a_search_request_too():
    with pytest.raises(QueryError) as caught:
        SearchRequest(q=_words(MAX_QUERY_WORDS + 1))
    assert caught.value.details["position"] == 2 * MAX_QUERY_WORDS


def test_plain_words_are_counted_before_the_fast_path():
    error = _error(_words(MAX_QUERY_WORDS + 5, "learning"))
    assert error.details["position"] == len("learning ") * MAX_QUERY_WORDS


def test_hostile_input_is_refused_or_parsed_quickly():
    for text in ("(" * 5_000, ")" * 5_000, '"' * 10_000, "*" * 10_000, "x" * 10_000):
        with pytest.raises(QueryError):
            parse_query(text)
    assert parse_query("learning " * 100).root is not None


def test_the_expanding_words_limit_points_at_the_ninth_such_word_of_the_text():
    text = "NOT a* b* c* d* e* f* g* h* i*"
    assert _error(text).details["position"] == text.index("i*")


# -- clean() and the limits, against the per-character versions they replaced -------------------
def _clean_per_character(text: str) -> str:
    return "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Cs") and ch not in "\t\n" else ch
        for ch in text
    )


def _check_limits_per_character(text: str) -> None:
    words = list(itertools.islice(re.finditer(r"\S+", text), MAX_QUERY_WORDS + 1))
    if len(words) > MAX_QUERY_WORDS:
        raise QueryError("words", position=words[MAX_QUERY_WORDS].start())
    operators = [i for i, ch in enumerate(text) if ch in '"()[]{}*?~^:']
    if len(operators) > MAX_OPERATORS:
        raise QueryError("operator characters", position=operators[MAX_OPERATORS])
    for word in re.finditer(r"\S+", text):
        if len(word.group()) > MAX_WORD_LENGTH:
            raise QueryError("longer", position=word.start())
        if len(re.findall(r"\*+|\?", word.group())) > MAX_WILDCARDS_PER_WORD:
            raise QueryError("wildcards", position=word.start())
    depth = 0
    for position, ch in enumerate(text):
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        if depth > MAX_NESTING:
            raise QueryError("nested", position=position)


_LIMITS = ("words", "operator characters", "longer", "wildcards", "nested")


def _limit_error(check, text: str) -> tuple[str, int] | None:
    """Which limit the check found exceeded (a word of its message), and where."""
    try:
        check(text)
    except QueryError as error:
        (limit,) = [word for word in _LIMITS if word in error.message]
        return limit, error.details["position"]
    return None


_ASCII_TEXTS = st.text(st.characters(max_codepoint=127), max_size=60)
# Pieces that add up to each limit now and then: words, operators, word length, wildcards, depth.
_LIMIT_PIECES = st.sampled_from(
    ["(", ")", "((((((", "))", "*", "**", "?", '"', ":", "~", "^", "[", "}", "a", "learning",
     " ", "\t", "\n", "x" * 60, "a?b*c", "(a*", " w" * 30, '"' * 50, " (" * 10, ")" * 10]
)  # fmt: skip


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(_ASCII_TEXTS, st.text(max_size=60)))
def test_clean_replaces_what_the_per_character_version_replaced(text):
    assert clean(text) == _clean_per_character(text)


def test_clean_of_every_ascii_character_is_that_of_the_per_character_version():
    for code in range(128):
        assert clean(chr(code)) == _clean_per_character(chr(code)), code


def test_clean_keeps_every_offset():
    text = "a\x00b\u200bc\ud800d\te\nf"
    assert clean(text) == "a b c d\te\nf"
    assert len(clean(text)) == len(text)


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(_LIMIT_PIECES, max_size=100).map("".join))
@example("w " * 100)
@example("w " * 101)
@example('"' * 100 + " " + '"' * 101)
@example("a " + ":" * 201)
@example("x" * 100)
@example("a " + "x" * 101)
@example("a*b*c*d?")
@example("a*b*c*d*e?")
@example("(" * 16 + ")" * 16 + "(")
@example(" (" * 17)
def test_the_limits_fall_where_the_per_character_checks_put_them(text):
    found = _limit_error(check_limits, text)
    expected = _limit_error(_check_limits_per_character, text)
    assert found == expected
