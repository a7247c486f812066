"""Query text -> tokens: words, "phrases", ranges, parentheses, operators and field prefixes.

Whitespace, parentheses and double quotes separate tokens; every other character belongs to a
word. A word starting with a known field name and a colon (`title:`, `Author:`) is a field
prefix followed by its value; any other colon is part of the word (`foo:bar` is two words for the
engine's analysis). `AND`, `OR` and `NOT` are operators only in capitals and on their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from searchsvc.domain.querylang.limits import MAX_BOOST, MAX_SLOP, query_error
from searchsvc.domain.querylang.nodes import FIELD_ALIASES, FIELDS

WORD, PHRASE, RANGE, FIELD, LPAREN, RPAREN = "word", "phrase", "range", "field", "(", ")"
OPERATORS = frozenset({"AND", "OR", "NOT"})

_FIELD_PREFIX = re.compile(
    "(" + "|".join(sorted((*FIELDS, *FIELD_ALIASES), key=len, reverse=True)) + "):", re.IGNORECASE
)
_WORD_RUN = re.compile(r'[^\s()"]+')
# `[2020 TO 2023]`, `{2020 TO *]`: inclusive [ ], exclusive { }.
_RANGE = re.compile(r"([\[{])\s*([^\s\[\]{}]+)\s+TO\s+([^\s\[\]{}]+)\s*([\]}])")
_SLOP = re.compile(r"~([0-9]+)")
_BOOST = re.compile(r"\^([0-9]+(?:\.[0-9]+)?|\.[0-9]+)")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # WORD, PHRASE, RANGE, FIELD, LPAREN, RPAREN or an operator ("AND", "OR", "NOT")
    start: int
    end: int
    text: str = ""  # a word as typed, a phrase's inside, a field's name (its canonical form)
    boost: float = 1.0  # phrases, ranges and closing parentheses carry their own `^boost`
    slop: int = 0  # phrases
    # RANGE: the two bounds as typed, where each starts, and whether each is inclusive
    bounds: tuple[str, str] = ("", "")
    bound_starts: tuple[int, int] = (0, 0)
    inclusive: tuple[bool, bool] = (True, True)


def tokenize(text: str) -> list[Token]:
    """The tokens of a query text; QueryError for an unclosed quote or a bad suffix."""
    tokens: list[Token] = []
    position, length = 0, len(text)
    while position < length:
        ch = text[position]
        if ch.isspace():
            position += 1
        elif ch == "(":
            tokens.append(Token(LPAREN, position, position + 1))
            position += 1
        elif ch == ")":
            boost, end = _boost_after(text, position + 1)
            tokens.append(Token(RPAREN, position, end, boost=boost))
            position = end
        elif ch == '"':
            token = _phrase(text, position)
            tokens.append(token)
            position = token.end
        else:
            position = _word_or_field(text, position, tokens)
    return tokens


def _word_or_field(text: str, start: int, tokens: list[Token]) -> int:
    """Append the word, range or field prefix (and its value) at `start`; return where it ends."""
    if text[start] in "[{" and (token := _range(text, start)) is not None:
        tokens.append(token)
        return token.end
    run = _WORD_RUN.match(text, start)
    assert run is not None  # `start` is neither whitespace nor a separator
    word = run.group()
    prefix = _FIELD_PREFIX.match(word)
    if prefix is None:
        kind = word if word in OPERATORS else WORD
        tokens.append(Token(kind, start, run.end(), text=word))
        return run.end()
    name = prefix.group(1).lower()
    value_start = start + prefix.end()
    tokens.append(Token(FIELD, start, value_start, text=FIELD_ALIASES.get(name, name)))
    if value_start >= len(text) or text[value_start].isspace() or text[value_start] in '()"':
        return value_start  # a group, a phrase or nothing follows: the parser decides
    if text[value_start] in "[{" and (token := _range(text, value_start)) is not None:
        tokens.append(token)
        return token.end
    value = _WORD_RUN.match(text, value_start)
    assert value is not None
    # A field's value is a word even when it reads like an operator (`title:AND`).
    tokens.append(Token(WORD, value_start, value.end(), text=value.group()))
    return value.end()


def _phrase(text: str, start: int) -> Token:
    close = text.find('"', start + 1)
    if close < 0:
        raise query_error("this quote is never closed", start)
    end = close + 1
    slop = 0
    if text.startswith("~", end):
        match = _SLOP.match(text, end)
        if match is None:
            raise query_error('~ after a phrase takes a number of words, such as "a b"~2', end)
        slop = int(match.group(1))
        if slop > MAX_SLOP:
            raise query_error(f"a phrase's ~ may allow at most {MAX_SLOP} words between", end)
        end = match.end()
    boost, end = _boost_after(text, end)
    return Token(PHRASE, start, end, text=text[start + 1 : close], slop=slop, boost=boost)


def _range(text: str, start: int) -> Token | None:
    match = _RANGE.match(text, start)
    if match is None:
        return None
    boost, end = _boost_after(text, match.end())
    return Token(
        RANGE,
        start,
        end,
        text=match.group(0),
        boost=boost,
        bounds=(match.group(2), match.group(3)),
        bound_starts=(match.start(2), match.start(3)),
        inclusive=(match.group(1) == "[", match.group(4) == "]"),
    )


def _boost_after(text: str, position: int) -> tuple[float, int]:
    """A `^2` suffix at `position`: (boost, where it ends); (1.0, position) when there is none."""
    if not text.startswith("^", position):
        return 1.0, position
    match = _BOOST.match(text, position)
    if match is None:
        raise query_error("^ must be followed by a boost, a number such as 2", position)
    return check_boost(match.group(1), position), match.end()


def check_boost(number: str, position: int) -> float:
    boost = float(number)
    if boost > MAX_BOOST:
        raise query_error(f"a boost may be at most {MAX_BOOST:g}", position)
    return boost
