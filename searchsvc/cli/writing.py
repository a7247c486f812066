"""`searchsvc writer` (the task queue's writer on its own) and `searchsvc keys` (API keys)."""

from __future__ import annotations

import json
import logging
import signal
import threading

import click

from searchsvc import config
from searchsvc.cli.common import index_option, reports_errors, tasks_db_option
from searchsvc.service import SearchService
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import SCOPES, KeyStore


@click.command()
@index_option
@tasks_db_option
@reports_errors
def writer(index: str, tasks_db: str) -> None:
    """Apply queued writes to the index until stopped (SIGTERM or Ctrl-C).

    gunicorn workers run a writer of their own unless SEARCHSVC_WRITER=off; run this one for a
    deployment that keeps writing out of the web workers. Several may run: one writes, the
    others stand by and take over within a second when it stops.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    queue = TaskQueue(queue_path(index, tasks_db))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    def report(batch: dict) -> None:
        click.echo(
            f"applied {batch['tasks']} tasks: {batch['added']} added, {batch['replaced']} "
            f"replaced, {batch['deleted']} deleted in {batch['seconds']} s",
            err=True,
        )

    # The service's settings (SEARCHSVC_WRITER_BATCH_BYTES, SEARCHSVC_TASK_RETENTION_DAYS).
    settings = config.load({"INDEX": index})
    with SearchService.open(index) as service:
        click.echo(f"writer for {service.location} (queue {queue.path})", err=True)
        service.task_writer(
            queue,
            on_batch=report,
            batch_bytes=settings["WRITER_BATCH_BYTES"],
            retention_days=settings["TASK_RETENTION_DAYS"],
        ).serve(stop)


@click.group()
def keys() -> None:
    """Create, list and revoke API keys (stored as digests in the task queue's database)."""


def _store(index: str, tasks_db: str) -> KeyStore:
    return KeyStore(TaskQueue(queue_path(index, tasks_db)))


@keys.command("create")
@click.argument("name")
@click.option(
    "--scope",
    "scopes",
    type=click.Choice(SCOPES),
    multiple=True,
    default=("write",),
    show_default=True,
    help="What the key may do (repeat for several): read, write, admin (everything).",
)
@index_option
@tasks_db_option
@reports_errors
def create_key(name: str, scopes: tuple[str, ...], index: str, tasks_db: str) -> None:
    """Create a key named NAME and print it (once: only its digest is kept)."""
    key, token = _store(index, tasks_db).create(name, scopes)
    click.echo(token)
    click.echo(
        f"key {key.id} ({', '.join(key.scopes)}): keep it now, it is not shown again", err=True
    )


@keys.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the keys as JSON.")
@index_option
@tasks_db_option
@reports_errors
def list_keys(as_json: bool, index: str, tasks_db: str) -> None:
    """List the keys (never their secrets)."""
    found = _store(index, tasks_db).keys()
    if as_json:
        click.echo(json.dumps([key.to_dict() for key in found], indent=2))
        return
    for key in found:
        state = f"revoked {key.revoked_at}" if key.revoked_at else "active"
        click.echo(f"{key.id}  {key.name}  {','.join(key.scopes)}  {key.created_at}  {state}")


@keys.command("revoke")
@click.argument("key_id")
@index_option
@tasks_db_option
@reports_errors
def revoke_key(key_id: str, index: str, tasks_db: str) -> None:
    """Revoke the key with id KEY_ID: it stops working at once."""
    key = _store(index, tasks_db).revoke(key_id)
    click.echo(f"revoked {key.id} ({key.name})")


COMMANDS = [writer, keys]
