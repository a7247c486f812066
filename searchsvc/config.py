"""Configuration of the service: defaults, then `SEARCHSVC_*` environment variables, then code.

`SEARCHSVC_INDEX_DIR` (`INDEX_DIR`) is the older name of `SEARCHSVC_INDEX` (`INDEX`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from limits import parse_many

from searchsvc.backends import checked_location

ENV_PREFIX = "SEARCHSVC_"
MAX_GZIP_LEVEL = 3  # ISA-L's highest

# Every setting the service reads, with its default. The environment variable of a setting is
# its name with the `SEARCHSVC_` prefix (`SEARCHSVC_INDEX`); `create_app(config)` keys are
# the plain names.
DEFAULTS: dict[str, Any] = {
    # Where the index lives: a location (backends.open_backend), a path for the Whoosh index.
    "INDEX": "index",
    # Origins whose pages may read and write the API from a browser (CORS, api/http.py), with
    # a key in Authorization, never cookies: () for none, ("*",) for any.
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
    # Reads need an API key with the read scope too: every route that shows records or counts,
    # web pages and /metrics included (api/auth.py lists the few that stay open).
    "REQUIRE_KEY_FOR_READS": False,
    # Writes one API key may make ("" for no limit), the `limits` library's syntax ("100/second",
    # "1000 per minute; 20/second"): counted in the task queue's file, one budget for every
    # worker process; beyond it 429 with Retry-After.
    "WRITE_RATE_LIMIT": "100/second",
    # The write queue's bounds (0 for none). Bytes of writes waiting to be applied, of all keys
    # (beyond: 503 with Retry-After) and of one key (beyond: 429 with Retry-After); a write into
    # an empty backlog is always taken, however large.
    "QUEUE_MAX_BYTES": 1024**3,
    "QUEUE_MAX_BYTES_PER_KEY": 256 * 1024**2,
    # Free bytes kept on the task queue's disk: a write that would leave less is refused (507
    # with Retry-After) before it is acknowledged, rather than failing when the disk is full.
    "MIN_FREE_DISK_BYTES": 256 * 1024**2,
    # Bytes of payloads the writer applies in one engine commit at most (a task larger than that
    # goes alone), beside its 10,000 records: bounds the writer's memory.
    "WRITER_BATCH_BYTES": 64 * 1024**2,
    # Days finished tasks are kept (then deleted by the writer; their payloads are dropped as
    # soon as they are applied); 0 keeps them for ever.
    "TASK_RETENTION_DAYS": 7,
    # Requests of one API key waiting on tasks (`?wait=`) at once, across workers: each holds a
    # worker. Beyond it a task is answered at once, as it is, with `Searchsvc-Wait: refused`.
    "MAX_WAITS_PER_KEY": 2,
    # `searchsvc serve`'s nginx front, per client address (0 for no limit): connections with a
    # request under way, and requests a second (a burst of twice as many passes at once).
    "FRONT_CONNECTIONS_PER_ADDRESS": 64,
    "FRONT_REQUESTS_PER_SECOND": 100,
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
    # The URL clients reach the service at (`https://search.example.org`, with the path prefix
    # the front serves it under, if any): the Atom feeds' links start with it. Empty: they are
    # relative, never made from the request's Host header, which the client chooses.
    "PUBLIC_URL": "",
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
    _check_queue_bounds(settings)
    settings["PUBLIC_URL"] = _checked_public_url(settings["PUBLIC_URL"])
    return settings


WRITERS = ("embedded", "off")
# The settings that bound the write queue: whole numbers, 0 for no bound.
QUEUE_BOUNDS = (
    "QUEUE_MAX_BYTES",
    "QUEUE_MAX_BYTES_PER_KEY",
    "MIN_FREE_DISK_BYTES",
    "WRITER_BATCH_BYTES",
    "TASK_RETENTION_DAYS",
    "MAX_WAITS_PER_KEY",
)


def _check_queue_bounds(settings: Mapping[str, Any]) -> None:
    # Refused at start-up: a negative bound would refuse every write, or none, silently.
    for name in QUEUE_BOUNDS:
        value = settings[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{ENV_PREFIX}{name}={value!r}: expected 0 (no bound) or more")
    write_rates(settings["WRITE_RATE_LIMIT"])


def write_rates(limit: str) -> tuple[tuple[int, int], ...]:
    """WRITE_RATE_LIMIT as (writes, seconds) pairs; () for no limit. ValueError names the
    setting when it is not the `limits` library's syntax."""
    if not limit:
        return ()
    try:
        parsed = parse_many(limit)
    except ValueError:
        parsed = []
    if not parsed or any(item.amount < 1 for item in parsed):
        raise ValueError(
            f"{ENV_PREFIX}WRITE_RATE_LIMIT={limit!r}: expected writes per period, such as "
            "100/second or 1000 per minute, or empty for no limit"
        )
    return tuple((item.amount, item.get_expiry()) for item in parsed)


def _check_writer(writer: Any) -> None:
    if writer not in WRITERS:
        raise ValueError(f"{ENV_PREFIX}WRITER={writer!r}: expected one of {', '.join(WRITERS)}")


def _checked_public_url(url: Any) -> str:
    """An absolute http(s) URL without query or fragment, without its final `/`; or ""."""
    if url == "":
        return url
    try:
        parts = urlsplit(url)
        valid = (
            parts.scheme in ("http", "https")
            and bool(parts.hostname)
            and parts.username is None
            and (parts.port is None or parts.port > 0)
            and not any(c in url for c in "?# \t\r\n")
        )
    except (TypeError, ValueError, AttributeError):  # not a string; a port or IPv6 host garbled
        valid = False
    if not valid:
        raise ValueError(
            f"{ENV_PREFIX}PUBLIC_URL={url!r}: expected an absolute http(s) URL such as "
            "https://search.example.org, or nothing"
        )
    return url.rstrip("/")


def _check_gzip_level(level: Any) -> None:
    # Refused at start-up: compressing with a bad level would fail every large response.
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= MAX_GZIP_LEVEL:
        raise ValueError(f"{ENV_PREFIX}GZIP_LEVEL={level!r}: expected 0 to {MAX_GZIP_LEVEL}")
