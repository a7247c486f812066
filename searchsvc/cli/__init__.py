"""The `searchsvc` command line: build, inspect, search and serve an index."""

from __future__ import annotations

import click

from searchsvc import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="searchsvc")
def main() -> None:
    """Full-text search over scholarly publication records."""


def _register() -> None:
    # Imported here so each command module can import `common` without a cycle.
    from searchsvc.cli import checking, doctor, indexing, mcp, searching, serving, solr, writing

    for module in (indexing, checking, searching, writing, serving, solr, mcp, doctor):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
