"""Options and error handling shared by every `searchsvc` command."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import click

from searchsvc.domain.errors import SearchsvcError

DEFAULT_INDEX = "index"

# `--index-dir` and SEARCHSVC_INDEX_DIR are the older names, still accepted.
index_option = click.option(
    "--index",
    "--index-dir",
    "index",
    default=DEFAULT_INDEX,
    envvar=["SEARCHSVC_INDEX", "SEARCHSVC_INDEX_DIR"],
    show_default=True,
    show_envvar=True,
    metavar="LOCATION",
    help=(
        "Index location: a directory (whoosh:///ABS/PATH), or a SolrCloud collection "
        "(solr://HOST:PORT[,HOST:PORT...]/solr/NAME)."
    ),
)


tasks_db_option = click.option(
    "--tasks-db",
    default="",
    envvar="SEARCHSVC_TASKS_DB",
    show_envvar=True,
    metavar="FILE",
    help=(
        "The task queue's SQLite file (default: searchsvc.sqlite3 in the index directory; "
        "needed for a Solr location)."
    ),
)


class ByteSize(click.ParamType):
    """A size in bytes: a number with an optional unit, K, M, G or T (powers of 1024, an
    optional trailing B or iB), e.g. 2G, 800M, 1.5GiB."""

    name = "size"
    _UNITS: ClassVar[dict[str, int]] = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            size = value
        else:
            match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", str(value).upper())
            if match is None:
                self.fail(f"{value!r} is not a size such as 2G, 800M or 1073741824", param, ctx)
            size = int(float(match.group(1)) * self._UNITS[match.group(2)])
        if size < self.minimum:
            self.fail(f"{value} is below the minimum of {self.minimum // 1024**2}M", param, ctx)
        return size


def reports_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn searchsvc's own errors into a one-line message and exit status 1, not a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SearchsvcError as exc:
            click.echo(f"error: {exc.local_message or exc.message}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)

    return wrapper
