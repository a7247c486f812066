"""The limits that keep any query cheap on every engine, and the cleaning done before parsing.

A query over a limit is refused with a QueryError saying which limit and where (`position`, the
offset of the offending character in the query text), never cut short or searched slowly.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

from searchsvc.domain.errors import QueryError

MAX_QUERY_WORDS = 100
MAX_NESTING = 16
MAX_WORD_LENGTH = 100  # longer "words" are pastes, not words; engines' term lookups grow with it
MAX_OPERATORS = 200  # quotes, parentheses, wildcards and other syntax characters
MAX_WILDCARDS_PER_WORD = 4
MAX_EXPANDING_WORDS = 8  # wildcard and fuzzy words per query: each becomes many index terms
MAX_FUZZY_DISTANCE = 2
MAX_FUZZY_LENGTH = 32  # edit distances over longer words cost more and find nothing useful
MAX_SLOP = 10  # extra positions between the words of a phrase (`"a b"~3`)
MAX_BOOST = 100.0

_OPERATOR_CHARS = frozenset('"()[]{}*?~^:')
_OPERATOR = re.compile("[" + re.escape("".join(sorted(_OPERATOR_CHARS))) + "]")
_WILDCARDS = re.compile(r"\*+|\?")
# ASCII has no format (Cf) or surrogate (Cs) characters and its control characters (Cc) are
# U+0000-U+001F and U+007F: what clean() replaces in ASCII text, found without a category lookup
# per character.
_ASCII_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_WORDS = re.compile(r"\S+")


def query_error(message: str, position: int) -> QueryError:
    """A QueryError pointing at `position` (0-based in details; counted from 1 in the message)."""
    return QueryError(f"{message} (at character {position + 1})", position=position)


def clean(text: str) -> str:
    """Control and format characters (NUL included) become spaces, so offsets stay put."""
    if text.isascii():
        return _ASCII_CONTROLS.sub(" ", text)
    return "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Cs") and ch not in "\t\n" else ch
        for ch in text
    )


def check_limits(text: str) -> None:
    """Raise QueryError at the first limit `text` exceeds: words, operators, word length,
    wildcards per word, nesting depth (checked before parsing, so that parsing stays cheap)."""
    words = list(itertools.islice(_WORDS.finditer(text), MAX_QUERY_WORDS + 1))
    if len(words) > MAX_QUERY_WORDS:
        raise query_error(
            f"the query has more than {MAX_QUERY_WORDS} words", words[MAX_QUERY_WORDS].start()
        )
    operators = [match.start() for match in _OPERATOR.finditer(text)]
    if len(operators) > MAX_OPERATORS:
        raise query_error(
            f"the query has more than {MAX_OPERATORS} operator characters",
            operators[MAX_OPERATORS],
        )
    for word in words:  # all of them: there are at most MAX_QUERY_WORDS
        if len(word.group()) > MAX_WORD_LENGTH:
            raise query_error(
                f"a word of the query is longer than {MAX_WORD_LENGTH} characters", word.start()
            )
        # Wildcards are operator characters: plain words (most queries) need no count.
        if operators and len(_WILDCARDS.findall(word.group())) > MAX_WILDCARDS_PER_WORD:
            raise query_error(
                f"at most {MAX_WILDCARDS_PER_WORD} wildcards in one word", word.start()
            )
    if "(" not in text:
        return
    depth = 0
    for position, ch in enumerate(text):
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        if depth > MAX_NESTING:
            raise query_error(f"parentheses are nested more than {MAX_NESTING} deep", position)
