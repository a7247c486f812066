"""How the Solr engine bounds a leading wildcard's walk of a field's terms (issue 33): the
regex that stops Solr's terms component at the last term tested. The contract suite
(tests/contract/test_queries.py) checks on a cluster that both engines test the same terms."""

from __future__ import annotations

import itertools
import re

from searchsvc.backends.solr.terms import _java_after


def python_regex(java: str) -> re.Pattern[str]:
    """The Java regex in Python's syntax (only `\\x{...}` differs among what _java_after uses)."""
    return re.compile(re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m[1], 16):08x}", java))


def test_the_regex_after_a_term_matches_exactly_the_terms_after_it():
    alphabet = ("a", "b", "z", "é", "-", "\\", "*", "\U0010fffe")
    words = [
        "".join(letters) for n in range(4) for letters in itertools.product(alphabet, repeat=n)
    ]
    for term in ("ab", "b", "zz", "a-é", "\\*", "z\U0010fffe"):
        after = python_regex(_java_after(term))
        wrong = [word for word in words if bool(after.fullmatch(word)) != (word > term)]
        assert wrong == [], (term, wrong[:5])
