"""The query tree: what a query text means, independent of any engine.

Leaves carry the character span of the text they came from (`start`, `end`, offsets into the
query text), so that an engine can say where a word it does not know is (did-you-mean) and an
error can point at its cause. Field names are the query language's own (`FIELDS`), never an
engine's; `field=None` means the default fields of the request (`SearchRequest.fields`).

Meaning of the inner nodes, which every engine implements:

- `Or`: documents matching any child, ranked by how many and how well they match.
- `And`: documents matching every child.
- `Not`: every document except those matching its child; inside an `And` it only excludes.
  The parser never leaves a `Not` inside an `Or` (see parser.py: `a b NOT c` is
  `And(Or(a, b), Not(c))`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

# The fields a query may name, with their aliases, and what kind of values each holds.
TEXT_FIELDS = ("title", "abstract", "author")  # analysed words: terms, phrases, wildcards, fuzzy
# Exact values (case- and accent-insensitive); subjects of any level: `category:cs` is the
# archive, as is `subject:cs`.
EXACT_FIELDS = ("category", "subject")
YEAR_FIELD = "year"  # a year or a range of years
FIELDS = (*TEXT_FIELDS, *EXACT_FIELDS, YEAR_FIELD)
FIELD_ALIASES = {"authors": "author", "categories": "category", "subjects": "subject"}


@dataclass(frozen=True, slots=True)
class Word:
    """A word as typed (`GPU-based`, `Balázs`); the engine analyses it (case, accents, stems)."""

    text: str
    field: str | None
    start: int
    end: int
    boost: float = 1.0


@dataclass(frozen=True, slots=True)
class Phrase:
    """Words that must occur in this order, `slop` extra positions apart at most (0: adjacent).

    `text` is what stands between the quotes; it begins at `text_start` in the query text.
    """

    text: str
    field: str | None
    start: int
    end: int
    text_start: int
    slop: int = 0
    boost: float = 1.0


@dataclass(frozen=True, slots=True)
class Wildcard:
    """A word with `*` (any characters) and `?` (one character), e.g. `sched*`, `congest?on`."""

    pattern: str
    field: str | None
    start: int
    end: int
    boost: float = 1.0


@dataclass(frozen=True, slots=True)
class Fuzzy:
    """A word matched within `distance` edits (1 or 2), sharing its first letter: `schedulng~`."""

    text: str
    distance: int
    field: str | None
    start: int
    end: int
    boost: float = 1.0


@dataclass(frozen=True, slots=True)
class YearRange:
    """Records whose year is from `low` to `high`, inclusive (`year:2021` is 2021 to 2021)."""

    low: int
    high: int
    start: int
    end: int
    boost: float = 1.0

    @property
    def single_year(self) -> bool:
        return self.low == self.high


@dataclass(frozen=True, slots=True)
class MatchAll:
    """Every record (`*`, `*:*` or an empty query)."""

    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Node, ...]
    boost: float = 1.0


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Node, ...]
    boost: float = 1.0


@dataclass(frozen=True, slots=True)
class Not:
    child: Node
    start: int  # where the NOT is


Leaf = Word | Phrase | Wildcard | Fuzzy | YearRange | MatchAll
Node = Leaf | And | Or | Not


@dataclass(frozen=True, slots=True)
class QueryTree:
    """A parsed query: its text (control characters blanked, offsets kept) and its meaning."""

    text: str
    root: Node
    # Whether the text is plain words only (no field, phrase, operator, parenthesis, wildcard,
    # fuzzy word or boost): the one kind of query meaning may add records to (domain/modes.py).
    plain_words: bool = False

    @property
    def match_all(self) -> bool:
        return isinstance(self.root, MatchAll)

    def leaves(self) -> Iterator[Leaf]:
        return leaves(self.root)

    def positive_leaves(self) -> Iterator[Leaf]:
        """The leaves a matching record contains (those under a NOT left out): what to mark."""
        return _positive_leaves(self.root)


def leaves(node: Node) -> Iterator[Leaf]:
    """Every leaf under `node`, in query order."""
    if isinstance(node, And | Or):
        for child in node.children:
            yield from leaves(child)
    elif isinstance(node, Not):
        yield from leaves(node.child)
    else:
        yield node


def _positive_leaves(node: Node) -> Iterator[Leaf]:
    if isinstance(node, And | Or):
        for child in node.children:
            yield from _positive_leaves(child)
    elif not isinstance(node, Not):
        yield node
