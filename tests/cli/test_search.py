"""`searchsvc search` on the fixture index."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from searchsvc.cli import main


@pytest.fixture(scope="module")
def run(fixture_index):
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, ["search", *args, "--index-dir", str(fixture_index)])

    return run


def test_prints_ranked_hits_with_highlighted_words_and_facets(run):
    result = run("scheduling")
    assert result.exit_code == 0, result.output
    assert "1 record ·" in result.output
    assert "Fair Cluster Scheduling for Deep Learning Jobs" in result.output
    assert "<mark>" not in result.output
    assert (
        "category: cs.DC Distributed, Parallel, and Cluster Computing (1) · "
        "cs.LG Machine Learning (1)"
    ) in result.output
    assert "subject: cs Computer Science (1)" in result.output


def test_matched_words_are_styled_for_the_terminal():
    from searchsvc.cli.searching import terminal_text

    styled = terminal_text("a <mark>b</mark> &lt;c&gt;")
    assert "\x1b[" in styled and styled.endswith("<c>")


def test_filters_sort_and_paging_options(run):
    result = run("", "--category", "cs.DC", "--from", "2022", "--sort", "oldest", "--json")
    data = json.loads(result.output)
    assert data["total"] == 1 and data["query"]["sort"] == "oldest"
    result = run("", "--author", "Aditya Akella", "--year", "2021", "--json")
    assert [hit["id"] for hit in json.loads(result.output)["hits"]] == ["2101.00003"]
    result = run("", "--page", "2", "--per-page", "2", "--json")
    assert json.loads(result.output)["page"] == 2


def test_json_prints_the_search_result(run):
    data = json.loads(run('"learned caches"', "--json").output)
    assert data["total"] == 1
    assert data["hits"][0]["highlights"]["title"].startswith("<mark>Learned</mark>")
    assert set(data["facets"]) == {"author", "year", "category", "subject"}


def test_a_suggestion_is_shown(run):
    assert "Did you mean: " in run("schedulng").output


def test_errors_are_one_line_and_exit_1(run, tmp_path):
    result = run("year:abc")
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: year:abc is not a year")
    result = run("x", "--per-page", "1000")
    assert result.exit_code == 1 and "--per-page" in result.output
    missing = CliRunner().invoke(main, ["search", "x", "--index-dir", str(tmp_path / "none")])
    assert missing.exit_code == 1 and missing.output.startswith("error: no index")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ('"learned caches', "this quote is never closed (at character 1)"),
        ("title:", "title: needs a word"),
        ("author:", "author: needs a word"),
        ("year:2023..2020", "the year range 2023..2020 ends before it starts (at character 6)"),
        ("learning AND", "AND needs a word or a group after it (at character 10)"),
        ("((learning", "this ( is never closed (at character 2)"),
        ("learning)", "this ) has no ( before it (at character 9)"),
        ("title:[a TO z]", "ranges are for years only"),
    ],
)
def test_a_malformed_query_is_a_one_line_error_with_its_position(run, query, message):
    result = run(query)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr and result.stdout == ""


def test_a_quoted_phrase_finds_only_adjacent_words(run):
    # The shell's own quotes go around the phrase: searchsvc search '"learned caches"'.
    assert "1 record ·" in run('"learned caches"').output
    assert "0 records" in run('"caches learned"').output


@pytest.mark.parametrize(
    ("query", "message", "position"),
    [
        ("title:", "title: needs a word", 0),
        ("title: x", "title: needs a word", 0),
        ("learning author:", "author: needs a word", 9),
        ('"unclosed', "this quote is never closed", 0),
        ("((learning", "this ( is never closed", 1),
        (")(", "this ) has no ( before it", 0),
        ("()", "empty parentheses", 0),
        ("AND", "AND needs a word or a group before it", 0),
        ("OR learning", "OR needs a word or a group before it", 0),
        ("NOT", "NOT needs a word or a group after it", 0),
        ("NOT NOT NOT", "NOT needs a word or a group after it", 8),
        ("year:2023..2020", "ends before it starts", 5),
        ("year:{2020 TO 2021}", "holds no year", 5),
        ("learning year:abc", "year:abc is not a year", len("learning year:")),
        ("year:99999", "years are from 1000 to 2999", 5),
        ("learning^x", "^ must be followed by a boost", 8),
        ("learning~9", "a fuzzy word allows 1 to 2 edits", 8),
        ("a~b", "~ ends a fuzzy word", 1),
    ],
)
def test_a_malformed_query_error_counts_the_position_from_one(run, query, message, position):
    result = run(query)
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and message in line
    assert line.endswith(f"(at character {position + 1})")


def test_a_malformed_query_is_refused_before_the_index_is_opened(tmp_path):
    result = CliRunner().invoke(main, ["search", "title:", "--index", str(tmp_path / "none")])
    assert result.exit_code == 1 and "title: needs a word" in result.stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--year", "abc"], "--year"),
        (["--year", "99"], "--year"),
        (["--from", "2023", "--to", "2021"], "--from"),
        (["--page", "0"], "--page"),
        (["--per-page", "two"], "--per-page"),
        (["--author", ""], "--author"),
    ],
)
def test_a_bad_option_is_a_one_line_error_naming_the_option(run, args, option):
    result = run("learning", *args)
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: invalid {option}: ")


def test_the_index_option_takes_a_location(fixture_index, tmp_path):
    url = f"whoosh://{fixture_index}"
    result = CliRunner().invoke(main, ["search", "congestion", "--json", "--index", url])
    assert result.exit_code == 0, result.output
    assert [hit["id"] for hit in json.loads(result.output)["hits"]] == ["2101.00003"]
    result = CliRunner().invoke(
        main, ["search", "congestion", "--json"], env={"SEARCHSVC_INDEX": fixture_index}
    )
    assert result.exit_code == 0 and json.loads(result.output)["total"] == 1


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("foo://x", "unknown index location scheme foo://"),
        ("whoosh://host/x", "three slashes"),
    ],
)
def test_a_bad_index_location_is_a_one_line_error(location, message):
    result = CliRunner().invoke(main, ["search", "x", "--index", location])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and message in line


def test_subject_options_take_any_level_and_no_crosslists_keeps_to_primary_categories(run):
    # The fixture's cs.LG records: one with it as primary (2201.00002), one cross-listed.
    listed = json.loads(run("", "--category", "cs.LG", "--json").output)
    assert listed["total"] == 2
    primary = json.loads(run("", "--category", "cs.LG", "--no-crosslists", "--json").output)
    assert [hit["id"] for hit in primary["hits"]] == ["2201.00002"]
    assert primary["query"]["crosslists"] == "exclude"
    archive = json.loads(run("", "--subject", "cs", "--json").output)
    assert archive["total"] == 4
    assert json.loads(run("", "--category", "grp_physics", "--json").output)["total"] == 1
    assert {v["value"]: v["label"] for v in archive["facets"]["subject"]} == {
        "cs": "Computer Science",
        "hep-ph": "High Energy Physics - Phenomenology",
    }
    shown = run("", "--subject", "grp_cs", "--no-crosslists").output
    assert "subject: cs Computer Science (4)" in shown


def test_a_selected_value_is_printed_even_outside_the_counts(run):
    result = run("learning", "--year", "2007")
    assert result.exit_code == 0, result.output
    assert "0 records" in result.output
    assert "year: 2022 (1) · 2023 (1) · 2007 (0)" in result.output


def test_repeated_facet_options_are_or_within_a_facet(run):
    result = run("", "--category", "cs.NI", "--category", "hep-ph", "--json")
    data = json.loads(result.output)
    assert {hit["id"] for hit in data["hits"]} == {"2101.00003", "0704.0001"}
    assert data["query"]["category"] == ["cs.NI", "hep-ph"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--from", "abc"), "error: invalid --from: Not a valid integer."),
        (("--to", "x"), "error: invalid --to: Not a valid integer."),
        (("--per-page", "0"), "error: invalid --per-page:"),
        (("--year", "1"), "error: invalid --year:"),
    ],
)
def test_a_bad_option_is_named_as_the_option(run, options, message):
    result = run("learning", *options)
    assert result.exit_code == 1
    assert result.stderr.startswith(message)
