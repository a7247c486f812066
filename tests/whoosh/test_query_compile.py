"""The query compiler (queries/compile.py) answers structured queries as Whoosh's parser did.

Before the product had a query language of its own, the backend ran Whoosh's `MultifieldParser`
on query text (configured as tests.whoosh.support.whoosh_parser, after rewriting `year:A..B` to
Whoosh's range syntax and lowercasing field prefixes), then expanded wildcard and fuzzy words
with `QueryRewriter`. For queries whose meaning did not change, searching the seed index through
the backend with that pipeline in place of `compile_query` must give the same records in the same
order, the same totals, scores and highlights.

The compiled queries are compared too, node by node; where their form differs without changing
the answers, `FORM_DIFFERENCES` says why. Intended changes of meaning are pinned separately.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import whoosh
from whoosh import query

from searchsvc.backends.shared.ranked_fields import SEARCH_FIELDS, index_fields
from searchsvc.backends.whoosh.accel.array_scoring import extract_terms
from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.backends.whoosh.queries.compile import ParsedQuery, compile_tree
from searchsvc.backends.whoosh.queries.expansion import QueryRewriter
from searchsvc.backends.whoosh.schema import QUERY_FIELDS
from searchsvc.backends.whoosh.search import execute
from searchsvc.domain.errors import IndexUnavailable
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.querylang import parse_query
from searchsvc.domain.records import MAX_YEAR, MIN_YEAR
from tests.whoosh.support import assert_same_query, whoosh_parser

ROOT = Path(__file__).resolve().parents[2]

# What the backend did to query text before Whoosh's parser read it.
_YEAR_SPAN = re.compile(r"\byear:(\d{1,4})?\.\.(\d{1,4})?(?=$|[\s)])", re.IGNORECASE)
_FIELD_PREFIX = re.compile(r"\b(" + "|".join((*QUERY_FIELDS, "author", "authors")) + r"):", re.I)

# Structured queries whose meaning did not change (all over the seed corpus).
UNCHANGED = [
    '"deep learning"',
    '"learned index"',
    'title:"deep learning"',
    "title:caches",
    "abstract:latency",
    "Title:scheduling",
    "author:akella",
    "authors:venkataraman",
    'author:"Aditya Akella"',
    'author:"Shivaram Venkataraman"',
    "category:cs.DC",
    "category:cs.dc learning",
    "categories:cs.NI",
    "deep AND learning",
    "deep OR caches",
    "(deep OR caches) AND learning",
    "title:(deep learning)",
    "deep AND (learning OR caches)",
    "deep AND NOT caches",
    "(deep OR caches) AND NOT learning",
    "network AND NOT learning",
    "NOT caches",
    "sched*",
    "congest?on",
    "title:sched*",
    "schedulng~",
    "schedulng~2",
    "clustr~1 latency",
    "year:2021",
    "year:2021 scheduling",
    "year:2020..2023",
    "year:2022..",
    "year:..2020",
    "year:[2020 TO 2023]",
    "year:{2020 TO 2023]",
    "learning^2",
    "learning^2 caches",
    "(cluster scheduling)^2 latency",
    "(cluster scheduling)^2",
    '("deep learning" caches)^2',
    "GPU-based",
    "CPU-based training",
    "U.S.A.",
    "Balázs",
    "Shívaram",  # accents fold: finds Shivaram
    "schéduling",
]

# The queries above whose answers the source bugs change.
MULTI_PART_WORDS = ("GPU-based", "CPU-based training")
ANSWER_BUGS: dict[str, pytest.MarkDecorator] = {}

# Queries that compile to another form than the parser's, with the same answers, and why.
FORM_DIFFERENCES = {
    "deep AND NOT caches": "AndNot(a, b) for And([a, Not(b)]): the same records, each scored "
    "1.0 lower (the Not's InverseMatcher added 1.0 to every match's score)",
    "(deep OR caches) AND NOT learning": "as `deep AND NOT caches`",
    "network AND NOT learning": "as `deep AND NOT caches`",
    # Nothing reads a wildcard's characters (expansion reads a fuzzy word's, did-you-mean a
    # Term's), and a year range's say where it is in the text as typed: answers are the same.
    "sched*": "Whoosh's parser gave a wildcard word the characters of its last wildcard (the "
    "`*`); the compiler gives it the whole word, lost when normalize() makes it a Prefix",
    "title:sched*": "as `sched*`",
    "congest?on": "as `sched*` (a Wildcard keeps the whole word's characters)",
    "year:2020..2023": "characters in the text as typed, not in the text rewritten for the "
    "parser (year:[2020 TO 2023])",
    "year:2022..": "as `year:2020..2023`",
    "year:..2020": "as `year:2020..2023`",
    "year:{2020 TO 2023]": "an exclusive bound becomes the next year, inclusive: the same years",
}
# How much higher the parser's query scored each match (see FORM_DIFFERENCES).
SCORE_OFFSETS = dict.fromkeys(
    ("deep AND NOT caches", "(deep OR caches) AND NOT learning", "network AND NOT learning"), 1.0
)


def with_marks(texts, marks) -> list:
    return [pytest.param(text, marks=marks[text]) if text in marks else text for text in texts]


def as_whoosh_parser_read(text: str) -> str:
    """The text as the backend handed it to Whoosh's parser."""
    text = _FIELD_PREFIX.sub(lambda m: m.group(1).lower() + ":", text)
    return _YEAR_SPAN.sub(
        lambda m: f"year:[{m.group(1) or MIN_YEAR} TO {m.group(2) or MAX_YEAR}]", text
    )


def whoosh_compile_query(tree, request_fields, reader, exact_values, lexicon) -> ParsedQuery:
    """compile_query's signature, answered as the backend answered before the query language:
    Whoosh's parser, then QueryRewriter as compile_query applies it."""
    text = as_whoosh_parser_read(tree.text)
    if not text.strip():
        return ParsedQuery(text, query.Every(), query.Every())
    parsed = whoosh_parser(index_fields(request_fields)).parse(text)
    rewritten = QueryRewriter(reader, exact_values, lexicon, text).rewrite(parsed)
    if isinstance(rewritten, query.Every):
        rewritten = query.Every()
    return ParsedQuery(text, parsed, rewritten)


@pytest.fixture(scope="module")
def seed_backend(seed_index):
    with WhooshBackend.open(seed_index) as backend:
        yield backend


def answers(backend: WhooshBackend, text: str, fields=("title", "abstract", "authors")):
    result = backend.search(SearchRequest(q=text, fields=fields, per_page=100, facets=()))
    hits = [(hit.record.id, hit.score, hit.highlights) for hit in result.hits]
    return result.total, hits


def assert_same_answers(compiled, parsed, offset: float = 0.0) -> None:
    total, hits = compiled
    expected_total, expected_hits = parsed
    assert total == expected_total
    assert [record_id for record_id, _, _ in hits] == [i for i, _, _ in expected_hits]
    assert [h for _, _, h in hits] == [h for _, _, h in expected_hits]
    for (_, score, _), (_, expected, _) in zip(hits, expected_hits, strict=True):
        assert score == pytest.approx(expected - offset, rel=1e-12)


@pytest.mark.parametrize("text", with_marks(UNCHANGED, ANSWER_BUGS))
def test_structured_queries_find_what_whooshs_parser_found_on_the_seed_index(
    seed_backend, monkeypatch, text
):
    compiled = answers(seed_backend, text)
    monkeypatch.setattr(execute, "compile_query", whoosh_compile_query)
    parsed = answers(seed_backend, text)

    assert_same_answers(compiled, parsed, SCORE_OFFSETS.get(text, 0.0))


@pytest.mark.parametrize(
    "text", ["Balázs", "balazs", "author:Balázs", 'author:"C. Balázs"', "BALÁZS AND chromodynamics"]
)
def test_non_ascii_words_find_what_whooshs_parser_found_on_the_fixture_index(
    fixture_index, monkeypatch, text
):
    with WhooshBackend.open(fixture_index) as backend:
        compiled = answers(backend, text)
        monkeypatch.setattr(execute, "compile_query", whoosh_compile_query)
        parsed = answers(backend, text)
    assert compiled[0] == 1  # 0704.0001, by C. Balázs
    assert_same_answers(compiled, parsed)


@pytest.mark.parametrize("fields", [("title",), ("abstract", "authors"), ("authors",)])
@pytest.mark.parametrize(
    "text",
    ['"deep learning" caches', "sched* AND learning", "akella OR venkataraman", "learning^2 x"],
)
def test_structured_queries_on_fewer_fields_find_what_whooshs_parser_found(
    seed_backend, monkeypatch, text, fields
):
    compiled = answers(seed_backend, text, fields)
    monkeypatch.setattr(execute, "compile_query", whoosh_compile_query)
    assert_same_answers(compiled, answers(seed_backend, text, fields))


@pytest.mark.parametrize("text", UNCHANGED)
def test_structured_queries_compile_to_whooshs_parsed_query_but_for_known_forms(text):
    choices = {index_fields(f) for f in (("title",), ("abstract", "authors"))} | {SEARCH_FIELDS}
    for search_fields in sorted(choices):
        compiled = compile_tree(parse_query(text).root, search_fields)
        parsed = whoosh_parser(search_fields).parse(as_whoosh_parser_read(text))
        if text in FORM_DIFFERENCES:
            with pytest.raises(AssertionError):  # else it compiles as the parser: drop its entry
                assert_same_query(compiled, parsed)
        else:
            assert_same_query(compiled, parsed)


def test_a_group_boost_is_carried_down_to_its_terms_as_the_parser_did():
    # Whoosh's top-document pruning misjudges a boosted group: no compiled group keeps one.
    for text in ("(cluster scheduling)^2", '("deep learning" caches)^2', "(a (b c)^3)^2"):
        compiled = compile_tree(parse_query(text).root, SEARCH_FIELDS)
        groups = [compiled, *(q for q in compiled.children())]
        groups += [q for group in groups for q in group.children()]
        assert all(q.boost == 1.0 for q in groups if not q.is_leaf())
        assert any(q.boost != 1.0 for q in compiled.leaves())
        parsed = whoosh_parser(SEARCH_FIELDS).parse(text)
        if extract_terms(parsed) is not None:
            assert extract_terms(compiled) == extract_terms(parsed)


def test_and_not_excludes_every_record_holding_the_excluded_word_as_the_parser_did(
    seed_backend, monkeypatch
):
    # The same records as the parser's And([a, Not(b)]) wherever Whoosh's AndNotMatcher skips
    # correctly (its first positive document is not in the negative part).
    compiled = answers(seed_backend, "deep AND NOT caches")
    everything = answers(seed_backend, "deep")
    excluded = {i for i, _, _ in answers(seed_backend, "caches")[1]}
    assert {i for i, _, _ in compiled[1]} == {i for i, _, _ in everything[1]} - excluded


def test_and_not_never_returns_a_record_holding_the_excluded_word(fixture_index):
    # Fixture records: 2301.00001 has `learning` (not `caches`), 2201.00002 both. The negative
    # part starts at 2301.00001, before the positive part's first (and only) document.
    with WhooshBackend.open(fixture_index) as backend:
        with_learning = {i for i, _, _ in answers(backend, "learning")[1]}
        assert "2201.00002" in with_learning
        for text in ("caches AND NOT learning", "caches NOT learning", "NOT learning caches"):
            total, hits = answers(backend, text)
            assert total == 0, (text, [i for i, _, _ in hits])


def test_a_multi_part_word_finds_records_with_any_of_its_parts_as_the_parser_did(fixture_index):
    # `GPU-based`: the parser searched gpu OR base; 2301.00001 has `GPU` only.
    with WhooshBackend.open(fixture_index) as backend:
        assert "2301.00001" in {i for i, _, _ in answers(backend, "GPU-based")[1]}


# -- intended changes of meaning ---------------------------------------------------------------
def test_a_phrase_slop_counts_the_words_allowed_between(fixture_index):
    # The query language's `"a b"~N` allows N words between (nodes.Phrase); Whoosh's parser gave
    # Whoosh's slop N, which allows N-1 (slop 1 is adjacent). 2301.00001's title: "Fair Cluster
    # Scheduling for Deep Learning Jobs" (`for` is a stop word: cluster, schedul, deep).
    compiled = compile_tree(parse_query('"cluster deep"~1').root, ("title",))
    assert compiled.slop == 2 and whoosh_parser(("title",)).parse('"cluster deep"~1').slop == 1
    with WhooshBackend.open(fixture_index) as backend:
        assert answers(backend, 'title:"cluster deep"')[0] == 0
        assert [i for i, _, _ in answers(backend, 'title:"cluster deep"~1')[1]] == ["2301.00001"]
        assert answers(backend, 'title:"fair deep"~1')[0] == 0
        assert [i for i, _, _ in answers(backend, 'title:"fair deep"~2')[1]] == ["2301.00001"]


def test_not_in_a_group_of_words_excludes_from_the_whole_group(seed_backend):
    # Whoosh's parser read `deep caches NOT learning` as deep OR caches OR (NOT learning): nearly
    # every record. The query language reads it as (deep OR caches) without learning.
    matched = {i for i, _, _ in answers(seed_backend, "deep caches NOT learning")[1]}
    wanted = {i for i, _, _ in answers(seed_backend, "deep caches")[1]}
    excluded = {i for i, _, _ in answers(seed_backend, "learning")[1]}
    assert matched == wanted - excluded
    assert matched  # the seed corpus has such records


def test_everything_but_a_word_is_every_record_without_it(seed_backend):
    every = {i for i, _, _ in answers(seed_backend, "*")[1]}
    excluded = {i for i, _, _ in answers(seed_backend, "caches")[1]}
    assert {i for i, _, _ in answers(seed_backend, "* NOT caches")[1]} == every - excluded
    assert excluded and every - excluded


@pytest.mark.parametrize("text", ["content:caches", "author_names:akella"])
def test_index_field_names_are_not_field_prefixes(text):
    # `content:` and `author_names:` were prefixes to Whoosh's parser (index fields); to the
    # query language they are words with a colon, searched in the request's fields.
    tree = parse_query(text)
    assert tree.root.field is None and tree.root.text == text


# -- the supported Whoosh version --------------------------------------------------------------
@pytest.mark.parametrize("version", ["2.7.3", "2.7.5", "3.0.0"])
def test_importing_the_backend_with_another_whoosh_version_names_the_supported_ones(
    monkeypatch, version
):
    import searchsvc.backends.whoosh as backend_package

    monkeypatch.setattr(whoosh, "versionstring", lambda *args, **kwargs: version)
    # Re-imported from scratch; monkeypatch puts the loaded package back afterwards.
    monkeypatch.delitem(sys.modules, "searchsvc.backends.whoosh")
    with pytest.raises(IndexUnavailable) as raised:
        importlib.import_module("searchsvc.backends.whoosh")

    message = str(raised.value)
    assert version in message
    for supported in backend_package.SUPPORTED_WHOOSH_VERSIONS:
        assert supported in message
    assert "searchsvc.backends.whoosh" not in sys.modules  # a failed import leaves nothing


def test_opening_a_whoosh_location_with_another_whoosh_version_fails_naming_it(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        import whoosh
        whoosh.versionstring = lambda *args, **kwargs: "2.7.5"
        from searchsvc.backends import open_backend
        from searchsvc.domain.errors import IndexUnavailable
        try:
            open_backend(sys.argv[1])
        except IndexUnavailable as exc:
            print(exc)
        else:
            print("opened")
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "index")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "Whoosh 2.7.4" in run.stdout
    assert "found 2.7.5" in run.stdout
