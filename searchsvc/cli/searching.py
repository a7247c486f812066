"""`searchsvc search`."""

from __future__ import annotations

import json
import re
from html import unescape

import click

from searchsvc.cli.common import index_dir_option, reports_errors
from searchsvc.query import DEFAULT_PER_PAGE, SORTS, SearchRequest, SearchResult

_MARK = re.compile(r"<mark>(.*?)</mark>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


@click.command()
@click.argument("query", required=False, default="")
@index_dir_option
@click.option(
    "--author", "authors", multiple=True, help="Only records by this author (repeatable)."
)
@click.option("--category", "categories", multiple=True, help="Only this category (repeatable).")
@click.option("--year", "years", type=int, multiple=True, help="Only this year (repeatable).")
@click.option("--from", "year_from", type=int, help="Only records from this year on.")
@click.option("--to", "year_to", type=int, help="Only records up to this year.")
@click.option(
    "--sort", type=click.Choice(SORTS), help="Default: relevance with a query, newest without."
)
@click.option("--page", type=int, default=1, show_default=True)
@click.option("--per-page", type=int, default=DEFAULT_PER_PAGE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the SearchResult as JSON.")
@reports_errors
def search(
    query: str,
    index_dir: str,
    authors: tuple[str, ...],
    categories: tuple[str, ...],
    years: tuple[int, ...],
    year_from: int | None,
    year_to: int | None,
    sort: str | None,
    page: int,
    per_page: int,
    as_json: bool,
) -> None:
    """Search the index: ranked hits with highlighted words, and facet counts.

    QUERY uses the query language: words, "phrases", AND/OR/NOT, (groups), title:, abstract:,
    author:, category:, year:2020..2023, sched*, schedular~.
    """
    from searchsvc.backends.whoosh.backend import WhooshBackend

    request = SearchRequest(
        q=query,
        authors=authors,
        categories=categories,
        years=years,
        year_from=year_from,
        year_to=year_to,
        sort=sort,
        page=page,
        per_page=per_page,
    )
    with WhooshBackend.open(index_dir) as backend:
        result = backend.search(request)
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(render(result), nl=False)


def render(result: SearchResult) -> str:
    """The result as terminal text: matched words in bold yellow, facets at the end."""
    lines = [
        click.style(
            f"{result.total} records · page {result.page} of {result.pages} · "
            f"{result.took_ms:.0f} ms",
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
            shown = ", ".join(
                f"{click.style(v.value, underline=v.selected)} ({v.count})" for v in values
            )
            lines.append(f"{click.style(facet, bold=True)}: {shown}")
    return "\n".join(lines) + "\n"


def terminal_text(marked_html: str) -> str:
    """Highlight HTML (escaped text and <mark> only) as styled terminal text."""
    styled = _MARK.sub(lambda m: click.style(m.group(1), fg="yellow", bold=True), marked_html)
    return unescape(_TAG.sub("", styled))


COMMANDS: list = [search]
