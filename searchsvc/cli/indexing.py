"""`searchsvc index`, `stats` and `export`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

import click

from searchsvc.cli.common import ByteSize, index_option, reports_errors, tasks_db_option
from searchsvc.domain.query import IndexStats
from searchsvc.indexing.indexer import BuildSummary, build_index, update_index
from searchsvc.service import SearchService
from searchsvc.sources import FORMATS
from searchsvc.tasks import TaskQueue, queue_path_if_any

# Below this a build could not hold one segment of the smallest size in each process.
MIN_MEMORY_BUDGET = 256 * 1024**2
# Skipped records listed one per line after a build; the rest are only counted.
MAX_SKIPPED_SHOWN = 20


@click.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@index_option
@click.option(
    "--format",
    "format_",
    type=click.Choice(FORMATS),
    default=None,
    help="Input format of every SOURCE (default: detected per file).",
)
@click.option("--update", is_flag=True, help="Upsert into the live index by id, not rebuild.")
@click.option(
    "--replace",
    is_flag=True,
    help="Rebuild from the sources alone: without the records written through the API, and "
    "with those it deleted (by default the first are kept, the second left out).",
)
@tasks_db_option
@click.option(
    "--procs",
    type=click.IntRange(min=1),
    default=None,
    help="Writer processes of a build (default: 1 for small inputs, 2 for large ones).",
)
@click.option(
    "--memory-budget",
    type=ByteSize(minimum=MIN_MEMORY_BUDGET),
    default=None,
    metavar="SIZE",
    help="Memory a build's processes may use at once, summed, e.g. 2G or 800M (default: "
    "2G). Segments are sized to it, so a larger corpus takes longer, not more memory "
    "(Whoosh indexes). The records read are kept in a file in $TMPDIR meanwhile.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: only when stderr is a terminal).",
)
@click.option(
    "--vectors/--no-vectors",
    default=None,
    help="Embed every record for hybrid and semantic search (default: when the embedding "
    "model is installed). Updates of an index with vectors always embed what they add.",
)
@reports_errors
def index(
    sources: tuple[Path, ...],
    index: str,
    format_: str | None,
    update: bool,
    replace: bool,
    tasks_db: str,
    procs: int | None,
    memory_budget: int | None,
    progress: bool | None,
    vectors: bool | None,
) -> None:
    """Build the index from SOURCE files or directories (seed pages, arXiv JSON, JSON lines).

    The new index is written beside the live one and swapped in when complete. Records written
    through the API are kept (they replace records of the sources with the same id), and ids
    deleted through the API are left out, unless --replace is given; writes queued meanwhile
    are applied after the swap.

    With --update, the records are added to the live index through the task queue, in order
    with the API's writes, replacing those with the same id (the index is created if there is
    none).
    """
    if update and replace:
        raise click.UsageError("--replace is for a rebuild, not --update")
    if update and memory_budget is not None:
        raise click.UsageError("--memory-budget is for a rebuild, not --update")
    if update and vectors is not None:
        raise click.UsageError(
            "--vectors/--no-vectors are for a rebuild: an update follows the index"
        )
    # An engine without a directory (Solr) has a queue only when --tasks-db names one. Without
    # it nothing can have been written through the API: a build needs no queue, and an update
    # is written to the engine at once (its commit is atomic as the writer's would be).
    path = queue_path_if_any(index, tasks_db)
    if update:
        summary = update_index(
            sources,
            index,
            format=format_,
            progress=progress,
            queue=TaskQueue(path) if path is not None else None,
        )
    else:
        # No queue file: nothing was ever written through the API, and none is made for a build.
        queue = TaskQueue(path) if path is not None and path.exists() else None
        summary = build_index(
            sources,
            index,
            format=format_,
            progress=progress,
            procs=procs,
            queue=queue,
            replace=replace,
            vectors=vectors,
            memory_budget=memory_budget,
        )
    click.echo(summary_line(summary, index))
    for line in skipped_lines(summary):
        click.echo(line, err=True)


def summary_line(summary: BuildSummary, index: str) -> str:
    """`read 36, indexed 33, merged 3, skipped 0 in 0.4 s (90 records/s) -> index/`."""
    replaced = f" ({summary.replaced} replaced)" if summary.replaced else ""
    kept = f" (and {summary.kept_written} written through the API)" if summary.kept_written else ""
    if summary.left_out_deleted:
        kept += f" ({summary.left_out_deleted} deleted through the API left out)"
    return (
        f"read {summary.read}, indexed {summary.indexed}{replaced}{kept}, "
        f"merged {summary.merged}, "
        f"skipped {summary.skipped_count} in {summary.seconds:.1f} s "
        f"({summary.records_per_second:.0f} records/s) -> {_shown(index)}"
    )


def skipped_lines(summary: BuildSummary) -> list[str]:
    """`path:line: reason` for the first skipped records, then how many more there were."""
    lines = [f"{s.path}:{s.line}: {s.reason}" for s in summary.skipped[:MAX_SKIPPED_SHOWN]]
    hidden = summary.skipped_count - len(lines)
    if hidden > 0:
        lines.append(f"... and {hidden} more skipped")
    return lines


@click.command()
@index_option
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True)
@reports_errors
def stats(index: str, as_json: bool, top: int) -> None:
    """Document count, the most frequent authors, years, categories and subjects (named), and
    build time."""
    with SearchService.open(index) as service:
        figures = service.stats(top=top)
    if as_json:
        # The location too, which the API's form leaves out: here it is the user's own.
        data = {**figures.to_dict(), "index_dir": figures.index_dir}
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        click.echo("\n".join(stats_lines(figures)))


def stats_lines(figures: IndexStats) -> list[str]:
    built = figures.built_at.isoformat(timespec="seconds") if figures.built_at else "unknown"
    lines = [
        f"index      {figures.index_dir}",
        f"documents  {figures.documents}",
        f"built at   {built}",
        f"version    {figures.version}",
        f"size       {figures.size_bytes / 1024 / 1024:.1f} MiB",
    ]
    for facet, values in figures.facets.items():
        lines.append(f"{facet} ({figures.cardinalities[facet]} distinct):")
        width = len(str(values[0].count)) if values else 1
        lines.extend(
            f"  {value.count:>{width}}  {value.value}"
            + (f"  {value.label}" if value.label and value.label != value.value else "")
            for value in values
        )
    return lines


@click.command()
@index_option
@click.option(
    "--output",
    "-o",
    type=click.File("w", encoding="utf-8", lazy=True),
    default="-",
    help="File to write (default: stdout).",
)
@reports_errors
def export(index: str, output: IO[str]) -> None:
    """Every indexed record as JSON lines, the input `searchsvc index --format jsonl` reads."""
    with SearchService.open(index) as service:
        for record in service.records():
            output.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")


def _shown(index: str) -> str:
    """A location as the summary shows it: a directory with a trailing slash, a URL as it is."""
    return index if "://" in index else index.rstrip("/") + "/"


COMMANDS: list[click.Command] = [index, stats, export]
