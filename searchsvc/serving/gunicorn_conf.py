"""Gunicorn settings, loaded as a module of the installed package:

    gunicorn --config python:searchsvc.serving.gunicorn_conf --bind HOST:PORT wsgi:app

Environment: SEARCHSVC_WORKERS (default: the CPUs this process may use), SEARCHSVC_THREADS
(default 1), SEARCHSVC_TIMEOUT (seconds, default 30), SEARCHSVC_ACCESS_LOG (default "-",
stdout; empty to turn it off), PROMETHEUS_MULTIPROC_DIR (default: a fresh temporary directory).
`searchsvc serve` runs gunicorn with this config behind nginx (searchsvc/serving/front.py); run
alone, as above, it is for development and tests: nothing shields its sync workers from slow
clients then (docs/guides/deployment.md, "Serving in production").
Each worker opens the index itself on its first request and follows rebuilds on its own; each
runs a candidate writer thread of the task queue, of which one at a time applies the writes.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from searchsvc.serving import limits


def _int_from_env(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# Searching is CPU-bound Python: one single-threaded worker per CPU keeps every core busy
# without workers fighting over the GIL; more concurrent clients wait in the listen backlog.
workers = _int_from_env("SEARCHSVC_WORKERS", _usable_cpus())
threads = _int_from_env("SEARCHSVC_THREADS", 1)
# gunicorn's sync worker, writing each access line once it has accepted its next connection
# (searchsvc/serving/worker.py says why); with SEARCHSVC_THREADS over 1 gunicorn runs gthread
# workers instead. sync workers close the connection after each response, so a client pays a
# TCP connect per request. gthread workers keep connections alive, but they pin a client to the
# worker that accepted it and poll in a thread pool: in benchmarks/bench_http.py they were no
# faster with one client and, with many, answered fewer searches with a longer tail than sync
# workers, which share one queue (the listen backlog). And a gthread worker is not
# restarted when a request runs past `timeout`. Try it: `--worker-class gthread`.
worker_class = "searchsvc.serving.worker.DeferredLogSyncWorker"
timeout = _int_from_env("SEARCHSVC_TIMEOUT", 30)
graceful_timeout = 30
keepalive = 5
backlog = 2048
# Bounded, as nginx bounds them in front (limits.py): with no bound, parsing a request line of
# megabytes holds a worker for seconds to the timeout. A query too long for a URL goes in the
# body of POST /api/v1/search; a longer line is a JSON 414 (worker.py).
limit_request_line = limits.MAX_REQUEST_LINE
limit_request_field_size = limits.MAX_HEADER_LINE
limit_request_fields = limits.MAX_HEADER_FIELDS
accesslog = os.environ.get("SEARCHSVC_ACCESS_LOG", "-") or None
errorlog = "-"
# %(L)s: request time in seconds, for reading latency straight off the log. Behind
# `searchsvc serve` (which sets SEARCHSVC_BEHIND_FRONT=1) gunicorn hears nginx on a unix socket,
# and the client's address is the X-Real-IP header nginx sets.
_client = "%({x-real-ip}i)s" if os.environ.get("SEARCHSVC_BEHIND_FRONT") == "1" else "%(h)s"
access_log_format = _client + ' "%(r)s" %(s)s %(b)s %(L)ss "%(a)s"'
# Who may say, in X-Forwarded-Proto (and gunicorn's other forwarding headers), that a request
# came over https: nobody on a TCP connection, however local (gunicorn trusts 127.0.0.1 by
# default, which is any process or user of the machine), so that only the front is believed.
# `searchsvc serve` connects nginx over a unix socket in its private run directory, and gunicorn
# always trusts a unix socket's peer; nginx sets the header itself, from its own connection.
# FORWARDED_ALLOW_IPS, gunicorn's own variable, names a proxy of your own in front of gunicorn
# alone. Links the app makes for others (the feeds') do not depend on it: PUBLIC_URL.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "")
# No `gunicornc` control socket: its default path is shared by every gunicorn of the user.
control_socket_disable = True
# The worker heartbeat file on tmpfs when there is one (Docker's /tmp may be an overlay disk).
if Path("/dev/shm").is_dir():
    worker_tmp_dir = "/dev/shm"

# Prometheus metrics from every worker: each writes its samples to files in this directory and
# /metrics merges them. It must be in the environment before a worker imports prometheus_client.
_created_metrics_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _created_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="searchsvc-metrics-")
METRICS_DIR = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])


def on_starting(server) -> None:
    """Check the settings, then start from empty metrics (files left by an earlier run would be
    counted again)."""
    _exit_on_bad_settings()
    METRICS_DIR.mkdir(parents=True, exist_ok=True)
    for stale in METRICS_DIR.glob("*.db"):
        stale.unlink()


def _exit_on_bad_settings() -> None:
    # Checked once in the master: each worker would otherwise fail to boot with a traceback of
    # its own (an unknown index location, a malformed SEARCHSVC_* value) before gunicorn gives up.
    from searchsvc import config
    from searchsvc.domain.errors import SearchsvcError

    try:
        config.load()
    except SearchsvcError as exc:
        sys.exit(f"error: {exc.message}")
    except ValueError as exc:
        sys.exit(f"error: {exc}")


def post_worker_init(worker) -> None:
    """Open the index and fill its caches before the worker takes its first request, and stand
    as a candidate writer of the task queue (one worker's thread is elected; when that worker
    dies, another takes over), unless SEARCHSVC_WRITER=off."""
    from searchsvc.domain.errors import SearchsvcError
    from searchsvc.extension import get_service, start_writer

    app = getattr(worker, "wsgi", None)
    if app is None or not hasattr(app, "app_context"):
        return
    start_writer(app)
    try:
        with app.app_context():
            get_service().warm_up()
    except SearchsvcError as exc:
        worker.log.warning("index not warmed up: %s", exc.message)
    except Exception:  # a worker must boot whatever the index holds
        # An index the service cannot read through (one from before manifests, damaged in a
        # way only a search meets) must not stop the worker: requests answer for themselves.
        worker.log.exception("index not warmed up")


def child_exit(server, worker) -> None:
    """Drop the live-gauge samples of a worker that exited (counters stay counted)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    if _created_metrics_dir:
        shutil.rmtree(METRICS_DIR, ignore_errors=True)
