"""create_app's settings: defaults, then SEARCHSVC_* environment variables, then the argument."""

from __future__ import annotations

import os

import pytest

from searchsvc import config
from searchsvc.app import create_app
from searchsvc.domain.errors import InvalidLocation


def test_defaults():
    settings = config.load({}, environ={})
    assert settings["INDEX"] == "whoosh://" + os.path.abspath("index")
    assert settings["CORS_ORIGINS"] == ()
    assert settings["MAX_CONTENT_LENGTH"] == 64 * 1024


def test_environment_overrides_defaults_and_the_argument_overrides_both():
    environ = {
        "SEARCHSVC_INDEX_DIR": "/srv/index",
        "SEARCHSVC_CORS_ORIGINS": "https://a.example,https://b.example",
        "SEARCHSVC_MAX_CONTENT_LENGTH": "1024",
        "UNRELATED": "x",
    }
    settings = config.load({"MAX_CONTENT_LENGTH": 2048}, environ=environ)
    assert settings["INDEX"] == "whoosh:///srv/index"
    assert settings["CORS_ORIGINS"] == ("https://a.example", "https://b.example")
    assert settings["MAX_CONTENT_LENGTH"] == 2048


def test_a_bad_environment_value_names_the_variable():
    with pytest.raises(ValueError, match="SEARCHSVC_CACHE_MAX_AGE"):
        config.load(environ={"SEARCHSVC_CACHE_MAX_AGE": "soon"})


@pytest.mark.parametrize("level", ["4", "-1", "fast"])
def test_a_gzip_level_outside_isal_levels_is_refused_at_start(level):
    with pytest.raises(ValueError, match="SEARCHSVC_GZIP_LEVEL"):
        config.load(environ={"SEARCHSVC_GZIP_LEVEL": level})
    assert config.load(environ={"SEARCHSVC_GZIP_LEVEL": "3"})["GZIP_LEVEL"] == 3


def test_create_app_reads_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SEARCHSVC_INDEX", str(tmp_path))
    app = create_app()
    assert app.config["INDEX"] == f"whoosh://{tmp_path}"
    assert create_app({"INDEX": tmp_path / "x"}).config["INDEX"] == f"whoosh://{tmp_path}/x"


def test_index_dir_is_the_older_name_of_index_and_index_wins():
    older = {"SEARCHSVC_INDEX_DIR": "/old"}
    assert config.load(environ=older)["INDEX"] == "whoosh:///old"
    assert config.load(environ={**older, "SEARCHSVC_INDEX": "/new"})["INDEX"] == "whoosh:///new"
    assert config.load({"INDEX_DIR": "/code"}, environ=older)["INDEX"] == "whoosh:///code"
    both = {"INDEX": "/new", "INDEX_DIR": "/old"}
    assert config.load(both, environ={})["INDEX"] == "whoosh:///new"


def test_a_location_naming_no_engine_is_refused_at_start():
    with pytest.raises(InvalidLocation, match="unknown index location scheme nosuch://"):
        config.load({"INDEX": "nosuch://host/x"}, environ={})
    assert config.load({"INDEX": "whoosh:///srv/x"}, environ={})["INDEX"] == "whoosh:///srv/x"


@pytest.mark.parametrize(
    "name",
    [
        "QUEUE_MAX_BYTES",
        "QUEUE_MAX_BYTES_PER_KEY",
        "MIN_FREE_DISK_BYTES",
        "TASK_RETENTION_DAYS",
        "WRITER_BATCH_BYTES",
        "MAX_WAITS_PER_KEY",
    ],
)
def test_the_queue_bounds_refuse_negative_values_at_start(name):
    with pytest.raises(ValueError, match=f"SEARCHSVC_{name}=-1: expected 0 .no bound. or more"):
        config.load(environ={f"SEARCHSVC_{name}": "-1"})
    with pytest.raises(ValueError, match=f"SEARCHSVC_{name}=-5"):
        config.load({name: -5}, environ={})
    assert config.load(environ={f"SEARCHSVC_{name}": "0"})[name] == 0


def test_a_malformed_write_rate_limit_is_refused_at_start():
    with pytest.raises(ValueError, match="SEARCHSVC_WRITE_RATE_LIMIT='often'"):
        config.load(environ={"SEARCHSVC_WRITE_RATE_LIMIT": "often"})
    assert config.load(environ={"SEARCHSVC_WRITE_RATE_LIMIT": ""})["WRITE_RATE_LIMIT"] == ""
