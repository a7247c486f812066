"""`searchsvc search`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape
from typing import Any

import click

from searchsvc.cli.common import index_option, reports_errors
from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.facets import FACETS
from searchsvc.domain.modes import MODES
from searchsvc.domain.query import (
    DEFAULT_PER_PAGE,
    SORTS,
    FacetValue,
    SearchResult,
    meaning_breakdown,
    records_count,
)
from searchsvc.params import check_year_order, search_request_from
from searchsvc.service import SearchService

_MARK = re.compile(r"<mark>(.*?)</mark>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def _facet_filters(command: Callable[..., Any]) -> Callable[..., Any]:
    """A repeatable `--<facet>` option per facet (facets.py)."""
    for facet in reversed(FACETS):
        command = click.option(
            f"--{facet.name}",
            facet.name,
            multiple=True,
            metavar=facet.name.upper(),
            help=f"{facet.filter_help} (repeatable: any of them).",
        )(command)
    return command


@click.command()
@click.argument("query", required=False, default="")
@index_option
@_facet_filters
@click.option("--from", "year_from", metavar="YEAR", help="Only records from this year on.")
@click.option("--to", "year_to", metavar="YEAR", help="Only records up to this year.")
@click.option(
    "--sort", type=click.Choice(SORTS), help="Default: relevance with a query, newest without."
)
# Numbers are checked by the translator, with the API's messages.
@click.option("--page", default="1", metavar="INTEGER", show_default=True)
@click.option("--per-page", default=str(DEFAULT_PER_PAGE), metavar="INTEGER", show_default=True)
@click.option(
    "--crosslists/--no-crosslists",
    default=True,
    help="With --no-crosslists, --category/--subject and their counts see each record's "
    "primary category only.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help="lexical: the query's words (ranked by DFR); semantic: the records nearest its meaning; "
    "hybrid: both ranked together. Default: hybrid where the index has vectors.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the SearchResult as JSON.")
@reports_errors
def search(
    query: str,
    index: str,
    year_from: str | None,
    year_to: str | None,
    sort: str | None,
    page: str,
    per_page: str,
    crosslists: bool,
    mode: str | None,
    as_json: bool,
    **filters: tuple[str, ...],
) -> None:
    """Search the index: ranked hits with highlighted words, and facet counts (subjects by
    name beside their code).

    QUERY uses the query language: words, "phrases", AND/OR/NOT, (groups), title:, abstract:,
    author:, category:, subject:, year:2020..2023, sched*, schedular~. Quote it for the shell,
    so that its own quotes reach the query: searchsvc search '"learned caches"'.

    A subject filter takes a category, an archive or a group: --category cs is every cs.*
    record, --subject grp_physics every physics one.
    """
    # The parameters as the API would receive them, through the same translator.
    params = {
        "q": query,
        **{name: list(values) for name, values in filters.items()},
        "year_from": year_from,
        "year_to": year_to,
        "sort": sort,
        "page": page,
        "per_page": per_page,
        "crosslists": "include" if crosslists else "exclude",
        "mode": mode,
    }
    try:
        request = check_year_order(search_request_from(params))
    except InvalidRequest as exc:
        raise _for_the_command_line(exc) from exc
    with SearchService.open(index) as service:
        result = service.search_request(request)
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(render(result), nl=False)


# The translator names the API's parameters; the command line has options.
_OPTION_OF = {"year_from": "--from", "year_to": "--to", "per_page": "--per-page", "q": "QUERY"}


def facet_value_text(value: FacetValue) -> str:
    """A facet value for the terminal: a subject's name beside its code, then the count."""
    code = click.style(value.value, underline=value.selected)
    named = f"{code} {value.label}" if value.label and value.label != value.value else code
    return f"{named} ({value.count})"


def _for_the_command_line(error: InvalidRequest) -> InvalidRequest:
    """The translator's error, naming the option rather than the API parameter."""
    parameter = str(error.details.get("parameter") or "")
    option = _OPTION_OF.get(parameter, f"--{parameter}")
    message = error.message.replace(f"invalid parameter {parameter}:", f"invalid {option}:", 1)
    return InvalidRequest(message, **error.details)


def render(result: SearchResult) -> str:
    """The result as terminal text: matched words in bold yellow, facets at the end."""
    breakdown = meaning_breakdown(result)
    counted = records_count(result.total) + (f" ({breakdown})" if breakdown else "")
    lines = [
        click.style(
            f"{counted} · page {result.page} of {result.pages} · "
            f"{result.mode} · {result.took_ms:.0f} ms",
            bold=True,
        )
    ]
    if result.suggestion:
        lines.append(f"Did you mean: {click.style(result.suggestion, fg='cyan')}?")
    start = (result.page - 1) * result.per_page
    for number, hit in enumerate(result.hits, start + 1):
        record = hit.record
        title = terminal_text(hit.highlights.get("title") or "") or record.title
        lines.append("")
        lines.append(f"{number:>3}. {click.style(title, bold=True)}")
        details = [record.id, str(record.year or ""), *list(record.categories[:3])]
        if hit.score is not None:
            details.append(f"score {hit.score:.2f}")
        lines.append("     " + " · ".join(d for d in details if d))
        if record.authors:
            lines.append(
                "     " + ", ".join(record.authors[:6]) + (" …" if len(record.authors) > 6 else "")
            )
        abstract = terminal_text(hit.highlights.get("abstract") or "")
        if abstract:
            lines.append("     " + abstract)
    if any(result.facets.values()):
        lines.append("")
    for facet, values in result.facets.items():
        if values:
            # Not commas: subject names have their own ("Distributed, Parallel, and ...").
            shown = " · ".join(facet_value_text(v) for v in values)
            lines.append(f"{click.style(facet, bold=True)}: {shown}")
    return "\n".join(lines) + "\n"


def terminal_text(marked_html: str) -> str:
    """Highlight HTML (escaped text and <mark> only) as styled terminal text."""
    styled = _MARK.sub(lambda m: click.style(m.group(1), fg="yellow", bold=True), marked_html)
    return unescape(_TAG.sub("", styled))


COMMANDS: list = [search]
