"""The query language of searchsvc: query text -> a small tree every engine compiles.

`parse_query(text)` gives a `QueryTree` (nodes.py) or raises QueryError with the position of the
problem; the limits (limits.py) are checked here, once, for every engine.
"""

from searchsvc.domain.querylang.limits import clean
from searchsvc.domain.querylang.nodes import (
    EXACT_FIELDS,
    FIELD_ALIASES,
    FIELDS,
    TEXT_FIELDS,
    YEAR_FIELD,
    And,
    Fuzzy,
    Leaf,
    MatchAll,
    Node,
    Not,
    Or,
    Phrase,
    QueryTree,
    Wildcard,
    Word,
    YearRange,
)
from searchsvc.domain.querylang.parser import parse_query

__all__ = [
    "EXACT_FIELDS",
    "FIELDS",
    "FIELD_ALIASES",
    "TEXT_FIELDS",
    "YEAR_FIELD",
    "And",
    "Fuzzy",
    "Leaf",
    "MatchAll",
    "Node",
    "Not",
    "Or",
    "Phrase",
    "QueryTree",
    "Wildcard",
    "Word",
    "YearRange",
    "clean",
    "parse_query",
]
