"""The MCP tools (searchsvc/mcp/server.py) through the SDK's client in memory, over the fixture
index: what each answers (what a citation needs, a highlighted passage) and the tool errors a
bad argument gets (a message saying what to change, no traceback)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session

from searchsvc.mcp.server import MAX_PER_PAGE, build_server
from searchsvc.service import SearchService
from tests.mcp.support import TOOLS, call, error_text, tool_names


@pytest.fixture(scope="module")
def service(fixture_index):
    with SearchService.open(fixture_index) as opened:
        yield opened


@pytest.fixture(scope="module")
def session_run(service) -> Callable[[Callable[[ClientSession], Awaitable[Any]]], Any]:
    """run(steps): `steps(session)` in a session of the SDK's client with the server."""
    server = build_server(lambda: service)

    def run(steps: Callable[[ClientSession], Awaitable[Any]]) -> Any:
        async def main() -> Any:
            async with create_connected_server_and_client_session(server._mcp_server) as session:
                return await steps(session)

        return anyio.run(main)

    return run


def call_tool(session_run, name: str, **arguments: Any):
    return session_run(lambda session: call(session, name, **arguments))


def test_the_tools_are_listed_read_only_with_bounded_paging(session_run):
    tools = session_run(lambda session: session.list_tools()).tools
    assert {tool.name for tool in tools} == TOOLS
    assert session_run(tool_names) == TOOLS
    for tool in tools:
        assert tool.description and tool.annotations and tool.annotations.readOnlyHint
    search = next(tool for tool in tools if tool.name == "search")
    properties = search.inputSchema["properties"]
    assert {"query", "category", "subject", "author", "year_from", "year_to", "mode"} <= set(
        properties
    )
    assert properties["per_page"]["maximum"] == MAX_PER_PAGE
    lookup = next(tool for tool in tools if tool.name == "lookup")
    assert "not searchable" in (lookup.description or "")  # says what a DOI finds


def test_search_answers_what_a_citation_needs_and_a_highlighted_passage(session_run):
    result = call_tool(session_run, "search", query="learning")
    assert not result.isError
    answer = result.structuredContent
    assert answer["total"] == 2 and answer["page"] == 1 and answer["mode"] == "lexical"
    first = answer["results"][0]
    assert first["rank"] == 1
    assert {"id", "title", "authors", "year", "identifier", "url", "passage"} <= set(first)
    assert first["identifier"] == f"arXiv:{first['id']}"
    assert first["url"].startswith("https://arxiv.org/abs/")
    assert "**learning**" in first["passage"].lower() and "<mark>" not in first["passage"]
    # The same answer as text, for clients that read only that.
    assert '"total": 2' in result.content[0].text


def test_search_filters_are_the_api_facet_filters(session_run):
    by_category = call_tool(session_run, "search", query="learning", category=["cs.DC"])
    assert [hit["id"] for hit in by_category.structuredContent["results"]] == ["2301.00001"]
    by_year = call_tool(session_run, "search", query="learning", year_from=2023, year_to=2023)
    assert [hit["year"] for hit in by_year.structuredContent["results"]] == [2023]
    by_author = call_tool(session_run, "search", author=["Aditya Akella"], sort="newest")
    assert [hit["id"] for hit in by_author.structuredContent["results"]] == [
        "2201.00002",
        "2101.00003",
    ]
    paged = call_tool(session_run, "search", query="learning", per_page=1)
    assert paged.structuredContent["next_page"] == 2
    second = call_tool(session_run, "search", query="learning", per_page=1, page=2)
    assert second.structuredContent["results"][0]["rank"] == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "   "}, "query is empty"),
        ({"query": "learning", "page": 1001, "per_page": 10}, "at most 10,000"),
        ({"query": "learning", "per_page": MAX_PER_PAGE + 1}, "per_page must be an integer"),
        ({"query": "learning", "category": ["cs.DC"], "mode": "psychic"}, "mode"),
        ({"query": "learning", "year_from": 99}, "year_from must be an integer"),
        ({"query": '"unclosed'}, "never closed"),
    ],
)
def test_bad_search_arguments_are_tool_errors_saying_what_to_change(
    session_run, arguments, message
):
    assert message in error_text(call_tool(session_run, "search", **arguments))


def test_facet_values_counts_a_query_matches_and_names_subjects(session_run):
    result = call_tool(session_run, "facet_values", facet="category", query="learning")
    answer = result.structuredContent
    assert answer["total"] == 2
    assert answer["values"][0] == {"value": "cs.LG", "label": "Machine Learning", "count": 2}
    everything = call_tool(session_run, "facet_values", facet="year", limit=2)
    values = everything.structuredContent["values"]
    assert everything.structuredContent["total"] == 5 and len(values) == 2
    assert all(value["count"] >= 1 for value in values)


def test_an_unknown_facet_is_a_tool_error_listing_the_facets(session_run):
    message = error_text(call_tool(session_run, "facet_values", facet="colour"))
    assert "unknown facet 'colour'" in message and "category" in message


@pytest.mark.parametrize(
    "identifier",
    [
        "2301.00001",
        "2301.00001v3",
        "arXiv:2301.00001",
        "https://arxiv.org/abs/2301.00001v2",
        "https://arxiv.org/pdf/2301.00001.pdf",
    ],
)
def test_lookup_finds_a_record_by_its_arxiv_id_in_any_form(session_run, identifier):
    answer = call_tool(session_run, "lookup", identifier=identifier).structuredContent
    assert answer["found"] is True
    assert answer["record"]["id"] == "2301.00001"
    assert answer["record"]["title"] == "Fair Cluster Scheduling for Deep Learning Jobs"


def test_lookup_of_an_unknown_doi_says_what_it_tried_and_why(session_run):
    answer = call_tool(
        session_run, "lookup", identifier="https://doi.org/10.1145/NOPE"
    ).structuredContent
    assert answer["found"] is False
    assert "10.1145/NOPE" in answer["tried_ids"] and "not searchable" in answer["note"]
    assert "identifier is empty" in error_text(call_tool(session_run, "lookup", identifier=" "))


def test_get_record_and_similar(session_run):
    record = call_tool(session_run, "get_record", id="0704.0001").structuredContent
    assert record["authors"] == ["C. Balázs", "E. L. Berger"] and record["year"] == 2007
    assert record["abstract"].startswith("A fully differential")
    similar = call_tool(session_run, "similar", id="2301.00001", limit=2).structuredContent
    assert similar["results"] and all(hit["id"] != "2301.00001" for hit in similar["results"])
    assert {"title", "authors", "year", "identifier", "url"} <= set(similar["results"][0])


def test_an_unknown_record_is_a_tool_error(session_run):
    assert "no record with id 'nope'" in error_text(call_tool(session_run, "get_record", id="nope"))
    assert "no record" in error_text(call_tool(session_run, "similar", id="nope"))


def test_an_unexpected_failure_is_logged_and_answered_without_its_details(caplog):
    def broken() -> SearchService:
        raise RuntimeError("the secret /srv/index/path")

    async def steps() -> Any:
        server = build_server(broken)
        async with create_connected_server_and_client_session(server._mcp_server) as session:
            return await call(session, "search", query="learning")

    message = error_text(anyio.run(steps))
    assert "internal error" in message and "secret" not in message
    assert "the secret /srv/index/path" in caplog.text
