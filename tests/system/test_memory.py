"""Freed memory given back to the system (searchsvc/system/memory.py): builds call it between
segments, gunicorn's workers when idle (issue 20)."""

from __future__ import annotations

import gc
import platform
import re
from pathlib import Path

import pytest

from searchsvc.system.memory import release_free_memory

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc"
)


def anonymous_rss_mb() -> float:
    text = Path("/proc/self/status").read_text()
    return int(re.search(r"RssAnon:\s+(\d+) kB", text).group(1)) / 1024


def test_freed_memory_below_a_live_block_goes_back_to_the_system():
    blocks = [bytearray(4000) for _ in range(30_000)]  # 120 MB of malloc'd (not pymalloc) blocks
    last = blocks[-1]  # still in use at the top of the heap: malloc alone cannot shrink it
    del blocks
    gc.collect()
    held = anonymous_rss_mb()
    release_free_memory()
    assert anonymous_rss_mb() < held - 80
    assert len(last) == 4000
