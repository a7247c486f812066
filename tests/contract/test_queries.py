"""The query language on the fixture index: every construct, malformed text refused with the
position of its cause, and hostile input."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.domain.errors import QueryError
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.querylang.limits import MAX_QUERY_WORDS
from searchsvc.domain.records import Record
from tests.support import FIXTURE_RECORDS, examples

NEWEST = ["2301.00001", "2201.00002", "2101.00003", "seed-hostile0001", "0704.0001"]


def ids(backend, q, **options):
    result = backend.search(SearchRequest(q=q, per_page=100, **options))
    assert result.total == len(result.hits)
    return [hit.record.id for hit in result.hits]


def test_a_word_matches_title_and_abstract_stems(fixture_backend):
    assert ids(fixture_backend, "scheduled") == ["2301.00001"]
    assert ids(fixture_backend, "cache") == ["2201.00002"]


def test_every_form_of_a_word_finds_the_others(empty_backend):
    # Stems are the index's own on every engine: Lucene's Snowball English stems these `organ`,
    # PyStemmer's `organiz`; either way each form finds every record.
    forms = ("organization", "organized", "organizing", "organizations")
    empty_backend.rebuild(
        [Record(id=f"o-{n}", title=f"Self {form} networks") for n, form in enumerate(forms)]
    )
    for form in forms:
        assert sorted(ids(empty_backend, form)) == ["o-0", "o-1", "o-2", "o-3"], form
        marked = empty_backend.search(SearchRequest(q=form)).hits[0].highlights["title"]
        assert "<mark>" in marked, form


def test_every_word_counts_and_more_matching_words_rank_higher(fixture_backend):
    assert ids(fixture_backend, "caches inference datacenter") == ["2201.00002", "2101.00003"]


def test_a_long_claim_query_still_ranks_the_right_record_first(fixture_backend):
    claim = (
        "Training jobs for deep learning on shared GPU clusters need fair scheduling "
        "so that every job gets its share of the cluster"
    )
    assert ids(fixture_backend, claim)[0] == "2301.00001"


def test_matching_is_accent_and_case_insensitive(fixture_backend):
    assert ids(fixture_backend, "balazs") == ids(fixture_backend, "BALÁZS") == ["0704.0001"]


def test_a_phrase_matches_only_adjacent_words_in_order(fixture_backend):
    assert ids(fixture_backend, '"learned caches"') == ["2201.00002"]
    assert ids(fixture_backend, '"caches learned"') == []


def test_boolean_operators_and_parentheses(fixture_backend):
    assert ids(fixture_backend, "learning AND inference") == ["2201.00002"]
    assert ids(fixture_backend, "inference OR congestion") == ["2201.00002", "2101.00003"]
    assert ids(fixture_backend, "learning NOT inference") == ["2301.00001"]
    assert ids(fixture_backend, "(caches OR congestion) AND protocol") == ["2101.00003"]


def test_not_alone_or_after_a_star_is_every_record_except_the_negated_ones(fixture_backend):
    without_learning = {"2101.00003", "0704.0001", "seed-hostile0001"}
    assert set(ids(fixture_backend, "NOT learning")) == without_learning
    assert set(ids(fixture_backend, "* NOT learning")) == without_learning


def test_not_excludes_a_record_with_both_words_that_is_the_first_with_the_wanted_one(
    empty_backend,
):
    # Stock Whoosh 2.7.4 returned "a-and-b" here (AndNotMatcher._find_first).
    empty_backend.rebuild(
        [
            Record(id="only-b", title="Bravo"),
            Record(id="a-and-b", title="Alpha Bravo"),
            Record(id="only-a", title="Alpha"),
        ]
    )
    assert ids(empty_backend, "alpha NOT bravo") == ["only-a"]


def test_a_not_in_a_group_of_words_excludes_from_the_whole_group(fixture_backend):
    # `a b NOT c` is (a OR b) without c.
    assert set(ids(fixture_backend, "caches congestion NOT protocol")) == {"2201.00002"}


def test_the_old_whoosh_operators_are_plain_words(fixture_backend):
    # ANDNOT, ANDMAYBE and REQUIRE were Whoosh's operators; now they are words no record has.
    for operator in ("ANDNOT", "ANDMAYBE", "REQUIRE"):
        assert ids(fixture_backend, operator) == []
        assert set(ids(fixture_backend, f"learning {operator} inference")) == {
            "2201.00002",
            "2301.00001",
        }


def test_field_prefixes_search_one_field(fixture_backend):
    assert ids(fixture_backend, "title:congestion") == ["2101.00003"]
    assert ids(fixture_backend, "title:protocol") == []
    assert ids(fixture_backend, "abstract:protocol") == ["2101.00003"]
    assert set(ids(fixture_backend, "author:akella")) == {"2201.00002", "2101.00003"}
    assert set(ids(fixture_backend, "authors:akella")) == {"2201.00002", "2101.00003"}
    assert ids(fixture_backend, 'author:"Aditya Akella" AND congestion') == ["2101.00003"]
    assert ids(fixture_backend, "Title:Congestion") == ["2101.00003"]
    assert ids(fixture_backend, "title:(congestion OR caches)") == ["2201.00002", "2101.00003"]


def test_content_and_author_names_are_not_field_prefixes(fixture_backend):
    # A colon that does not end a field name is part of a word, whose parts are searched in
    # every field of the request, like the same words typed apart.
    akella = ["2101.00003", "2201.00002"]
    learning = ["2201.00002", "2301.00001"]
    assert sorted(ids(fixture_backend, "content:akella")) == akella  # found in the authors
    assert sorted(ids(fixture_backend, "content:akella")) == sorted(
        ids(fixture_backend, "content akella")
    )
    assert sorted(ids(fixture_backend, "author_names:learning")) == learning  # in the titles
    assert sorted(ids(fixture_backend, "author_names:learning")) == sorted(
        ids(fixture_backend, "author_names learning")
    )


def test_category_prefix_is_exact_but_case_insensitive(fixture_backend):
    assert set(ids(fixture_backend, "category:cs.DC")) == {"2301.00001", "2101.00003"}
    assert ids(fixture_backend, "category:CS.ni") == ["2101.00003"]
    assert ids(fixture_backend, 'categories:"cs.NI"') == ["2101.00003"]
    assert ids(fixture_backend, "category:cs.D") == []  # no category cs.D, no prefix match


def test_category_and_subject_prefixes_take_an_archive_or_a_group(fixture_backend):
    cs_records = {
        r.id for r in fixture_backend.records() if any(c.startswith("cs.") for c in r.categories)
    }
    assert cs_records
    assert set(ids(fixture_backend, "category:cs")) == cs_records
    assert set(ids(fixture_backend, "subject:cs")) == cs_records
    assert set(ids(fixture_backend, "subjects:grp_cs")) == cs_records
    assert set(ids(fixture_backend, "category:CS AND category:cs.DC")) == {
        "2301.00001",
        "2101.00003",
    }


def test_year_prefix_takes_a_year_and_both_range_syntaxes(fixture_backend):
    assert ids(fixture_backend, "year:2021") == ["2101.00003"]
    assert set(ids(fixture_backend, "year:2021..2022")) == {"2101.00003", "2201.00002"}
    assert set(ids(fixture_backend, "year:[2021 TO 2022]")) == {"2101.00003", "2201.00002"}
    assert set(ids(fixture_backend, "year:{2021 TO 2023}")) == {"2201.00002"}
    assert set(ids(fixture_backend, "year:[2022 TO *]")) == {"2201.00002", "2301.00001"}
    assert set(ids(fixture_backend, "year:2022..")) == {"2201.00002", "2301.00001"}
    assert ids(fixture_backend, "year:..2007") == ["0704.0001"]


def test_prefix_wildcards_and_fuzzy_words(fixture_backend):
    assert ids(fixture_backend, "sched*") == ["2301.00001"]
    assert ids(fixture_backend, "congest?on") == ["2101.00003"]
    assert ids(fixture_backend, "*gestion") == ["2101.00003"]
    assert ids(fixture_backend, "schedulng~") == ["2301.00001"]
    assert ids(fixture_backend, "shceduling~2") == ["2301.00001"]
    assert set(ids(fixture_backend, "akela~")) == set(ids(fixture_backend, "akella"))
    assert set(ids(fixture_backend, "akella")) == {"2201.00002", "2101.00003"}


def test_a_leading_wildcard_tests_the_same_bounded_lexicon_on_every_engine(
    empty_backend, monkeypatch
):
    # A leading wildcard cannot narrow the field's terms by a prefix: every engine tests the
    # first MAX_LEXICON_SCAN terms of the field, in index order, against it (issue 33: Solr's
    # terms component scanned each shard's whole term dictionary), and stops there alike.
    from searchsvc.backends.shared import expansion

    words = ("aazzq", "bbzzq", "ccccc", "ddzzq", "eeeee", "zzzzq")
    empty_backend.rebuild([Record(id=f"w-{word}", title=word) for word in words])
    everything = {"w-aazzq", "w-bbzzq", "w-ddzzq", "w-zzzzq"}
    assert set(ids(empty_backend, "*zzq")) == everything

    for cap, found in ((4, {"w-aazzq", "w-bbzzq", "w-ddzzq"}), (3, {"w-aazzq", "w-bbzzq"})):
        monkeypatch.setattr(expansion, "MAX_LEXICON_SCAN", cap)
        assert set(ids(empty_backend, "*zzq")) == found
        assert set(ids(empty_backend, "title:*zzq")) == found
        assert set(ids(empty_backend, "?bzzq")) == {"w-bbzzq"}
        assert ids(empty_backend, "?zzzq") == []  # beyond the terms tested
        # A literal start narrows the terms to those it starts: they are all tested.
        assert ids(empty_backend, "zz*q") == ["w-zzzzq"]


def test_eight_wildcard_words_are_allowed(fixture_backend):
    found = set(ids(fixture_backend, "sched* congest* lea* c* d* e* f* g*"))
    assert found >= {"2301.00001", "2101.00003", "2201.00002"}


def test_boosts_change_ranking_not_matching(fixture_backend):
    plain = set(ids(fixture_backend, "inference congestion"))
    assert set(ids(fixture_backend, "inference congestion^5")) == plain
    assert ids(fixture_backend, "inference congestion^5")[0] == "2101.00003"
    assert ids(fixture_backend, "inference^5 congestion")[0] == "2201.00002"


def test_the_field_list_of_the_request_limits_where_words_match(fixture_backend):
    assert ids(fixture_backend, "protocol", fields=("title",)) == []
    assert ids(fixture_backend, "protocol", fields=("abstract",)) == ["2101.00003"]
    assert ids(fixture_backend, "akella", fields=("title", "abstract")) == []
    assert set(ids(fixture_backend, "akella", fields=("authors",))) == {
        "2201.00002",
        "2101.00003",
    }


def test_an_empty_query_or_a_lone_star_browses_everything_newest_first(fixture_backend):
    for text in ("", "   ", "*", "*:*"):
        assert ids(fixture_backend, text) == NEWEST


# -- malformed text: a QueryError naming the cause and where it is -----------------------------
MALFORMED = [
    # a dangling field prefix
    ("title:", 0, "title: needs a word"),
    ("learning title:", 9, "title: needs a word"),
    ("title: learning", 0, "title: needs a word"),
    ("year:", 0, "year: needs a word"),
    ("category:", 0, "category: needs a word"),
    # an unclosed quote
    ('"unbalanced quote', 0, "this quote is never closed"),
    ('learning "deep', 9, "this quote is never closed"),
    # an unclosed parenthesis, a ) without its (, empty parentheses
    ("(learning", 0, "this ( is never closed"),
    ("((learning)", 0, "this ( is never closed"),
    ("title:(", 6, "this ( is never closed"),
    ("learning)", 8, "this ) has no ( before it"),
    (")(", 0, "this ) has no ( before it"),
    ("()", 0, "empty parentheses"),
    ("learning ()", 9, "empty parentheses"),
    # a reversed range
    ("year:2023..2020", 5, "ends before it starts"),
    ("learning year:[2023 TO 2020]", 14, "holds no year"),
    # a lone operator, or one without a term on the side it needs
    ("AND", 0, "AND needs a word or a group before it"),
    ("OR", 0, "OR needs a word or a group before it"),
    ("NOT", 0, "NOT needs a word or a group after it"),
    ("learning AND", 9, "AND needs a word or a group after it"),
    ("learning OR", 9, "OR needs a word or a group after it"),
    ("OR learning", 0, "OR needs a word or a group before it"),
    ("learning AND OR deep", 9, "AND needs a word or a group after it"),
    ("NOT NOT NOT", 8, "NOT needs a word or a group after it"),
    ("(learning AND)", 10, "AND needs a word or a group after it"),
    # values and suffixes
    ("learning year:abc", 14, "year:abc is not a year"),
    ("year:[2020 TO", 5, "this range is not complete"),
    ("year:[2020 TO abc]", 14, "year:abc is not a year"),
    ("title:[2020 TO 2023]", 6, "ranges are for years only"),
    ("learning^", 8, "^ must be followed by a boost"),
    ("learning^x", 8, "^ must be followed by a boost"),
    ("learning~3", 8, "allows 1 to 2 edits"),
    ("a* b* c* d* e* f* g* h* i*", 24, "at most 8 wildcard or fuzzy words"),
]


@pytest.mark.parametrize(
    ("text", "position", "fragment"), MALFORMED, ids=[case[0] for case in MALFORMED]
)
def test_malformed_text_is_a_query_error_with_its_position(
    fixture_backend, text, position, fragment
):
    with pytest.raises(QueryError) as error:
        fixture_backend.search(SearchRequest(q=text))
    assert fragment in error.value.message
    assert error.value.details["position"] == position
    assert error.value.message.endswith(f"(at character {position + 1})")
    assert error.value.code == "invalid_query"


def test_the_query_error_is_raised_when_the_request_is_made():
    with pytest.raises(QueryError) as error:
        SearchRequest.from_params(q="learning AND", author="Aditya Akella")
    assert error.value.details["position"] == len("learning ")


def test_too_many_words_is_a_query_error_with_the_position(fixture_backend):
    text = " ".join(f"w{i}" for i in range(MAX_QUERY_WORDS + 5))
    with pytest.raises(QueryError) as error:
        fixture_backend.search(SearchRequest(q=text))
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
def test_hostile_input_gives_a_query_error_or_a_sensible_search_quickly(fixture_backend, text):
    started = time.perf_counter()
    try:
        result = fixture_backend.search(SearchRequest(q=text))
    except QueryError as error:
        assert error.message and isinstance(error.details["position"], int)
    else:
        assert 0 <= result.total <= 5
    assert time.perf_counter() - started < 1.0


def test_a_word_of_punctuation_only_is_no_error_and_matches_nothing(fixture_backend):
    for text in (":", "{}", "["):
        assert ids(fixture_backend, text) == []


@settings(max_examples=examples(100), deadline=None)
@given(
    st.text(
        alphabet=st.characters(codec="utf-8") | st.sampled_from('"()*?~^:[]{} ANDORNOT'),
        max_size=60,
    )
)
def test_no_text_makes_anything_but_a_query_error_escape(fixture_backend, text):
    with contextlib.suppress(QueryError):
        result = fixture_backend.search(SearchRequest(q=text))
        assert 0 <= result.total <= 5


@pytest.mark.parametrize(
    "text",
    [
        "author:Akella OR year:2023 NOT year:..2021",
        "(author:Akella OR year:2023) AND NOT year:..2021",
        "author:Akella OR year:2023 NOT learning",
    ],
)
def test_an_or_of_a_name_and_a_year_under_a_not_answers(seed_backend, seed_records, text):
    # Whoosh's top-document skipping looped for ever on the first of these (a whole worker lost).
    answered: list = []
    worker = threading.Thread(
        # A short page: the skipping starts once the top documents are known.
        target=lambda: answered.append(seed_backend.search(SearchRequest(q=text, per_page=5))),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=30)
    assert answered, f"{text!r} did not answer within 30 s"
    by_akella = {r.id for r in seed_records if "Aditya Akella" in r.authors}
    of_2023 = {r.id for r in seed_records if r.year == 2023}
    found = {hit.record.id for hit in answered[0].hits}
    if text.endswith("learning"):
        assert found <= by_akella | of_2023
    else:
        expected = {r.id for r in seed_records if r.id in by_akella | of_2023 and r.year > 2021}
        assert answered[0].total == len(expected) and found <= expected


def test_a_boosted_match_all_is_every_record(fixture_backend):
    for text in ("*:*^2", "*^2", "*:*"):
        assert fixture_backend.search(SearchRequest(q=text)).total == len(FIXTURE_RECORDS), text


def test_a_zero_boost_still_matches(fixture_backend):
    result = fixture_backend.search(SearchRequest(q='"learned caches"^0 OR congestion', per_page=1))
    assert result.total == 2


def test_a_parenthesised_not_is_an_operand_of_its_own(fixture_backend):
    def found(text):
        result = fixture_backend.search(SearchRequest(q=text, per_page=100))
        return {hit.record.id for hit in result.hits}

    everything = {record.id for record in FIXTURE_RECORDS}
    with_learning = found("learning")
    with_caches = found("caches")
    assert found("(NOT learning) OR caches") == (everything - with_learning) | with_caches
    assert found("caches OR (NOT learning)") == (everything - with_learning) | with_caches
    assert found("NOT learning OR caches") == with_caches - with_learning
    assert found("(NOT learning)") == everything - with_learning
