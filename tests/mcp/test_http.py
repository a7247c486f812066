"""MCP over streamable HTTP at /mcp of the service (searchsvc/mcp/mounted.py): the read key as
`Authorization: Bearer` always, answers of the SDK's stateless JSON transport; in the app, and
under a real gunicorn spoken to by the SDK's own client."""

from __future__ import annotations

import sys

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from searchsvc.app import create_app
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.mcp.support import TOOLS, call, error_text, tool_names
from tests.serving.test_gunicorn import gunicorn
from tests.support import build_index

# What an MCP client sends with each message.
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def bearer(token: str) -> dict[str, str]:
    return {**MCP_HEADERS, "Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return build_index(tmp_path_factory.mktemp("mcp-http") / "index")


@pytest.fixture(scope="module")
def keys(index) -> dict[str, str]:
    store = KeyStore(TaskQueue(queue_path(index)))
    return {scope: store.create(f"mcp-{scope}", (scope,))[1] for scope in ("read", "write")}


@pytest.fixture(scope="module", params=[False, True], ids=["open-reads", "closed-reads"])
def app_client(request, index):
    app = create_app({"INDEX": index, "TESTING": True, "REQUIRE_KEY_FOR_READS": request.param})
    return app.test_client()


def test_mcp_needs_a_read_key_as_bearer_whatever_the_reads_setting(app_client, keys):
    anonymous = app_client.post("/mcp", json=LIST_TOOLS, headers=MCP_HEADERS)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith('Bearer realm="searchsvc"')
    assert "read scope" in anonymous.get_json()["error"]["message"]
    unknown = app_client.post("/mcp", json=LIST_TOOLS, headers=bearer("ssk_nonsense"))
    assert unknown.status_code == 401
    assert "unknown or revoked" in unknown.get_json()["error"]["message"]
    assert (
        app_client.post("/mcp", json=LIST_TOOLS, headers=bearer(keys["write"])).status_code == 403
    )


def test_a_read_key_lists_the_tools_in_one_json_answer(app_client, keys):
    answer = app_client.post("/mcp", json=LIST_TOOLS, headers=bearer(keys["read"]))
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    assert {tool["name"] for tool in answer.get_json()["result"]["tools"]} == TOOLS
    # An answer to a key is the key holder's only, and not kept.
    assert answer.headers["Cache-Control"] == "no-store"
    assert "Authorization" in answer.headers["Vary"]


def test_a_tool_call_answers_in_json(app_client, keys):
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "learning", "per_page": 1}},
    }
    answer = app_client.post("/mcp", json=message, headers=bearer(keys["read"])).get_json()
    assert answer["result"]["isError"] is False
    assert answer["result"]["structuredContent"]["total"] == 2


def test_no_event_stream_and_no_session_to_end(app_client, keys):
    # Stateless: the optional GET stream and a session's DELETE are not offered (405), which
    # MCP clients take as such.
    for method in ("GET", "DELETE"):
        answer = app_client.open("/mcp", method=method, headers=bearer(keys["read"]))
        assert answer.status_code == 405, method


def test_without_the_sdk_the_app_has_no_mcp_route_and_the_command_says_what_to_install(
    monkeypatch, index, runner
):
    # As where the `mcp` extra is not installed: importing the SDK fails.
    for name in [name for name in sys.modules if name.split(".")[0] == "mcp"]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in [name for name in sys.modules if name.startswith("searchsvc.mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    app = create_app({"INDEX": index, "TESTING": True})
    assert "mcp.endpoint" not in {rule.endpoint for rule in app.url_map.iter_rules()}
    result = runner("mcp", "--index", index)
    assert result.exit_code == 1 and "pip install 'searchsvc[mcp]'" in result.output


@pytest.mark.slow
def test_the_sdk_client_searches_through_mcp_under_gunicorn(tmp_path):
    with gunicorn(tmp_path) as (server, _):
        store = KeyStore(TaskQueue(queue_path(server.index_dir)))
        reader = store.create("mcp-reader", ("read",))[1]
        url = f"{server.base_url}/mcp"

        async def main():
            headers = {"Authorization": f"Bearer {reader}"}
            with anyio.fail_after(60):
                async with (
                    httpx.AsyncClient(headers=headers, timeout=30) as http,
                    streamable_http_client(url, http_client=http) as (read, write, _),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    names = await tool_names(session)
                    found = await call(session, "search", query="learning", category=["cs.DC"])
                    facet = await call(session, "facet_values", facet="colour")
                    return names, found, facet

        names, found, facet = anyio.run(main)
        assert names == TOOLS
        hits = found.structuredContent["results"]
        assert [hit["id"] for hit in hits] == ["2301.00001"]
        assert hits[0]["url"] == "https://arxiv.org/abs/2301.00001"
        assert "**" in hits[0]["passage"]
        assert "unknown facet" in error_text(facet)
        # Without the key, the same request is refused.
        refused = httpx.post(url, json=LIST_TOOLS, headers=MCP_HEADERS, timeout=10)
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
