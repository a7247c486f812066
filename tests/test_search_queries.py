"""The query language on the fixture index: every construct, and hostile input."""

from __future__ import annotations

import contextlib
import itertools
import re
import time
import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.queries import compile as queries
from searchsvc.backends.whoosh.queries.compile import MAX_QUERY_WORDS
from searchsvc.backends.whoosh.queries.expansion import MAX_EXPANSION
from searchsvc.errors import QueryError
from searchsvc.query import SearchRequest
from tests.support import examples


@pytest.fixture(scope="module")
def backend(fixture_index):
    with WhooshBackend(fixture_index) as backend:
        yield backend


def ids(backend, q, **options):
    result = backend.search(SearchRequest(q=q, per_page=100, **options))
    assert result.total == len(result.hits)
    return [hit.record.id for hit in result.hits]


def test_a_word_matches_title_and_abstract_stems(backend):
    assert ids(backend, "scheduled") == ["2301.00001"]
    assert ids(backend, "cache") == ["2201.00002"]


def test_every_word_counts_and_more_matching_words_rank_higher(backend):
    found = ids(backend, "caches inference datacenter")
    assert set(found) == {"2201.00002", "2101.00003"}
    assert found[0] == "2201.00002"


def test_a_long_claim_query_still_ranks_the_right_record_first(backend):
    claim = (
        "Training jobs for deep learning on shared GPU clusters need fair scheduling "
        "so that every job gets its share of the cluster"
    )
    assert ids(backend, claim)[0] == "2301.00001"


def test_matching_is_accent_and_case_insensitive(backend):
    assert ids(backend, "balazs") == ids(backend, "BALÁZS") == ["0704.0001"]


def test_a_phrase_matches_only_adjacent_words(backend):
    assert ids(backend, '"learned caches"') == ["2201.00002"]
    assert ids(backend, '"caches learned"') == []


def test_boolean_operators_and_parentheses(backend):
    assert ids(backend, "learning AND inference") == ["2201.00002"]
    assert set(ids(backend, "inference OR congestion")) == {"2201.00002", "2101.00003"}
    assert "2201.00002" not in ids(backend, "learning NOT inference")
    assert ids(backend, "(caches OR congestion) AND protocol") == ["2101.00003"]


def test_field_prefixes_search_one_field(backend):
    assert ids(backend, "title:congestion") == ["2101.00003"]
    assert ids(backend, "title:protocol") == []
    assert ids(backend, "abstract:protocol") == ["2101.00003"]
    assert set(ids(backend, "author:akella")) == {"2201.00002", "2101.00003"}
    assert ids(backend, 'author:"Aditya Akella" AND congestion') == ["2101.00003"]
    assert ids(backend, "Title:Congestion") == ["2101.00003"]


def test_category_prefix_is_exact_but_case_insensitive(backend):
    assert set(ids(backend, "category:cs.DC")) == {"2301.00001", "2101.00003"}
    assert ids(backend, "category:CS.ni") == ["2101.00003"]
    assert ids(backend, "category:cs") == []


def test_year_prefix_takes_a_year_and_both_range_syntaxes(backend):
    assert ids(backend, "year:2021") == ["2101.00003"]
    assert set(ids(backend, "year:2021..2022")) == {"2101.00003", "2201.00002"}
    assert set(ids(backend, "year:[2021 TO 2022]")) == {"2101.00003", "2201.00002"}
    assert set(ids(backend, "year:2022..")) == {"2201.00002", "2301.00001"}
    assert ids(backend, "year:..2007") == ["0704.0001"]


def test_prefix_wildcards_and_fuzzy_words(backend):
    assert ids(backend, "sched*") == ["2301.00001"]
    assert ids(backend, "congest?on") == ["2101.00003"]
    assert ids(backend, "*gestion") == ["2101.00003"]
    assert ids(backend, "schedulng~") == ["2301.00001"]
    assert ids(backend, "shceduling~2") == ["2301.00001"]
    assert ids(backend, "akela~") and set(ids(backend, "akela~")) == set(ids(backend, "akella"))


def test_the_field_list_of_the_request_limits_where_words_match(backend):
    assert ids(backend, "protocol", fields=("title",)) == []
    assert ids(backend, "protocol", fields=("abstract",)) == ["2101.00003"]
    assert ids(backend, "akella", fields=("title", "abstract")) == []
    assert set(ids(backend, "akella", fields=("authors",))) == {"2201.00002", "2101.00003"}


def test_an_empty_query_or_a_lone_star_browses_everything_newest_first(backend):
    newest = ["2301.00001", "2201.00002", "2101.00003", "seed-hostile0001", "0704.0001"]
    assert ids(backend, "") == newest
    assert ids(backend, "   ") == newest
    assert ids(backend, "*") == newest


def test_query_errors_say_what_and_where(backend):
    with pytest.raises(QueryError) as error:
        backend.search(SearchRequest(q="learning year:abc"))
    assert "abc" in error.value.message
    assert error.value.details["position"] == len("learning year:")


def test_too_many_words_is_a_query_error_with_the_position(backend):
    text = " ".join(f"w{i}" for i in range(MAX_QUERY_WORDS + 5))
    with pytest.raises(QueryError) as error:
        backend.search(SearchRequest(q=text))
    assert error.value.details["position"] == text.index(f"w{MAX_QUERY_WORDS} ")


HOSTILE = [
    '"unbalanced quote',
    'unbalanced quote"',
    '"',
    "'",
    "((learning",
    "learning))",
    ")(",
    "AND",
    "OR",
    "NOT",
    "learning AND",
    "OR learning",
    "AND OR NOT",
    "NOT NOT NOT",
    "*",
    "**",
    "?",
    "*:*",
    "*?*?*",
    ":",
    "title:",
    "title:(",
    "year:",
    "year:[",
    "year:[2020 TO",
    "year:[abc TO def]",
    "year:{2020 TO 2023}",
    "year:99999999999999999999",
    "year:2023..2020",
    "category:",
    "foo:bar",
    "id:2301.00001",
    "source:arXiv",
    "a:b:c:d",
    "^",
    "learning^",
    "learning^x",
    "learning^1e308",
    "~",
    "learning~9",
    "[",
    "]",
    "{}",
    "\x00",
    "learn\x00ing",
    "\x01\x02\x1b[31m",
    "\ud800",
    "\u202eevil",
    "🙂 learning",
    "x" * 10_000,
    "(" * 5_000,
    ")" * 5_000,
    '"' * 10_000,
    "*" * 10_000,
    "a* b* c* d* e* f* g* h* i* j*",
    "a* b* c* d* e* f* g*",
    "learning " * 1_000,
    "<script>alert(1)</script>",
]


@pytest.mark.parametrize("text", HOSTILE, ids=lambda text: repr(text[:30]))
def test_hostile_input_gives_a_query_error_or_a_sensible_search_quickly(backend, text):
    started = time.perf_counter()
    try:
        result = backend.search(SearchRequest(q=text))
    except QueryError as error:
        assert error.message
    else:
        assert 0 <= result.total <= 5
    assert time.perf_counter() - started < 1.0


def test_wildcard_expansion_is_capped(fixture_index):
    from searchsvc.backends.whoosh.search.execute import parse_for

    with WhooshBackend(fixture_index) as backend, backend._searchers.view() as view:
        parsed = parse_for(view, "*", ("title", "abstract"))
        assert parsed.match_all
        parsed = parse_for(view, "?*", ("title", "abstract"))
        assert 0 < len(list(parsed.query.leaves())) <= MAX_EXPANSION


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.text(
        alphabet=st.characters(codec="utf-8") | st.sampled_from('"()*?~^:[]{} ANDORNOT'),
        max_size=60,
    )
)
def test_no_text_makes_anything_but_a_query_error_escape(backend, text):
    with contextlib.suppress(QueryError):
        backend.search(SearchRequest(q=text))


def test_a_short_wildcard_start_keeps_within_the_postings_budget(fixture_index):
    from searchsvc.backends.whoosh.queries.expansion import most_frequent

    with WhooshBackend(fixture_index) as backend, backend._searchers.view() as view:
        reader = view.searcher.reader()
        words = ["learn", "deep", "schedul", "cach"]  # in 2, 2, 1 and 1 documents
        assert most_frequent(reader, "content", words, 10, max_postings=2) == ["learn"]
        sample = most_frequent(reader, "content", words, 10, max_postings=1, keep_first=False)
        assert sample == ["schedul"]


def test_the_in_memory_lexicon_answers_prefix_pattern_and_distance(fixture_index):
    with WhooshBackend(fixture_index) as backend, backend._searchers.view() as view:
        lexicon = view.lexicon("spell_content")
        assert list(lexicon.prefixed("sched")) == ["scheduling"]
        assert list(lexicon.matching("*ing")) == ["learning", "scheduling", "serving", "training"]
        assert lexicon.within("schedulng", 1) == ["scheduling"]
        assert lexicon.within("chedulng", 2) == []  # the first letter must match


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
    if len(operators) > queries.MAX_OPERATORS:
        raise QueryError("operator characters", position=operators[queries.MAX_OPERATORS])
    for word in re.finditer(r"\S+", text):
        if len(word.group()) > queries.MAX_WORD_LENGTH:
            raise QueryError("longer", position=word.start())
        if len(re.findall(r"\*+|\?", word.group())) > queries.MAX_WILDCARDS_PER_WORD:
            raise QueryError("wildcards", position=word.start())
    depth = 0
    for position, ch in enumerate(text):
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        if depth > queries.MAX_NESTING:
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
    assert queries.clean(text) == _clean_per_character(text)


def test_clean_of_every_ascii_character_is_that_of_the_per_character_version():
    for code in range(128):
        assert queries.clean(chr(code)) == _clean_per_character(chr(code)), code


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
    found = _limit_error(queries._check_limits, text)
    expected = _limit_error(_check_limits_per_character, text)
    assert found == expected
