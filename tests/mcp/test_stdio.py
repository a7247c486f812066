"""`searchsvc mcp --index LOCATION`, spawned as an MCP client spawns it, spoken to over stdio by
the SDK's own client: the tools listed, a search answered, a bad argument a tool error."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.mcp.support import TOOLS, call, error_text, tool_names

pytestmark = pytest.mark.slow

SEARCHSVC = Path(sys.executable).with_name("searchsvc")


def over_stdio(index: str, steps):
    """`steps(session)` with a `searchsvc mcp --index index` process, initialized."""

    async def main():
        params = StdioServerParameters(command=str(SEARCHSVC), args=["mcp", "--index", index])
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await steps(session)

    return anyio.run(main)


def test_searchsvc_mcp_lists_its_tools_and_searches_the_index_over_stdio(seed_index):
    async def steps(session: ClientSession):
        names = await tool_names(session)
        found = await call(session, "search", query="scheduling", per_page=3)
        by_year = await call(session, "facet_values", facet="year", query="scheduling")
        window = await call(session, "search", query="gpu", page=10_000, per_page=2)
        facet = await call(session, "facet_values", facet="colour")
        return names, found, by_year, window, facet

    names, found, by_year, window, facet = over_stdio(seed_index, steps)
    assert names == TOOLS
    assert not found.isError
    answer = found.structuredContent
    assert answer["total"] >= 1 and 1 <= len(answer["results"]) <= 3
    hit = answer["results"][0]
    assert hit["title"] and hit["authors"] and hit["year"] and hit["identifier"]
    assert "url" in hit  # None for a seed record: its page gave none
    assert "**" in hit["passage"] or "scheduling" in hit["title"].lower()
    assert sum(value["count"] for value in by_year.structuredContent["values"]) >= answer["total"]
    assert "at most 10,000" in error_text(window)
    assert "unknown facet 'colour'" in error_text(facet)


def test_a_missing_index_is_a_tool_error_not_a_crash(tmp_path):
    async def steps(session: ClientSession):
        return await call(session, "search", query="anything")

    message = error_text(over_stdio(str(tmp_path / "none"), steps))
    assert "index" in message.lower()
