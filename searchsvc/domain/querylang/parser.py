"""Query text -> QueryTree: the query language of searchsvc, parsed once, in the domain.

Grammar (NOT binds tightest, then AND, then OR; words side by side are OR'ed, and rank higher
the more of them a record matches)::

    query   := or_expr
    or_expr := and_expr (["OR"] and_expr)*
    and_expr:= unary ("AND" unary)*
    unary   := "NOT" unary | primary
    primary := "(" or_expr ")" ["^" boost]
             | FIELD ":" (word | phrase | range | "(" or_expr ")")     no space after the colon
             | word | phrase | "*"
    word    := text with optional * and ? wildcards, then ["~" [1|2]] (fuzzy), then ["^" boost]
    phrase  := '"' words '"' ["~" slop] ["^" boost]
    range   := ("[" | "{") bound "TO" bound ("]" | "}")    year only; `*` for an open bound

Decisions for malformed text, each a QueryError with the position of its cause: an unclosed
quote, parenthesis or range; a `)` without its `(`; empty parentheses; an operator without a term
on the side it needs (`learning AND`, `OR x`, a lone `NOT`); a field prefix with nothing right
after it (`title:`, `title: x`); a year that is not a year or a range that ends before it starts
(`year:2023..2020`); a range on another field than year; a fuzzy distance other than 1 or 2; a
`^` without a number. A word of punctuation only (`:`, `{}`) is no error: it simply has no
letters for the engine to search.

`NOT` inside an OR group excludes from the whole group: `a b NOT c` is (a OR b) without c, and a
group of negations alone (`NOT c`) is every record without c. In parentheses a NOT is an operand
of its own: `(NOT a) OR b` is every record without a, and those with b.
"""

from __future__ import annotations

import re
from dataclasses import replace

from searchsvc.domain.querylang.lexer import (
    FIELD,
    LPAREN,
    PHRASE,
    RANGE,
    RPAREN,
    WORD,
    Token,
    check_boost,
    tokenize,
)
from searchsvc.domain.querylang.limits import (
    MAX_EXPANDING_WORDS,
    MAX_FUZZY_DISTANCE,
    MAX_FUZZY_LENGTH,
    check_limits,
    clean,
    query_error,
)
from searchsvc.domain.querylang.nodes import (
    EXACT_FIELDS,
    YEAR_FIELD,
    And,
    Fuzzy,
    MatchAll,
    Node,
    Not,
    Or,
    Phrase,
    QueryTree,
    Wildcard,
    Word,
    YearRange,
    leaves,
)
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR

# Plain words (most queries): no syntax character, no operator can occur; see parse_query.
_PLAIN = re.compile(r"[A-Za-z0-9 \t\n]*")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9]+")
_OPERATOR_WORD = re.compile(r"\b(?:AND|OR|NOT)\b")
_YEAR_SPAN = re.compile(r"([0-9]*)\.\.([0-9]*)")
_BOOST_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+")
_FUZZ = re.compile(r"[0-9]*")
# A question mark ending the text, right after a word.
_QUESTION_MARK = re.compile(r"(?<=[^?*])\?(?=\s*$)")


def parse_query(text: str) -> QueryTree:
    """The QueryTree of a query text; QueryError says what is wrong and where (`position`)."""
    cleaned = clean(text)
    if _is_question(cleaned):
        cleaned = _QUESTION_MARK.sub(" ", cleaned)
    if not cleaned.strip():
        return QueryTree(cleaned, MatchAll())
    check_limits(cleaned)
    if _PLAIN.fullmatch(cleaned) and not _OPERATOR_WORD.search(cleaned):
        # The fast path: the tree the grammar gives plain words, without tokens and recursion
        # (tests/domain/test_querylang.py holds the two equal).
        return QueryTree(cleaned, plain_words(cleaned), plain_words=True)
    tokens = tokenize(cleaned)
    root = _Parser(cleaned, tokens).parse()
    _check_expanding_words(root)
    return QueryTree(cleaned, root, plain_words=_only_plain_words(tokens, root))


def _only_plain_words(tokens: list[Token], root: Node) -> bool:
    """Whether a query selects as plain words do: words without a field, wildcard or fuzzy
    mark, and no operator (`GPU-based scheduling`, `Balázs`, `infant death syndrome (SIDS)`).
    Parentheses and boosts change no selection (an OR of words is an OR in any grouping):
    they leave a query plain."""
    if not tokens or any(token.kind not in (WORD, LPAREN, RPAREN) for token in tokens):
        return False
    return all(isinstance(leaf, Word) and leaf.field is None for leaf in leaves(root))


def _is_question(text: str) -> bool:
    """Whether the text ends with a question mark after words (`how do galaxies form?`): that
    one is punctuation, not a wildcard of one character. `colou?` alone stays a wildcard."""
    return bool(_QUESTION_MARK.search(text)) and len(text.split()) > 1


def plain_words(text: str) -> Node:
    """The tree of a text of ASCII letters, digits and whitespace: an OR of its words."""
    words = [Word(m.group(), None, m.start(), m.end()) for m in _PLAIN_WORD.finditer(text)]
    return words[0] if len(words) == 1 else Or(tuple(words))


class _Parser:
    """Recursive descent over the tokens; `field` is the field a group's words belong to."""

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.position = 0

    def parse(self) -> Node:
        if not self.tokens:
            return MatchAll()
        node = self._or_expr(None)
        if self.position < len(self.tokens):  # _or_expr stops only at the end or at a `)`
            raise query_error("this ) has no ( before it", self.tokens[self.position].start)
        return node

    def _peek(self) -> Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _next(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def _or_expr(self, field: str | None) -> Node:
        items = [self._and_expr(field)]
        while (token := self._peek()) is not None and token.kind != RPAREN:
            if token.kind == "OR":
                self.position += 1
                self._expect_operand(token)
            items.append(self._and_expr(field))
        return _any_of(items)

    def _and_expr(self, field: str | None) -> Node:
        items = [self._unary(field)]
        while (token := self._peek()) is not None and token.kind == "AND":
            self.position += 1
            self._expect_operand(token)
            items.append(self._unary(field))
        return _all_of(items)

    def _unary(self, field: str | None) -> Node:
        token = self._peek()
        assert token is not None
        if token.kind == "NOT":
            self.position += 1
            self._expect_operand(token)
            return Not(self._unary(field), token.start)
        if token.kind in ("AND", "OR"):
            raise query_error(f"{token.kind} needs a word or a group before it", token.start)
        return self._primary(field)

    def _expect_operand(self, operator: Token) -> None:
        token = self._peek()
        if token is None or token.kind in (RPAREN, "AND", "OR"):
            raise query_error(f"{operator.kind} needs a word or a group after it", operator.start)

    def _primary(self, field: str | None) -> Node:
        token = self._next()
        if token.kind == LPAREN:
            return self._group(token, field)
        if token.kind == RPAREN:
            raise query_error("this ) has no ( before it", token.start)
        if token.kind == FIELD:
            value = self._peek()
            if value is None or value.start != token.end or value.kind == RPAREN:
                raise query_error(
                    f'{token.text}: needs a word, a "phrase" or a (group) right after the colon',
                    token.start,
                )
            return self._primary(token.text)
        if token.kind == PHRASE:
            return self._phrase(token, field)
        if token.kind == RANGE:
            return self._range(token, field)
        return self._word(token, field)

    def _group(self, opening: Token, field: str | None) -> Node:
        following = self._peek()
        if following is not None and following.kind == RPAREN:
            raise query_error("empty parentheses", opening.start)
        inner = None if following is None else self._or_expr(field)
        closing = self._peek()
        if inner is None or closing is None:
            raise query_error("this ( is never closed", opening.start)
        self.position += 1
        if isinstance(inner, Not):
            # A parenthesised NOT is an operand of its own, every record without its child:
            # `(NOT a) OR b` keeps a's absentees and adds b, where `NOT a OR b` excludes a.
            inner = And((MatchAll(), inner))
        return _boosted(inner, closing.boost)

    def _phrase(self, token: Token, field: str | None) -> Node:
        if field == YEAR_FIELD:
            raise query_error("year: takes a year or a range, not a phrase", token.start)
        if field in EXACT_FIELDS:
            # A quoted value is the whole value: `category:"cs.DC"`.
            value = token.text.strip()
            if not value:
                raise query_error("empty phrase", token.start)
            return Word(
                value, field, token.start + 1, token.start + 1 + len(token.text), token.boost
            )
        if not token.text.strip():
            raise query_error("empty phrase", token.start)
        return Phrase(
            token.text, field, token.start, token.end, token.start + 1, token.slop, token.boost
        )

    def _range(self, token: Token, field: str | None) -> Node:
        if field != YEAR_FIELD:
            raise query_error("ranges are for years only, such as year:[2020 TO 2023]", token.start)
        low_text, high_text = token.bounds
        low_at, high_at = token.bound_starts
        low = MIN_YEAR if low_text == "*" else _year(low_text, low_at)
        high = MAX_YEAR if high_text == "*" else _year(high_text, high_at)
        low += 0 if token.inclusive[0] or low_text == "*" else 1
        high -= 0 if token.inclusive[1] or high_text == "*" else 1
        if low > high:
            raise query_error(f"the range {token.text} holds no year", token.start)
        return YearRange(low, high, token.start, token.end, token.boost)

    def _word(self, token: Token, field: str | None) -> Node:
        start = token.start
        body, fuzz, boost = _suffixes(token.text, start)
        end = start + len(body)
        if body == "*:*" and field is None and fuzz is None:
            return MatchAll(start, end)  # a boost changes nothing: every record scores alike
        if field == YEAR_FIELD:
            if body.startswith(("[", "{")):
                raise query_error(
                    "this range is not complete: write it as year:[2020 TO 2023]", start
                )
            if fuzz is not None or "*" in body or "?" in body:
                raise query_error("year: takes a year such as 2021 or a range", start)
            return _year_value(body, start, end, boost)
        if body == "*":
            return MatchAll(start, end)
        if "*" in body or "?" in body:
            if fuzz is not None:
                raise query_error("a word cannot be both a wildcard and fuzzy", start)
            return Wildcard(body, field, start, end, boost)
        if fuzz is not None:
            if field in EXACT_FIELDS:
                raise query_error(f"{field}: values are exact, they cannot be fuzzy", start)
            if len(body) > MAX_FUZZY_LENGTH:
                raise query_error(
                    f"a fuzzy word may have at most {MAX_FUZZY_LENGTH} characters", start
                )
            return Fuzzy(body, fuzz, field, start, end, boost)
        return Word(body, field, start, end, boost)


def _suffixes(word: str, start: int) -> tuple[str, int | None, float]:
    """A word's body, fuzzy distance (None if not fuzzy) and boost: `schedulng~2^3`."""
    boost = 1.0
    caret = word.find("^")
    if caret >= 0:
        number = word[caret + 1 :]
        if not _BOOST_NUMBER.fullmatch(number):
            raise query_error("^ must be followed by a boost, a number such as 2", start + caret)
        boost = check_boost(number, start + caret)
        word = word[:caret]
    fuzz = None
    tilde = word.find("~")
    if tilde >= 0:
        digits = word[tilde + 1 :]
        if not _FUZZ.fullmatch(digits):
            raise query_error("~ ends a fuzzy word: word~ or word~2", start + tilde)
        fuzz = int(digits) if digits else 1
        if not 1 <= fuzz <= MAX_FUZZY_DISTANCE:
            raise query_error(
                f"a fuzzy word allows 1 to {MAX_FUZZY_DISTANCE} edits: word~ or word~2",
                start + tilde,
            )
        word = word[:tilde]
    if not word:
        raise query_error(f"{'~' if fuzz is not None else '^'} must follow a word", start)
    return word, fuzz, boost


def _year_value(text: str, start: int, end: int, boost: float) -> YearRange:
    span = _YEAR_SPAN.fullmatch(text)
    if span is None:
        year = _year(text, start)
        return YearRange(year, year, start, end, boost)
    low_text, high_text = span.groups()
    if not low_text and not high_text:
        raise query_error("a year range needs a year on one side at least: 2020..", start)
    low = _year(low_text, start) if low_text else MIN_YEAR
    high = _year(high_text, start + len(low_text) + 2) if high_text else MAX_YEAR
    if low > high:
        raise query_error(f"the year range {text} ends before it starts", start)
    return YearRange(low, high, start, end, boost)


def _year(text: str, position: int) -> int:
    if not text.isascii() or not text.isdigit():
        raise query_error(
            f"year:{text} is not a year: use a year such as 2021 or a range such as 2020..2023",
            position,
        )
    year = int(text)
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise query_error(f"years are from {MIN_YEAR} to {MAX_YEAR}", position)
    return year


def _any_of(items: list[Node]) -> Node:
    """An OR group; its NOT members exclude from the rest (see the module docstring)."""
    if len(items) == 1:
        return items[0]
    negations = [item for item in items if isinstance(item, Not)]
    wanted: list[Node] = [item for item in items if not isinstance(item, Not)]
    every: list[Node] = [item for item in wanted if isinstance(item, MatchAll)]
    if every:
        wanted = every[:1]  # every record matches: the other words add nothing
    if not negations:
        return wanted[0] if len(wanted) == 1 else Or(tuple(wanted))
    excluded = [item.child for item in negations]
    not_any = Not(excluded[0] if len(excluded) == 1 else Or(tuple(excluded)), negations[0].start)
    if not wanted:
        return not_any
    return And((wanted[0] if len(wanted) == 1 else Or(tuple(wanted)), not_any))


def _all_of(items: list[Node]) -> Node:
    if len(items) == 1:
        return items[0]
    # `*` adds nothing to an AND that has another positive part.
    if any(not isinstance(item, MatchAll | Not) for item in items):
        items = [item for item in items if not isinstance(item, MatchAll)]
    return items[0] if len(items) == 1 else And(tuple(items))


def _boosted(node: Node, boost: float) -> Node:
    if boost == 1.0 or isinstance(node, Not | MatchAll):
        return node
    return replace(node, boost=node.boost * boost)


def _check_expanding_words(root: Node) -> None:
    # In the order typed: the tree moves NOT parts after the others.
    expanding = sorted(
        (leaf for leaf in leaves(root) if isinstance(leaf, Wildcard | Fuzzy)),
        key=lambda leaf: leaf.start,
    )
    if len(expanding) > MAX_EXPANDING_WORDS:
        raise query_error(
            f"at most {MAX_EXPANDING_WORDS} wildcard or fuzzy words per query",
            expanding[MAX_EXPANDING_WORDS].start,
        )
