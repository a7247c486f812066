"""`searchsvc serve` on a machine without nginx: `--front auto` (the default) serves with gunicorn
alone and says so in one warning line; `--front nginx` refuses; `--front none` never runs it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import requests

from searchsvc.serving import serve as serving
from searchsvc.serving.serve import NO_FRONT_WARNING, ServeError, choose_nginx
from tests.raw_http import SEARCHSVC, free_port, serve


def _without_nginx(tmp_path) -> dict[str, str]:
    """An environment whose PATH and sbin directories hold no nginx (the one installed here,
    if any, hidden)."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    kept = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "nginx").exists()]
    return {
        "PATH": os.pathsep.join([str(empty), *kept]),
        "SEARCHSVC_SBIN": str(empty),
        "SEARCHSVC_NGINX": "",
        "SEARCHSVC_FRONT": "",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }


def test_without_nginx_serve_answers_searches_and_warns_in_one_line(fixture_index, tmp_path):
    log = tmp_path / "serve.log"
    with serve(fixture_index, log, workers=1, env=_without_nginx(tmp_path)) as (port, _):
        answer = requests.get(f"http://127.0.0.1:{port}/api/v1/search?q=scheduling", timeout=10)
        assert answer.status_code == 200
        assert answer.json()["total"] >= 1
    lines = log.read_text().splitlines()
    warnings = [line for line in lines if "warning" in line.lower()]
    assert warnings == [NO_FRONT_WARNING]
    assert "sudo apt-get install nginx" in warnings[0]
    assert "brew install nginx" in warnings[0]
    assert f"serving http://127.0.0.1:{port}/ (gunicorn alone, no front)" in lines


def test_front_nginx_without_nginx_fails_in_one_line(fixture_index, tmp_path):
    bind = f"127.0.0.1:{free_port()}"
    result = subprocess.run(
        [str(SEARCHSVC), "serve", "--index", fixture_index, "--bind", bind, "--front", "nginx"],
        env={**os.environ, **_without_nginx(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: nginx not found: `searchsvc serve` runs it in front of gunicorn "
        "(Debian: apt-get install nginx)"
    ]


def test_choose_nginx(tmp_path, monkeypatch):
    said: list[str] = []
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("SEARCHSVC_SBIN", str(tmp_path))
    monkeypatch.delenv("SEARCHSVC_NGINX", raising=False)
    assert choose_nginx("auto", said.append) is None
    assert said == [NO_FRONT_WARNING]
    assert choose_nginx("none", said.append) is None
    assert said == [NO_FRONT_WARNING]  # asked for: nothing to warn about
    with pytest.raises(ServeError):
        choose_nginx("nginx", said.append)
    # SEARCHSVC_NGINX asks for nginx: missing, it is an error even in auto.
    monkeypatch.setenv("SEARCHSVC_NGINX", str(tmp_path / "nginx"))
    with pytest.raises(ServeError):
        choose_nginx("auto", said.append)
    fake = tmp_path / "nginx"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.delenv("SEARCHSVC_NGINX")
    assert choose_nginx("auto", said.append) == str(fake)
    assert serving.find_nginx() == str(fake)
    assert len(said) == 1
