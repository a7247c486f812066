"""What the MCP tests share: the tools' names, and a call through a session of the SDK's client."""

from __future__ import annotations

from typing import Any

from mcp import ClientSession
from mcp.types import CallToolResult

TOOLS = {"search", "get_record", "lookup", "similar", "facet_values"}


async def tool_names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def call(session: ClientSession, name: str, **arguments: Any) -> CallToolResult:
    return await session.call_tool(name, arguments)


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def error_text(result: CallToolResult) -> str:
    """The message of a tool error: the result says it is one, and it carries no traceback."""
    assert result.isError, result
    text = text_of(result)
    assert "Traceback" not in text and 'File "' not in text, text
    return text
