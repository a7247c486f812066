"""File locks between the processes of a deployment: the right to change the index (the writer
for each batch, a rebuild for all of it) and the writer role."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from searchsvc.domain.errors import TaskQueueUnavailable


@contextlib.contextmanager
def file_lock(path: Path, wait: bool) -> Iterator[bool]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")  # noqa: SIM115 (held for the whole block)
    except OSError as exc:
        raise queue_unavailable(path, exc) from exc
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def queue_unavailable(path: Path, exc: BaseException) -> TaskQueueUnavailable:
    """The error of a queue file (or its lock) that cannot be used, saying why."""
    # An OSError's text names the file: fine on the command line, not in an HTTP answer.
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    error = TaskQueueUnavailable(f"the task queue is unavailable: {reason}")
    error.local_message = f"the task queue at {path} is unavailable: {str(exc) or reason}"
    return error
