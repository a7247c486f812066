"""Configuration of the service: defaults, then `SEARCHSVC_*` environment variables, then code.

`SEARCHSVC_INDEX_DIR` (`INDEX_DIR`) is the older name of `SEARCHSVC_INDEX` (`INDEX`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from searchsvc.backends import checked_location

ENV_PREFIX = "SEARCHSVC_"
MAX_GZIP_LEVEL = 3  # ISA-L's highest

# Every setting the service reads, with its default. The environment variable of a setting is
# its name with the `SEARCHSVC_` prefix (`SEARCHSVC_INDEX`); `create_app(config)` keys are
# the plain names.
DEFAULTS: dict[str, Any] = {
    # Where the index lives: a location (backends.open_backend), a path for the Whoosh index.
    "INDEX": "index",
    # Origins allowed to read the API from a browser: () for none, ("*",) for any.
    "CORS_ORIGINS": (),
    # Largest request body outside the write endpoints; anything bigger is refused with 413.
    "MAX_CONTENT_LENGTH": 64 * 1024,
    # Largest body of a write (POST/PUT of records; NDJSON bulk loads come in such pieces).
    "MAX_WRITE_CONTENT_LENGTH": 32 * 1024 * 1024,
    # Most records (or ids) one write request may carry.
    "MAX_BATCH_RECORDS": 10_000,
    # The task queue's SQLite file; empty: `searchsvc.sqlite3` in the Whoosh index directory.
    "TASKS_DB": "",
    # "embedded": every gunicorn worker is a candidate writer (one is elected); "off": a
    # `searchsvc writer` process of its own applies the tasks.
    "WRITER": "embedded",
    # Reads (search, records, ...) need an API key with the read scope too.
    "REQUIRE_KEY_FOR_READS": False,
    # Writes one API key may make per worker process ("" for no limit), flask-limiter's syntax.
    "WRITE_RATE_LIMIT": "100/second",
    # Longest accepted query string in bytes (a 10,000-character `q` fits even percent-encoded).
    "MAX_QUERY_STRING_LENGTH": 64 * 1024,
    # Cache-Control max-age of successful GET responses; 0 = revalidate with the ETag each time.
    "CACHE_MAX_AGE": 0,
    # Responses at least this big are gzipped for clients that accept it.
    "GZIP_MIN_SIZE": 1024,
    # ISA-L's levels, 0-3 (gzip through python-isal). Level 1 shrinks a search answer as much
    # as zlib's level 1 does, in much less time.
    "GZIP_LEVEL": 1,
    # Title of the OpenAPI document.
    "API_TITLE": "searchsvc",
}


def _tuple_of_strings(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _parse(name: str, text: str) -> Any:
    """Turn an environment variable's text into the type of the setting's default."""
    default = DEFAULTS[name]
    parser: Callable[[str], Any]
    if isinstance(default, bool):
        parser = _boolean
    elif isinstance(default, int):
        parser = int
    elif isinstance(default, tuple):
        parser = _tuple_of_strings
    else:
        parser = str
    try:
        return parser(text)
    except ValueError as exc:
        raise ValueError(f"{ENV_PREFIX}{name}={text!r}: {exc}") from None


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


# Older names still accepted, each standing for a setting when that one is not given.
ALIASES = {"INDEX_DIR": "INDEX"}


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings given as `SEARCHSVC_<NAME>` environment variables, parsed."""
    environ = os.environ if environ is None else environ
    settings = {
        name: _parse(name, environ[ENV_PREFIX + name])
        for name in DEFAULTS
        if ENV_PREFIX + name in environ
    }
    for alias, name in ALIASES.items():
        if name not in settings and ENV_PREFIX + alias in environ:
            settings[name] = _parse(name, environ[ENV_PREFIX + alias])
    return settings


def load(
    config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Defaults, overridden by the environment, overridden by `config`."""
    settings = dict(DEFAULTS)
    settings.update(from_environment(environ))
    config = dict(config or {})
    for alias, name in ALIASES.items():
        if alias in config:
            config.setdefault(name, config.pop(alias))
    settings.update(config)
    if isinstance(settings["CORS_ORIGINS"], str):
        settings["CORS_ORIGINS"] = _tuple_of_strings(settings["CORS_ORIGINS"])
    # Checked now, so that a server with a location naming no engine fails at start-up.
    settings["INDEX"] = checked_location(settings["INDEX"])
    _check_gzip_level(settings["GZIP_LEVEL"])
    _check_writer(settings["WRITER"])
    return settings


WRITERS = ("embedded", "off")


def _check_writer(writer: Any) -> None:
    if writer not in WRITERS:
        raise ValueError(f"{ENV_PREFIX}WRITER={writer!r}: expected one of {', '.join(WRITERS)}")


def _check_gzip_level(level: Any) -> None:
    # Refused at start-up: compressing with a bad level would fail every large response.
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= MAX_GZIP_LEVEL:
        raise ValueError(f"{ENV_PREFIX}GZIP_LEVEL={level!r}: expected 0 to {MAX_GZIP_LEVEL}")
