"""CORS on the nginx front's own refusals (issue 35): the origins of SEARCHSVC_CORS_ORIGINS may
read them as they read the app's answers; nobody when the setting is empty. The preflights of the
write URLs pass through to the app (tests/web/test_cors.py drives them from Chromium through
`searchsvc serve`)."""

from __future__ import annotations

import re
import subprocess

import pytest

from searchsvc.serving.front import Front, cors_origins_map, write_front
from searchsvc.serving.serve import ServeError, find_nginx


def front(*origins: str) -> Front:
    return Front("127.0.0.1", 8000, 65536, 32 << 20, 30, 64, 100, cors_origins=origins)


def test_the_origins_map_names_each_configured_origin_and_nothing_else():
    assert cors_origins_map(front()) == 'default "";'
    assert cors_origins_map(front("https://a.example", "*")) == 'default "*";'
    listed = cors_origins_map(
        front("https://a.example/", "http://127.0.0.1:8080", 'https://x";evil', "null")
    )
    assert listed == (
        'default ""; "https://a.example" $http_origin; "http://127.0.0.1:8080" $http_origin;'
    )


def test_the_origins_come_from_the_setting_the_app_reads(monkeypatch):
    monkeypatch.setenv("SEARCHSVC_CORS_ORIGINS", "https://a.example, https://b.example")
    made = Front("127.0.0.1", 8000, 65536, 32 << 20, 30, 64, 100)
    assert made.cors_origins == ("https://a.example", "https://b.example")
    monkeypatch.delenv("SEARCHSVC_CORS_ORIGINS")
    assert Front("127.0.0.1", 8000, 65536, 32 << 20, 30, 64, 100).cors_origins == ()


@pytest.mark.parametrize("origins", [(), ("*",), ("https://a.example", "http://[::1]:8080")])
def test_the_front_config_with_cors_origins_passes_nginx_own_check(tmp_path, origins):
    try:
        nginx = find_nginx()
    except ServeError as exc:
        pytest.skip(f"{exc.message} (.ci/run installs it)")
    config = write_front(tmp_path, front(*origins))
    check = subprocess.run(
        [nginx, "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    text = config.read_text()
    # Only nginx's error pages: the app's answers carry the app's own CORS headers.
    assert re.findall(r"add_header Access-Control-Allow-Origin (\S+) always;", text) == [
        "$front_cors_origin"
    ]
    for origin in origins:
        assert (f'"{origin}" $http_origin;' in text) == (origin != "*")
