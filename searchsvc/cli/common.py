"""Options and error handling shared by every `searchsvc` command."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from searchsvc.errors import SearchsvcError

DEFAULT_INDEX_DIR = "index"

index_dir_option = click.option(
    "--index-dir",
    type=click.Path(file_okay=False),
    default=DEFAULT_INDEX_DIR,
    envvar="SEARCHSVC_INDEX_DIR",
    show_default=True,
    show_envvar=True,
    help="Index location.",
)


def reports_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn searchsvc's own errors into a one-line message and exit status 1, not a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SearchsvcError as exc:
            click.echo(f"error: {exc.message}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)

    return wrapper
