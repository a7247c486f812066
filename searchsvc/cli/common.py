"""Options and error handling shared by every `searchsvc` command."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from searchsvc.errors import SearchsvcError

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
