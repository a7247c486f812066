"""The JVMs of the local cluster as operating-system processes: start, signal, find again.

Each JVM runs in a session (and process group) of its own: Ctrl-C in the launching terminal then
reaches only the launcher, which stops the nodes before ZooKeeper (stopping ZooKeeper first would
leave the nodes retrying their sessions for their whole timeout). A pid file per process lets
another shell find them; since a pid can be reused after a reboot, a process only counts as ours
when its command line names the file it was started with (see `ours`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Managed:
    """One JVM of the cluster: its arguments (after `java`), where it logs, where its pid is kept.

    `marker` is a string of its command line that only this process has (its home directory or
    config file), to tell it from an unrelated process that reused the pid.
    """

    name: str
    java_args: list[str]
    log: Path
    pid_file: Path
    marker: str
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, java: str, env: dict[str, str] | None = None) -> None:
        """Start it with `java` in its own session, stdout and stderr appended to its log."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            out.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} start {self.name}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(
                [java, *self.java_args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        self.pid_file.write_text(f"{self.popen.pid}\n")

    def pid(self) -> int | None:
        """The pid of the running process, from this launcher or from the pid file; None if the
        process is gone (a stale pid file is removed)."""
        if self.popen is not None:
            if self.popen.poll() is None:
                return self.popen.pid
            self.popen = None
            self._forget()
            return None
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if ours(pid, self.marker):
            return pid
        self._forget()
        return None

    def running(self) -> bool:
        return self.pid() is not None

    def exit_code(self) -> int | None:
        """The exit status when this launcher started it and it has ended, else None."""
        return None if self.popen is None else self.popen.poll()

    def signal(self, signum: int) -> bool:
        """Send `signum` to its process group; False when it was not running."""
        pid = self.pid()
        if pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            # Its own session: pgid == pid. Fall back to the pid alone if that is not so.
            try:
                os.killpg(pid, signum)
            except PermissionError:
                os.kill(pid, signum)
        return True

    def wait(self, timeout: float) -> bool:
        """Wait until it has ended; True if it did within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            if self.popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
            if not self.running():
                return True
            if time.monotonic() >= deadline:
                return False
            if self.popen is None:
                time.sleep(0.1)

    def _forget(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()


def ours(pid: int, marker: str) -> bool:
    """True when `pid` is a live (not zombie) process whose command line contains `marker`.

    Reads /proc (Linux). Where there is none, any live pid counts: less safe, still useful.
    """
    proc = Path("/proc") / str(pid)
    if Path("/proc/self").exists():
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        state = stat.rpartition(")")[2].split()[0:1]
        return state != ["Z"] and marker in cmdline
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_all(processes: Sequence[Managed], timeout: float = 60.0) -> None:
    """SIGTERM them all at once, then SIGKILL whatever has not ended after `timeout` seconds."""
    signalled = [p for p in processes if p.signal(signal.SIGTERM)]
    deadline = time.monotonic() + timeout
    for process in signalled:
        if not process.wait(max(0.0, deadline - time.monotonic())):
            process.signal(signal.SIGKILL)
            process.wait(10.0)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when something already accepts connections on host:port.

    A connection test, not a bind test: a port a stopped node left in TIME_WAIT is free for the
    next node (Jetty binds with SO_REUSEADDR), and a bind test would call it taken.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect((host, port))
        except OSError:
            return False
        return True


def log_tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log, to put in an error message; '' when there is no log."""
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - 64 * 1024))
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
