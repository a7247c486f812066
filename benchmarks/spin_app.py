"""A WSGI app that only spins: the floor of serving a request that takes as long as a search.

bench_http.py runs it under the service's own gunicorn settings to split the HTTP overhead into
what the platform costs (gunicorn, the kernel's loopback, the load tool, and the machine's
wake-up after a request of that length) and what the service's app adds on top. It busy-waits
BENCH_SPIN_MS milliseconds (default 0), then answers BENCH_SPIN_BYTES bytes (default 8,000) of
JSON-typed filler.
"""

from __future__ import annotations

import os
import time

SPIN_SECONDS = float(os.environ.get("BENCH_SPIN_MS", "0")) / 1000
BODY = b"0" * int(os.environ.get("BENCH_SPIN_BYTES", "8000"))
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def app(environ, start_response):
    # Busy, not asleep: a sleeping worker would leave its CPU idle, as a searching one does not.
    deadline = time.perf_counter() + SPIN_SECONDS
    while time.perf_counter() < deadline:
        pass
    start_response("200 OK", HEADERS)
    return [BODY]
