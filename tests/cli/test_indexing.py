"""`searchsvc index`, `stats` and `export` through click's CliRunner, on real indexes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from searchsvc.cli import main
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from tests.support import FIXTURE_RECORDS, build_index


def run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def indexed_records(location) -> list[Record]:
    with SearchService.open(location) as service:
        return list(service.records())


def assert_one_line_error(result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def seed_cli_index(tmp_path_factory, seeds_dir):
    """The seed corpus indexed by `searchsvc index seeds/`, with the command's result."""
    index_dir = tmp_path_factory.mktemp("cli") / "index"
    return index_dir, run("index", seeds_dir, "--index-dir", index_dir)


def test_index_seeds_reports_read_indexed_merged(seed_cli_index):
    index_dir, result = seed_cli_index

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 36, indexed 33, merged 3, skipped 0 in ")
    assert result.stdout.rstrip().endswith(f"-> {index_dir}/")
    assert result.stderr == ""  # no bar and no skips when stderr is not a terminal


def test_stats_json_of_the_seed_index_meets_the_acceptance_figures(seed_cli_index):
    index_dir, _ = seed_cli_index

    result = run("stats", "--json", "--index-dir", index_dir)

    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    facets = {
        name: {v["value"]: v["count"] for v in values} for name, values in stats["facets"].items()
    }
    assert stats["documents"] == 33
    assert facets["author"] == {"Shivaram Venkataraman": 18, "Aditya Akella": 18}
    assert facets["category"] == {
        "cs.DC": 12,
        "cs.LG": 11,
        "cs.NI": 4,
        "cs.DB": 3,
        "cs.CL": 1,
        "cs.LO": 1,
        "cs.OS": 1,
    }
    assert sorted(facets["year"]) == [str(y) for y in range(2019, 2025)]
    assert sum(facets["year"].values()) == 33
    assert stats["built_at"]
    # The API leaves the index location out; the CLI runs where the index is and shows it.
    assert stats["index_dir"] == str(index_dir)


def test_stats_prints_documents_top_values_and_build_time(seed_cli_index):
    index_dir, _ = seed_cli_index

    result = run("stats", "--index-dir", index_dir)

    assert result.exit_code == 0, result.output
    assert f"index      {index_dir}" in result.stdout
    assert "documents  33" in result.stdout
    assert "built at   " in result.stdout
    assert "  12  cs.DC  Distributed, Parallel, and Cluster Computing" in result.stdout
    assert "  18  Aditya Akella" in result.stdout


def test_export_then_rebuild_from_it_gives_the_same_records(seed_cli_index, tmp_path):
    index_dir, _ = seed_cli_index
    exported = tmp_path / "export.jsonl"

    assert run("export", "--index-dir", index_dir, "--output", exported).exit_code == 0
    rebuilt = run("index", exported, "--format", "jsonl", "--index-dir", tmp_path / "again")
    again = run("export", "--index-dir", tmp_path / "again")

    assert rebuilt.exit_code == 0, rebuilt.output
    assert rebuilt.stdout.startswith("read 33, indexed 33, merged 0")
    records = [Record.from_dict(json.loads(line)) for line in exported.read_text().splitlines()]
    assert len(records) == 33
    assert again.stdout == exported.read_text(encoding="utf-8")


def test_index_update_upserts_by_id(tmp_path):
    index_dir = build_index(tmp_path / "index")
    changed = {**FIXTURE_RECORDS[0].to_dict(), "title": "Fair Scheduling, Revised"}
    added = {**FIXTURE_RECORDS[1].to_dict(), "id": "2405.99999", "title": "A New Paper"}
    source = tmp_path / "more.jsonl"
    source.write_text(json.dumps(changed) + "\n" + json.dumps(added) + "\n", encoding="utf-8")

    result = run("index", source, "--update", "--index-dir", index_dir)

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 2, indexed 2 (1 replaced), merged 0")
    titles = {r.id: r.title for r in indexed_records(index_dir)}
    assert len(titles) == len(FIXTURE_RECORDS) + 1
    assert titles[FIXTURE_RECORDS[0].id] == "Fair Scheduling, Revised"


def test_skipped_records_are_listed_with_file_and_line(tmp_path):
    source = tmp_path / "records.jsonl"
    lines = [json.dumps(FIXTURE_RECORDS[0].to_dict()), "{broken", '{"id": "x"}']
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run("index", source, "--format", "jsonl", "--index-dir", tmp_path / "index")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 1, indexed 1, merged 0, skipped 2 in ")
    skipped = result.stderr.splitlines()
    assert [line.split(":")[:2] for line in skipped] == [[str(source), "2"], [str(source), "3"]]


def test_a_record_with_an_unusable_id_is_skipped_on_one_line_saying_why(tmp_path):
    source = tmp_path / "records.jsonl"
    bad = {**FIXTURE_RECORDS[1].to_dict(), "id": "2101.00002\r\nX-Injected: 1"}
    lines = [json.dumps(FIXTURE_RECORDS[0].to_dict()), json.dumps(bad)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run("index", source, "--index-dir", tmp_path / "index")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 1, indexed 1, merged 0, skipped 1 in ")
    assert result.stderr == (
        f"{source}:2: record id '2101.00002\\r\\nX-Injected: 1' has U+000D (carriage return) "
        "at character 11: ids must be printable\n"
    )


def test_index_of_a_missing_path_is_a_one_line_error(tmp_path):
    result = run("index", tmp_path / "missing.json", "--index-dir", tmp_path / "index")

    assert_one_line_error(result, "does not exist")
    assert not (tmp_path / "index").exists()


def test_index_of_an_empty_file_is_a_one_line_error_and_keeps_the_index(tmp_path):
    location = build_index(tmp_path / "index")
    with SearchService.open(location) as service:
        live = service.version()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")

    result = run("index", empty, "--index", location)

    assert_one_line_error(result, "empty")
    with SearchService.open(location) as service:
        assert service.version() == live


def test_index_while_another_build_holds_the_lock_is_a_one_line_error(tmp_path, seeds_dir):
    # The Whoosh index's own lock stands for another process writing.
    from searchsvc.backends.whoosh.store import IndexDirectory

    directory = IndexDirectory(build_index(tmp_path / "index"))

    with directory.lock():
        result = run("index", seeds_dir, "--index", directory.root)

    assert_one_line_error(result, "another build or update is running")


def test_stats_and_export_without_an_index_are_one_line_errors(tmp_path):
    for command in ("stats", "export"):
        result = run(command, "--index-dir", tmp_path / "nothing")
        assert_one_line_error(result, "no index at")


@pytest.mark.parametrize("variable", ["SEARCHSVC_INDEX", "SEARCHSVC_INDEX_DIR"])
def test_the_index_comes_from_the_environment(tmp_path, monkeypatch, variable):
    location = build_index(tmp_path / "env-index")
    monkeypatch.setenv(variable, location)

    result = CliRunner().invoke(main, ["stats", "--json"])

    assert json.loads(result.stdout)["documents"] == len(FIXTURE_RECORDS)


def test_index_is_a_location_and_index_dir_its_older_name(tmp_path):
    location = build_index(tmp_path / "index")
    for option, value in (("--index", f"whoosh://{location}"), ("--index-dir", location)):
        result = run("stats", "--json", option, value)
        assert json.loads(result.stdout)["documents"] == len(FIXTURE_RECORDS), result.output


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("nosuch://host/index", "unknown index location scheme nosuch://"),
        ("whoosh://host/index", "whoosh:///ABSOLUTE/PATH"),
    ],
)
def test_a_bad_location_is_a_one_line_error(location, message):
    for command in (["stats"], ["export"], ["search", "x"]):
        assert_one_line_error(run(*command, "--index", location), message)


def test_errors_name_the_index_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("stats", "--index", "index")
    assert_one_line_error(result, f"no index at {tmp_path / 'index'}")


def test_the_kaggle_sample_indexes_end_to_end_with_its_source_fields(kaggle_sample, tmp_path):
    result = run("index", kaggle_sample, "--index-dir", tmp_path / "index")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 200, indexed 200, merged 0, skipped 0")
    first_line = json.loads(Path(kaggle_sample).read_text(encoding="utf-8").splitlines()[0])
    records = {r.id: r for r in indexed_records(tmp_path / "index")}
    record = records[first_line["id"]]
    assert record.authors == ("C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan")
    assert record.year == 2007
    assert record.categories == tuple(first_line["categories"].split())
    assert record.url == "https://arxiv.org/abs/0704.0001"
    assert record.doi == first_line["doi"]


@pytest.mark.parametrize(
    ("size", "expected"),
    [("300M", 300 * 1024**2), ("1.5G", int(1.5 * 1024**3)), ("2GiB", 2 * 1024**3)],
)
def test_a_build_takes_a_memory_budget_with_a_unit(tmp_path, seeds_dir, size, expected):
    from searchsvc.cli.common import ByteSize

    assert ByteSize().convert(size, None, None) == expected
    result = run("index", seeds_dir, "--index-dir", tmp_path / "index", "--memory-budget", size)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("read 36, indexed 33, merged 3")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory-budget", "10M"], "below the minimum of 256M"),
        (["--memory-budget", "2X"], "is not a size such as 2G"),
        (["--memory-budget", "-1G"], "is not a size such as 2G"),
        (["--update", "--memory-budget", "1G"], "--memory-budget is for a rebuild"),
    ],
)
def test_a_bad_memory_budget_is_a_usage_error(tmp_path, seeds_dir, args, message):
    result = run("index", seeds_dir, "--index-dir", tmp_path / "index", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "index").exists()
