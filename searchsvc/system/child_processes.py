"""Worker processes that die with the process that started them, even when it is SIGKILLed.

A build forks workers (the decoding pool of large inputs, the segment writers). Nothing in
them notices their parent's death by itself: a pool worker waits on a queue whose write end its
sibling workers also hold, so it waits forever, holding its memory. Each worker therefore calls
`die_with_parent` first: Linux kills it when its parent goes (PR_SET_PDEATHSIG), and where that
is not available a thread of its own watches the parent and ends it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

# How often the fallback watcher looks at its parent: the longest an orphan lives on.
PARENT_POLL_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """End this (forked) process when the process `parent` ends; call it first thing.

    `parent` is the pid of the forking process, taken before the fork: had the parent died
    between the fork and this call, the worker would already be an orphan, which the check
    after the request catches. On Linux the death signal is tied to the thread that forked,
    which here is always the one that then waits for the workers, so it outlives them.
    """
    if not _killed_by_kernel_on_parent_death():
        _watch(parent)
    if os.getppid() != parent:
        os._exit(1)


def _killed_by_kernel_on_parent_death() -> bool:
    """Ask Linux to SIGKILL this process when its parent exits; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc to load, or one without prctl
        return False
    return result == 0


def _watch(parent: int) -> None:
    thread = threading.Thread(
        target=_exit_when_orphaned, args=(parent,), name="searchsvc-parent-watch", daemon=True
    )
    thread.start()


def _exit_when_orphaned(parent: int) -> None:
    # An orphan is adopted by another process (init or a subreaper), so its parent pid changes.
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)
