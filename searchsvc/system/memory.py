"""Giving freed memory back to the system.

glibc's malloc keeps what a process frees for its own later use: after a segment of a build, or
a burst of searches with large temporary arrays, a process could hold a hundred megabytes or
more that it no longer uses, counted in its RSS and USS as if it did. `release_free_memory`
hands the free pages back (`malloc_trim`); it takes a millisecond or two, so callers run it
between units of work, not inside them.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc; nothing elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().malloc_trim(0)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
