"""The engine-neutral highlighter (searchsvc/backends/shared/highlighting.py), driven by a plain
matcher: escaped HTML whose only tags are <mark>, whole titles, abstract fragments with ellipses,
TeX math left unmarked, the lead of an abstract nothing matched in, and no engine imported."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape, unescape

import pytest

from searchsvc.backends.shared.highlighting import (
    ABSTRACT_FRAGMENTS,
    ELLIPSIS,
    FRAGMENT_CHARS,
    LEAD_CHARS,
    Fragment,
    Match,
    context_fragments,
    highlight_abstract,
    highlight_record,
    highlight_title,
    lead,
    score_fragment,
    whole_fragments,
    word_bounds,
)
from searchsvc.domain.records import Record
from tests.support import marks
from tests.test_architecture import (
    PACKAGE,
    _closure,
    imports_of,
    relative,
    run_python,
    top_level,
)

BETWEEN = f" {ELLIPSIS} "


def matching(words: Iterable[str], terms: dict[str, str] | None = None):
    """A matcher of words equal, lowercased, to one of `words`; their term is the lowercased
    word, or what `terms` maps it to."""
    wanted = {word.lower() for word in words}
    terms = terms or {}

    def matcher(distinct: set[str]) -> dict[str, str]:
        return {w: terms.get(w.lower(), w.lower()) for w in distinct if w.lower() in wanted}

    return matcher


def plain(html: str) -> str:
    return unescape(html.replace("<mark>", "").replace("</mark>", ""))


def filler(count: int, word: str = "lorem") -> str:
    return " ".join([word] * count)


# -- no engine --------------------------------------------------------------------------------
HIGHLIGHTING = PACKAGE / "backends" / "shared" / "highlighting.py"


def test_the_module_imports_neither_an_engine_nor_a_backend():
    direct = imports_of(HIGHLIGHTING)
    # (Beside it in backends/shared/, what every engine shares; no engine of its own.)
    assert [
        n
        for n in direct
        if top_level(n) == "whoosh"
        or (n.startswith("searchsvc.backends") and not n.startswith("searchsvc.backends.shared"))
    ] == []
    # Nor does anything it imports, directly or not, reach Whoosh or its backend.
    closure = list(_closure(HIGHLIGHTING))
    assert [relative(m) for m in closure if m.is_relative_to(PACKAGE / "backends" / "whoosh")] == []
    engines = {
        relative(m): sorted(n for n in imports_of(m) if top_level(n) == "whoosh") for m in closure
    }
    assert {module: names for module, names in engines.items() if names} == {}


def test_importing_it_loads_neither_whoosh_nor_its_backend():
    code = (
        "import sys\n"
        "import searchsvc.backends.shared.highlighting\n"
        "engine = [m for m in sys.modules if m.split('.')[0] == 'whoosh'\n"
        "          or m.startswith('searchsvc.backends.whoosh')]\n"
        "print(sorted(engine))\n"
    )
    assert run_python(code).stdout.strip() == "[]"


# -- escaping and titles ----------------------------------------------------------------------
def test_markup_is_escaped_and_quotes_are_not():
    title = '<b>Tom & "Jerry\'s"</b> scheduling > caching'
    marked = highlight_title(title, matching(["scheduling"]))
    assert marked == (
        '&lt;b&gt;Tom &amp; "Jerry\'s"&lt;/b&gt; <mark>scheduling</mark> &gt; caching'
    )
    assert marks(marked) == ["scheduling"]
    assert plain(marked) == title


def test_markup_inside_a_matched_word_context_is_escaped_in_an_abstract():
    abstract = "A <script>alert('x')</script> & \"scheduling\" study."
    marked = highlight_abstract(abstract, matching(["script", "scheduling"]))
    assert marked == (
        "A &lt;<mark>script</mark>&gt;alert('x')&lt;/<mark>script</mark>&gt; &amp; "
        '"<mark>scheduling</mark>" study.'
    )


def test_the_whole_title_is_marked_however_long():
    title = filler(60, "Very long title") + " about Scheduling and scheduling"
    marked = highlight_title(title, matching(["scheduling"]))
    assert marks(marked) == ["Scheduling", "scheduling"]
    assert ELLIPSIS not in marked
    assert plain(marked) == title


def test_every_occurrence_of_every_matched_word_is_marked_in_a_title():
    marked = highlight_title("Learned Caches for learned caches", matching(["learned", "caches"]))
    assert marked == (
        "<mark>Learned</mark> <mark>Caches</mark> for <mark>learned</mark> <mark>caches</mark>"
    )


@pytest.mark.parametrize("matcher", [None, matching([]), matching(["absent"])])
def test_without_a_match_the_title_is_plain_escaped_text(matcher):
    assert highlight_title("<i>Caches</i> & co", matcher) == "&lt;i&gt;Caches&lt;/i&gt; &amp; co"


# -- abstracts --------------------------------------------------------------------------------
def test_a_long_abstract_gives_its_best_fragments_with_ellipses():
    abstract = " ".join(
        [filler(50), "first scheduling result", filler(50), "second scheduling result", filler(50)]
    )
    marked = highlight_abstract(abstract, matching(["scheduling"]))
    fragments = marked.split(BETWEEN)
    assert len(fragments) == ABSTRACT_FRAGMENTS
    assert marked.startswith(ELLIPSIS) and marked.endswith(ELLIPSIS)
    assert marks(marked) == ["scheduling", "scheduling"]
    assert "first <mark>scheduling</mark> result" in fragments[0]
    assert "second <mark>scheduling</mark> result" in fragments[1]
    for fragment in fragments:
        assert plain(fragment.strip(ELLIPSIS)) in abstract
        assert len(fragment) < FRAGMENT_CHARS + 40


def test_a_short_abstract_is_one_fragment_without_ellipses():
    abstract = "We study scheduling of deep learning jobs."
    assert highlight_abstract(abstract, matching(["scheduling"])) == (
        "We study <mark>scheduling</mark> of deep learning jobs."
    )


def test_an_edge_cut_of_mere_punctuation_keeps_it_instead_of_an_ellipsis():
    abstract = filler(5) + " scheduling " + filler(40) + " — (...)"
    marked = highlight_abstract(abstract, matching(["scheduling"]))
    assert not marked.startswith(ELLIPSIS) and marked.endswith(ELLIPSIS)


def test_fragments_with_more_distinct_terms_win():
    # Terms, not raw words, are counted: "alpha alphas alphaz" all match the term "alpha", so
    # that fragment scores 3 x 100, below the two of two distinct terms each (2 x 200).
    stems = {"alphas": "alpha", "alphaz": "alpha"}
    matcher = matching(["alpha", "alphas", "alphaz", "beta", "gamma", "delta"], stems)
    abstract = " ".join(
        [
            "alpha beta",
            filler(40),
            "alpha alphas alphaz",
            filler(40),
            "gamma delta",
            filler(40),
        ]
    )
    marked = highlight_abstract(abstract, matcher)
    assert marks(marked) == ["alpha", "beta", "gamma", "delta"]
    assert len(marked.split(BETWEEN)) == 2


def test_tex_math_is_not_marked():
    abstract = (
        "We bound $O(n \\log n)$ log cost, $$\\log x$$ and \\(\\log y\\) and \\[\\log z\\] "
        "where $x$ is the x log size."
    )
    marked = highlight_abstract(abstract, matching(["log", "x"]))
    assert marks(marked) == ["log", "x", "log"]
    for math in ("$O(n \\log n)$", "$$\\log x$$", "\\(\\log y\\)", "\\[\\log z\\]", "$x$"):
        assert math in marked
    assert highlight_title("The $x$ and the x", matching(["x"])) == (
        "The $x$ and the <mark>x</mark>"
    )


@pytest.mark.parametrize("matcher", [None, matching([]), matching(["absent"])])
def test_without_a_match_an_abstract_gives_its_escaped_lead(matcher):
    abstract = "A <b>bold</b> & plain start " + filler(100)
    marked = highlight_abstract(abstract, matcher)
    assert marked == escape(lead(abstract), quote=False)
    assert marked.startswith("A &lt;b&gt;bold&lt;/b&gt; &amp; plain start lorem")
    assert marked.endswith(ELLIPSIS) and marks(marked) == []


def test_an_empty_abstract_stays_empty():
    assert highlight_abstract("", matching(["anything"])) == ""
    assert highlight_abstract("", None) == ""


def test_lead_cuts_at_a_word_boundary():
    assert lead("short text") == "short text"
    text = filler(100)
    cut = lead(text)
    assert cut.endswith(ELLIPSIS) and len(cut) <= LEAD_CHARS + 1
    assert cut[: -len(ELLIPSIS)] == text[: len(cut) - len(ELLIPSIS)]
    assert not cut[: -len(ELLIPSIS)].endswith(" ")
    # No space in the second half of the limit: cut at the limit itself.
    assert lead("x" * 300, 100) == "x" * 100 + ELLIPSIS


def test_highlight_record_gives_title_and_abstract():
    record = Record(
        id="r1",
        title="Fair Cluster Scheduling",
        abstract="We study scheduling of deep learning jobs on <GPU> clusters.",
    )
    assert highlight_record(record, matching(["scheduling"])) == {
        "title": "Fair Cluster <mark>Scheduling</mark>",
        "abstract": (
            "We study <mark>scheduling</mark> of deep learning jobs on &lt;GPU&gt; clusters."
        ),
    }
    assert highlight_record(record, None) == {
        "title": "Fair Cluster Scheduling",
        "abstract": "We study scheduling of deep learning jobs on &lt;GPU&gt; clusters.",
    }


# -- the matcher and the parts ----------------------------------------------------------------
def test_the_matcher_is_called_once_per_text_with_its_distinct_words():
    calls: list[set[str]] = []

    def matcher(distinct: set[str]) -> dict[str, str]:
        calls.append(distinct)
        return {w: w for w in distinct if w == "b"}

    highlight_record(Record(id="r", title="a b a", abstract="b c b " + filler(200)), matcher)
    assert calls == [{"a", "b"}, {"b", "c", "lorem"}]


def test_word_bounds_of_short_and_long_ascii_text_agree():
    short = "Schedulers (e.g. U.S.A. v1.2) cache x_1, don't they? "
    words, starts, ends = word_bounds(short)
    assert words[:5] == ["Schedulers", "e.g", "U.S.A", "v1.2", "cache"]
    assert [short[s:e] for s, e in zip(starts, ends, strict=True)] == words
    long_words, _, _ = word_bounds(short * 20)  # long ASCII: the array split
    assert long_words == words * 20


def test_fragment_defaults_and_matched_terms_follow_whoosh():
    matches = [Match("alpha", 0, 5), Match("alpha", 6, 12), Match("beta", 13, 17)]
    fragment = Fragment("alpha alphas beta", matches)
    assert (fragment.startchar, fragment.endchar) == (0, 17)
    assert fragment.matched_terms == {"alpha", "beta"}
    assert score_fragment(fragment) == 3 * 200
    assert score_fragment(Fragment("text", [])) == 0
    assert Fragment("text", [], 1, 3).endchar == 3


def test_no_fragments_without_a_match():
    assert whole_fragments("some text", None) == []
    assert whole_fragments("some text", matching(["absent"])) == []
    assert context_fragments("some text", matching([])) == []
    assert [f.matched_terms for f in whole_fragments("some text", matching(["text"]))] == [{"text"}]
