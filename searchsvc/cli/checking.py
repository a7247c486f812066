"""`searchsvc check`: verify an index and say what is wrong with it."""

from __future__ import annotations

import json
import sys

import click

from searchsvc.cli.common import index_option, reports_errors
from searchsvc.domain.index_reports import CheckedPart
from searchsvc.service import SearchService


@click.command()
@index_option
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@reports_errors
def check(index: str, as_json: bool) -> None:
    """Verify the index; exit status 1 when any part of it is damaged.

    For a Whoosh index, each generation (the live one, then the one kept to fall back on): its
    format version, every file against the sizes and checksums its manifest lists (all read
    again), and that Whoosh reads it. A SolrCloud collection's files are Solr's own: it is
    checked only for answering a search.
    """
    with SearchService.open(index) as service:
        parts = service.check()
        location = service.location
    if as_json:
        document = {
            "location": location,
            "ok": all(part.ok for part in parts),
            "parts": [_as_dict(part) for part in parts],
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        click.echo("\n".join(report_lines(parts)))
    if not all(part.ok for part in parts):
        sys.exit(1)


def report_lines(parts: tuple[CheckedPart, ...]) -> list[str]:
    lines = []
    for part in parts:
        lines.append(f"{part.role} {part.name}: {'ok' if part.ok else 'DAMAGED'}")
        lines.extend(f"  {item}" for item in part.damage)
        lines.extend(f"  ({note})" for note in part.notes)
    live_ok = all(part.ok for part in parts if part.role == "live")
    if not live_ok:
        fallback = any(part.ok for part in parts if part.role == "previous")
        lines.append(
            "the service answers from the previous generation until the index is rebuilt"
            if fallback
            else "nothing can be served: rebuild the index (`searchsvc index SOURCE...`)"
        )
    elif not all(part.ok for part in parts):
        lines.append("the live index is sound; the previous one is no use to fall back on")
    return lines


def _as_dict(part: CheckedPart) -> dict:
    return {
        "name": part.name,
        "role": part.role,
        "ok": part.ok,
        "damage": [
            {"file": item.file, "kind": item.kind, "detail": item.detail} for item in part.damage
        ],
        "notes": list(part.notes),
    }


COMMANDS = [check]
