"""Configuration of the service: defaults, then `SEARCHSVC_*` environment variables, then code."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

ENV_PREFIX = "SEARCHSVC_"
MAX_GZIP_LEVEL = 3  # ISA-L's highest

# Every setting the service reads, with its default. The environment variable of a setting is
# its name with the `SEARCHSVC_` prefix (`SEARCHSVC_INDEX_DIR`); `create_app(config)` keys are
# the plain names.
DEFAULTS: dict[str, Any] = {
    # Where the index lives (an IndexDirectory: CURRENT + generations).
    "INDEX_DIR": "index",
    # Origins allowed to read the API from a browser: () for none, ("*",) for any.
    "CORS_ORIGINS": (),
    # The API takes no request bodies; anything bigger than this is refused with 413.
    "MAX_CONTENT_LENGTH": 64 * 1024,
    # Longest accepted query string in bytes (a 10,000-character `q` fits even percent-encoded).
    "MAX_QUERY_STRING_LENGTH": 64 * 1024,
    # Cache-Control max-age of successful GET responses; 0 = revalidate with the ETag each time.
    "CACHE_MAX_AGE": 0,
    # Responses at least this big are gzipped for clients that accept it.
    "GZIP_MIN_SIZE": 1024,
    # ISA-L's levels, 0-3 (gzip through python-isal). Level 1 shrinks a 24 KB search answer
    # 2.9x in 66 us, where zlib's level 1 took 290 us for the same ratio.
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


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings given as `SEARCHSVC_<NAME>` environment variables, parsed."""
    environ = os.environ if environ is None else environ
    return {
        name: _parse(name, environ[ENV_PREFIX + name])
        for name in DEFAULTS
        if ENV_PREFIX + name in environ
    }


def load(
    config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Defaults, overridden by the environment, overridden by `config`."""
    settings = dict(DEFAULTS)
    settings.update(from_environment(environ))
    settings.update(config or {})
    if isinstance(settings["CORS_ORIGINS"], str):
        settings["CORS_ORIGINS"] = _tuple_of_strings(settings["CORS_ORIGINS"])
    settings["INDEX_DIR"] = os.fspath(settings["INDEX_DIR"])
    _check_gzip_level(settings["GZIP_LEVEL"])
    return settings


def _check_gzip_level(level: Any) -> None:
    # Refused at start-up: compressing with a bad level would fail every large response.
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= MAX_GZIP_LEVEL:
        raise ValueError(f"{ENV_PREFIX}GZIP_LEVEL={level!r}: expected 0 to {MAX_GZIP_LEVEL}")
