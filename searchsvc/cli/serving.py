"""`searchsvc serve`: the service as deployed, nginx in front of gunicorn's workers (or, where
nginx is missing, gunicorn alone with a warning)."""

from __future__ import annotations

import os
import sys

import click

from searchsvc import config
from searchsvc.cli.common import index_option, reports_errors, tasks_db_option
from searchsvc.domain.errors import SearchsvcError

# Run as a program: the package never imports searchsvc/serving/ (serving/serve.py says why).
SERVE_MODULE = "searchsvc.serving.serve"
# gunicorn's worker timeout when SEARCHSVC_TIMEOUT is not set (serving/gunicorn_conf.py).
DEFAULT_WORKER_TIMEOUT = 30
# --front: the choices of the serving program (serving/serve.py, FRONTS).
FRONTS = ("auto", "nginx", "none")
# nginx's per-address limits: the setting, and the option of the serving program that takes it.
FRONT_LIMITS = {
    "FRONT_CONNECTIONS_PER_ADDRESS": "--connections-per-address",
    "FRONT_REQUESTS_PER_SECOND": "--requests-per-second",
}


@click.command()
@click.option(
    "--bind",
    default="127.0.0.1:8000",
    show_default=True,
    metavar="HOST:PORT",
    help="Where nginx (or gunicorn alone) listens (HOST 0.0.0.0 to listen beyond this machine).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    envvar="SEARCHSVC_WORKERS",
    show_envvar=True,
    help="gunicorn workers (default: the CPUs this process may use).",
)
@click.option(
    "--front",
    type=click.Choice(FRONTS),
    default="auto",
    show_default=True,
    envvar="SEARCHSVC_FRONT",
    show_envvar=True,
    help="nginx in front of gunicorn: auto (when nginx is found, else gunicorn alone with a "
    "warning), nginx (fail without it) or none (gunicorn alone).",
)
@index_option
@tasks_db_option
@reports_errors
def serve(bind: str, workers: int | None, front: str, index: str, tasks_db: str) -> None:
    """Serve the API and the web page until stopped (Ctrl-C or SIGTERM).

    nginx reads each request whole, within bounds and timeouts, and passes it to gunicorn's
    sync workers on a private unix socket, so that no slow or oversized client holds a worker
    (docs/guides/deployment.md, "Serving in production"). nginx limits each client address to
    SEARCHSVC_FRONT_CONNECTIONS_PER_ADDRESS requests under way (default 64) and
    SEARCHSVC_FRONT_REQUESTS_PER_SECOND requests a second (default 100); 0 for no limit. Needs
    nginx (Debian: apt-get install nginx; another one: SEARCHSVC_NGINX=PATH); without it,
    `--front auto` serves with gunicorn alone on the address and says so in one warning line.
    Other settings come from SEARCHSVC_* variables, as for gunicorn.
    """
    host, port = _address(bind)
    try:
        settings = config.load({"INDEX": index})
    except ValueError as exc:  # a malformed SEARCHSVC_* value
        raise SearchsvcError(str(exc)) from None
    env = {**os.environ, "SEARCHSVC_INDEX": index}
    if workers is not None:
        env["SEARCHSVC_WORKERS"] = str(workers)
    if tasks_db:
        env["SEARCHSVC_TASKS_DB"] = tasks_db
    command = [sys.executable, "-m", SERVE_MODULE, "--host", host, "--port", str(port)]
    command += ["--max-body", str(settings["MAX_CONTENT_LENGTH"])]
    command += ["--max-write-body", str(settings["MAX_WRITE_CONTENT_LENGTH"])]
    command += ["--worker-timeout", str(_worker_timeout())]
    command += ["--front", front]
    for name, option in FRONT_LIMITS.items():
        command += [option, str(_not_negative(name, settings[name]))]
    # Replaced, not a child: signals (Ctrl-C, `docker stop`) reach the process that runs nginx
    # and gunicorn, and it keeps this process's id.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, env)


def _worker_timeout() -> int:
    """gunicorn's worker timeout, as gunicorn_conf.py reads it: nginx waits a little longer."""
    text = os.environ.get("SEARCHSVC_TIMEOUT", "").strip()
    try:
        return int(text) if text else DEFAULT_WORKER_TIMEOUT
    except ValueError:
        raise SearchsvcError(f"SEARCHSVC_TIMEOUT={text!r}: expected whole seconds") from None


def _not_negative(name: str, value: int) -> int:
    if value < 0:
        raise SearchsvcError(f"{config.ENV_PREFIX}{name}={value}: expected 0 (no limit) or more")
    return value


def _address(bind: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) -> (host, port)."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"{bind!r}: expected HOST:PORT", param_hint="--bind")
    return host, int(port)


COMMANDS = [serve]
