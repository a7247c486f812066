"""The MCP server (Model Context Protocol, issue 35): searchsvc's read side as tools for
assistants, over stdio (`searchsvc mcp`) and over streamable HTTP at /mcp of the service.

`server.py` builds the tools on a SearchService with the official SDK (PyPI `mcp`, the
`searchsvc[mcp]` extra); `http.py` answers /mcp inside the Flask app, behind the read key.
Nothing here is imported unless the SDK is installed and the server is asked for.
"""
