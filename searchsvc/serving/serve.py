"""`searchsvc serve`: gunicorn's workers behind nginx, started, watched and stopped together.

The command (searchsvc/cli/serving.py) checks its options and the settings, then replaces
itself with this module run as a program, `python -m searchsvc.serving.serve --port ...`: the
package never imports searchsvc/serving/ (tests/test_architecture.py).

gunicorn listens on a unix socket in a private run directory, which only nginx reaches; nginx
listens on the public address (front.py writes its config there). Both run in the foreground
as children of this process: SIGTERM or SIGINT stops both (nginx first, so that no request is
taken that gunicorn would not answer), and when one of them dies the other is stopped too and
the exit status is 1.

`--front auto` (the default) runs nginx when it is found and otherwise gunicorn alone on the
public address, saying so in one warning line that names the command which installs nginx;
`--front nginx` requires it (today's deployment), `--front none` never runs it. An explicit
SEARCHSVC_NGINX is a request for nginx: when it names nothing, serving fails in auto too.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import shutil
import signal
import socket as socketlib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from searchsvc.domain.errors import SearchsvcError
from searchsvc.serving.front import SOCKET_NAME, Front, write_front

GUNICORN_CONFIG = "python:searchsvc.serving.gunicorn_conf"
# The app from the installed package, so that `searchsvc serve` runs from any directory.
WSGI_APP = "searchsvc.app:create_app()"
# Where Debian puts nginx, which an unprivileged user's PATH leaves out (SEARCHSVC_SBIN replaces
# it: the tests hide an installed nginx with it).
SBIN = "/usr/sbin:/usr/local/sbin:/sbin"
NGINX_MISSING = (
    "nginx not found: `searchsvc serve` runs it in front of gunicorn "
    "(Debian: apt-get install nginx)"
)
FRONTS = ("auto", "nginx", "none")
# One line, when `--front auto` finds no nginx: what is lost, and the command that adds it.
NO_FRONT_WARNING = (
    "warning: nginx not found: serving with gunicorn alone, without the front's limits; "
    "sudo apt-get install nginx (Debian) or brew install nginx (macOS) adds it"
)
STARTUP_SECONDS = 60
# How long each may take to stop before it is killed: nginx finishes the requests under way
# (worker_shutdown_timeout), gunicorn's workers theirs (its graceful_timeout, 30 s).
STOP_SECONDS = {"nginx": 15.0, "gunicorn": 35.0}
POLL_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


class ServeError(SearchsvcError):
    """The front or the workers could not be started, or one of them stopped."""

    code = "serve_error"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="searchsvc serve", description=__doc__)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-body", type=int, required=True)
    parser.add_argument("--max-write-body", type=int, required=True)
    parser.add_argument("--worker-timeout", type=int, required=True)
    # Per client address (0 for no limit): connections with a request under way, requests a
    # second.
    parser.add_argument("--connections-per-address", type=_not_negative, required=True)
    parser.add_argument("--requests-per-second", type=_not_negative, required=True)
    parser.add_argument("--front", choices=FRONTS, default="auto")
    args = parser.parse_args(argv)
    front = Front(
        args.host,
        args.port,
        args.max_body,
        args.max_write_body,
        args.worker_timeout,
        connections_per_address=args.connections_per_address,
        requests_per_second=args.requests_per_second,
    )
    say = functools.partial(print, file=sys.stderr, flush=True)
    try:
        sys.exit(serve(front, nginx=choose_nginx(args.front, say), say=say))
    except ServeError as exc:
        say(f"error: {exc.message}")
        sys.exit(1)


def _not_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def find_nginx() -> str:
    """The nginx executable: SEARCHSVC_NGINX, else from PATH or Debian's sbin directories."""
    chosen = os.environ.get("SEARCHSVC_NGINX", "").strip()
    found = shutil.which(chosen) if chosen else None
    if not chosen:
        sbin = os.environ.get("SEARCHSVC_SBIN", SBIN)
        found = shutil.which("nginx") or shutil.which("nginx", path=sbin)
    if found is None:
        where = f" at SEARCHSVC_NGINX={chosen}" if chosen else ""
        raise ServeError(NGINX_MISSING.replace("nginx not found", f"nginx not found{where}", 1))
    return found


def choose_nginx(front: str, say: Callable[[str], None] = print) -> str | None:
    """The nginx to run for `--front FRONT`, or None for gunicorn alone: `nginx` fails without
    it, `auto` warns (once) and goes on without it unless SEARCHSVC_NGINX asked for one."""
    if front == "none":
        return None
    if front == "nginx" or os.environ.get("SEARCHSVC_NGINX", "").strip():
        return find_nginx()
    try:
        return find_nginx()
    except ServeError:
        say(NO_FRONT_WARNING)
        return None


def serve(front: Front, *, nginx: str | None, say: Callable[[str], None] = print) -> int:
    """Run gunicorn (its settings from SEARCHSVC_* variables) behind nginx, or alone on the
    front's address when `nginx` is None, until SIGTERM or SIGINT (exit status 0) or until one
    of them exits (1)."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    if nginx is None:
        return _serve_alone(front, stop, say)
    run_dir = Path(tempfile.mkdtemp(prefix="searchsvc-serve-"))
    children: dict[str, subprocess.Popen] = {}
    try:
        try:
            config = write_front(run_dir, front)
        except OSError as exc:  # no unprivileged user for nginx's workers, a full disk
            raise ServeError(f"nginx's config not written: {exc}") from None
        socket = run_dir / SOCKET_NAME
        gunicorn = [sys.executable, "-m", "gunicorn", "--config", GUNICORN_CONFIG]
        gunicorn += ["--bind", f"unix:{socket}", WSGI_APP]
        children["gunicorn"] = _start(gunicorn, {**os.environ, "SEARCHSVC_BEHIND_FRONT": "1"})
        _wait_for_socket(socket, children["gunicorn"], stop)
        if stop.is_set():
            return 0
        children["nginx"] = _start([nginx, "-e", "stderr", "-p", str(run_dir), "-c", str(config)])
        if _wait_for_port(front, children["nginx"], stop):
            host = f"[{front.host}]" if ":" in front.host else front.host
            say(f"serving http://{host}:{front.port}/ (nginx in front of gunicorn)")
        dead = _watch(children, stop)
        if dead is not None:
            status = children[dead].returncode
            say(f"error: {dead} exited (status {status}); stopping the rest")
            return 1
        return 0
    finally:
        _stop_all(children)
        shutil.rmtree(run_dir, ignore_errors=True)


def _serve_alone(front: Front, stop: threading.Event, say: Callable[[str], None]) -> int:
    """gunicorn with the service's settings (its own bounds on request lines and headers,
    gunicorn_conf.py) listening on the public address itself."""
    host = f"[{front.host}]" if ":" in front.host else front.host
    gunicorn = [sys.executable, "-m", "gunicorn", "--config", GUNICORN_CONFIG]
    gunicorn += ["--bind", f"{host}:{front.port}", WSGI_APP]
    env = {name: value for name, value in os.environ.items() if name != "SEARCHSVC_BEHIND_FRONT"}
    children = {"gunicorn": _start(gunicorn, env)}
    try:
        if _wait_for_port(front, children["gunicorn"], stop):
            say(f"serving http://{host}:{front.port}/ (gunicorn alone, no front)")
        dead = _watch(children, stop)
        if dead is not None:
            say(f"error: gunicorn exited (status {children[dead].returncode})")
            return 1
        return 0
    finally:
        _stop_all(children)


def _start(command: list[str], env: Mapping[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    # In the child, before exec: Linux sends it SIGTERM when this process dies, even by
    # SIGKILL, so that no nginx is left holding the port and no gunicorn serving its socket.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: stopped by this process only


def _wait_for_port(front: Front, nginx: subprocess.Popen, stop: threading.Event) -> bool:
    """Until nginx (or gunicorn alone) accepts on its address (True), or it exits (a port
    taken: False, and the watch reports it), so that "serving" is said only of a service that
    is there."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(front.host, front.host)
    deadline = time.monotonic() + STARTUP_SECONDS
    while not stop.is_set() and nginx.poll() is None and time.monotonic() < deadline:
        try:
            with socketlib.create_connection((host, front.port), timeout=POLL_SECONDS):
                return True
        except OSError:
            stop.wait(POLL_SECONDS)
    return False


def _wait_for_socket(socket: Path, gunicorn: subprocess.Popen, stop: threading.Event) -> None:
    """Until gunicorn listens: its master binds the socket before it starts the workers, and
    requests wait in the socket's backlog until a worker is up."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while not socket.exists() and not stop.is_set():
        if gunicorn.poll() is not None:
            raise ServeError(f"gunicorn exited at start (status {gunicorn.returncode})")
        if time.monotonic() > deadline:
            raise ServeError(f"gunicorn did not listen on {socket} in {STARTUP_SECONDS} s")
        stop.wait(POLL_SECONDS)


def _watch(children: dict[str, subprocess.Popen], stop: threading.Event) -> str | None:
    """Until `stop` is set (None) or a child exits (its name)."""
    while not stop.is_set():
        for name, child in children.items():
            if child.poll() is not None:
                return name
        stop.wait(POLL_SECONDS)
    return None


def _stop_all(children: dict[str, subprocess.Popen]) -> None:
    # nginx first: it stops taking connections and finishes those under way, which gunicorn
    # still answers; then gunicorn. SIGQUIT is nginx's graceful stop, SIGTERM gunicorn's.
    for name, signum in (("nginx", signal.SIGQUIT), ("gunicorn", signal.SIGTERM)):
        child = children.get(name)
        if child is None or child.poll() is not None:
            continue
        child.send_signal(signum)
        try:
            child.wait(STOP_SECONDS[name])
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


if __name__ == "__main__":
    main()
