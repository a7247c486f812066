"""`make run`'s index: built from seeds/ when there is none, rebuilt only when make built it from
seeds/ (the stamp) and a seed or the schema changed; an index of the user's own is left alone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import build_index

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".built-from-seeds"
LONG_AGO = 946684800  # 2000-01-01: older than any seed file
LATER = 4102444800  # 2100-01-01: newer than any seed file

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def _make(*args: str, dry: bool = True) -> str:
    """make's output for `args` in the checkout: with `dry`, the commands it would run (`-n`);
    the virtualenv taken as it is (`-o`), never built."""
    command = ["make", "--no-print-directory", "-o", ".venv/bin/.installed"]
    command += ["-n"] if dry else []
    result = subprocess.run(
        [*command, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _builds(output: str, index: Path) -> bool:
    return f"searchsvc index seeds/ --index {index}" in output


def _backdate(path: Path, when: int) -> None:
    os.utime(path, (when, when), follow_symlinks=False)


def test_a_users_index_is_served_as_it_is_even_when_older_than_the_seeds(tmp_path):
    index = Path(build_index(tmp_path / "own"))
    _backdate(index / "CURRENT", LONG_AGO)
    before = sorted(path.name for path in index.iterdir())
    output = _make("index", f"INDEX={index}")
    assert not _builds(output, index)
    assert f"searchsvc stats --index {index}" in output
    # The note it prints, run for real: served as it is, and why it may look stale.
    said = _make("own-index", f"INDEX={index}", dry=False)
    assert said.strip() == (
        f"note: {index} was not built from seeds/ by make: served as it is, though seeds/ or "
        f"the schema changed after it was built (rm -r {index} to rebuild it from seeds/)"
    )
    assert sorted(path.name for path in index.iterdir()) == before


def test_a_users_index_newer_than_the_seeds_gets_a_plain_note(tmp_path):
    index = Path(build_index(tmp_path / "own"))
    _backdate(index / "CURRENT", LATER)
    said = _make("own-index", f"INDEX={index}", dry=False)
    assert said.strip() == f"note: {index} was not built from seeds/ by make: served as it is"


def test_make_run_does_not_rebuild_a_users_index(tmp_path):
    index = Path(build_index(tmp_path / "own"))
    _backdate(index / "CURRENT", LONG_AGO)
    output = _make("run", f"INDEX={index}")
    assert not _builds(output, index)
    assert f"searchsvc serve --index {index}" in output


def test_a_missing_index_is_built_from_the_seeds_and_stamped(tmp_path):
    index = tmp_path / "none"
    output = _make("index", f"INDEX={index}")
    assert _builds(output, index)
    assert f"cp {index}/CURRENT {index}/{STAMP}" in output


def test_the_seed_index_is_rebuilt_only_when_a_seed_or_the_schema_is_newer(tmp_path):
    index = tmp_path / "seeded"
    index.mkdir()
    (index / "CURRENT").write_text("gen-x\n")
    stamp = index / STAMP
    stamp.write_text("gen-x\n")  # the generation make built: still the live one
    _backdate(stamp, LATER)
    assert not _builds(_make("index", f"INDEX={index}"), index)
    _backdate(stamp, LONG_AGO)
    assert _builds(_make("index", f"INDEX={index}"), index)


def test_a_stamp_without_an_index_builds_it(tmp_path):
    index = tmp_path / "emptied"
    index.mkdir()
    (index / STAMP).touch()
    _backdate(index / STAMP, LATER)
    assert _builds(_make("index", f"INDEX={index}"), index)


def test_an_index_rebuilt_since_make_stamped_it_is_the_users_and_left_alone(tmp_path):
    # make built gen-x from the seeds; the user then rebuilt the index in place with their own
    # records (`searchsvc index mine.jsonl`): CURRENT names gen-y. A newer seed file or schema
    # must not bring the seeds back over their records.
    index = tmp_path / "rebuilt"
    index.mkdir()
    (index / "CURRENT").write_text("gen-y\n")
    stamp = index / STAMP
    stamp.write_text("gen-x\n")
    _backdate(stamp, LONG_AGO)
    _backdate(index / "CURRENT", LONG_AGO)
    output = _make("index", f"INDEX={index}")
    assert not _builds(output, index)
    assert f"searchsvc stats --index {index}" in output


def test_an_empty_stamp_of_an_older_make_counts_as_the_users(tmp_path):
    index = tmp_path / "old-stamp"
    index.mkdir()
    (index / "CURRENT").write_text("gen-x\n")
    (index / STAMP).touch()
    _backdate(index / STAMP, LONG_AGO)
    assert not _builds(_make("index", f"INDEX={index}"), index)
