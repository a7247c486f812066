"""`searchsvc mcp`: the MCP server (searchsvc/mcp/) on stdio, for an assistant on this machine
that starts it (Claude Desktop, an IDE): the index read directly, no key. Over HTTP, the running
service answers MCP at /mcp with a read key (searchsvc/mcp/mounted.py)."""

from __future__ import annotations

import click

from searchsvc.cli.common import index_option, reports_errors
from searchsvc.service import SearchService

INSTALL_HINT = "the MCP server needs the MCP SDK: pip install 'searchsvc[mcp]'"


@click.command("mcp")
@index_option
@reports_errors
def mcp_command(index: str) -> None:
    """Serve the index's read-only MCP tools (search, get_record, lookup, similar,
    facet_values) on stdin and stdout until the client closes them.

    Add it to an MCP client's configuration as the command `searchsvc mcp --index LOCATION`.
    Over HTTP, `searchsvc serve` answers MCP at /mcp, with an API key of the read scope as
    `Authorization: Bearer <key>`.
    """
    try:
        from searchsvc.mcp.server import build_server
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("mcp", "pydantic"):
            raise
        raise click.ClickException(INSTALL_HINT) from None
    service = SearchService.open(index)
    try:
        build_server(lambda: service, local=True).run("stdio")
    finally:
        service.close()


COMMANDS = [mcp_command]
