"""Prometheus metrics: requests and latency by endpoint and status, index size and documents,
write tasks by status, and the write queue's backlog (bytes, and the oldest task's wait).

Under gunicorn each worker is a process: with PROMETHEUS_MULTIPROC_DIR set (the gunicorn config
sets it) every worker writes its samples there and /metrics merges them all.
"""

from __future__ import annotations

import logging
import os
import time

from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from searchsvc.domain.errors import SearchsvcError
from searchsvc.extension import get_queue, get_service

# Module level: the registry is per process, whatever the number of apps created in it.
REQUESTS = Counter(
    "searchsvc_http_requests_total",
    "HTTP requests answered, by endpoint (URL rule), method and status.",
    ["endpoint", "method", "status"],
)
LATENCY = Histogram(
    "searchsvc_http_request_duration_seconds",
    "Time to answer an HTTP request, by endpoint (URL rule) and status.",
    ["endpoint", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
INDEX_SIZE = Gauge(
    "searchsvc_index_size_bytes",
    "Size on disk of the live index generation.",
    multiprocess_mode="mostrecent",
)
INDEX_DOCUMENTS = Gauge(
    "searchsvc_index_documents",
    "Records in the live index.",
    multiprocess_mode="mostrecent",
)
TASKS = Gauge(
    "searchsvc_tasks",
    "Write tasks in the task queue, by status (enqueued: not yet applied; failed: refused, or "
    "dead-lettered after the writer's attempts), finished ones until their retention ends.",
    ["status"],
    multiprocess_mode="mostrecent",
)
TASK_BACKLOG_BYTES = Gauge(
    "searchsvc_task_backlog_bytes",
    "Bytes of write payloads waiting to be applied (enqueued or processing), which "
    "SEARCHSVC_QUEUE_MAX_BYTES bounds.",
    multiprocess_mode="mostrecent",
)
TASK_OLDEST_WAITING = Gauge(
    "searchsvc_task_oldest_waiting_seconds",
    "How long the oldest task waiting to be applied has waited (0: none waits); it grows "
    "while the writer is stuck or behind.",
    multiprocess_mode="mostrecent",
)
INDEX_UP = Gauge(
    "searchsvc_index_up",
    "1 when an index answers reads (the live one, or the previous one when the live one is "
    "damaged); 0 when none can.",
    multiprocess_mode="mostrecent",
)
INDEX_FALLBACK = Gauge(
    "searchsvc_index_fallback",
    "1 when reads are answered from the previous index because the live one failed "
    "verification (`searchsvc check` says why).",
    multiprocess_mode="mostrecent",
)
UNMATCHED = "<unmatched>"
# The methods HTTP defines (RFC 9110, and PATCH): any other token is a valid method too, and as
# a label each one would add series to every worker's files for good. They count as one.
KNOWN_METHODS = frozenset(
    ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
)
OTHER_METHOD = "other"

log = logging.getLogger(__name__)


def start_timer() -> None:
    g.request_started = time.perf_counter()


def record_request(response: Response) -> Response:
    # The URL rule, not the path: label values must stay few whatever clients request.
    endpoint = request.url_rule.rule if request.url_rule else UNMATCHED
    status = str(response.status_code)
    elapsed = time.perf_counter() - g.get("request_started", time.perf_counter())
    method = request.method if request.method in KNOWN_METHODS else OTHER_METHOD
    REQUESTS.labels(endpoint, method, status).inc()
    LATENCY.labels(endpoint, status).observe(elapsed)
    # Server-Timing: what the app spent, and of that what the search engine spent (search only).
    timings = [f"app;dur={elapsed * 1000:.2f}"]
    if "search_ms" in g:
        timings.append(f"search;dur={g.search_ms:.2f}")
    response.headers["Server-Timing"] = ", ".join(timings)
    return response


def registry() -> CollectorRegistry:
    """The registry to expose: every worker's samples under gunicorn, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)
        return merged
    return REGISTRY


def metrics_response() -> Response:
    """The Prometheus text exposition of every metric."""
    try:
        service = get_service()
        stats = service.stats()
        warning = service.warning()
    except Exception as exc:
        # The index is not there (yet), or cannot be read: the other metrics are still worth
        # exposing, and monitoring must see this answer more than any other.
        if not isinstance(exc, SearchsvcError):
            log.exception("index metrics unavailable")
        INDEX_UP.set(0)
        INDEX_FALLBACK.set(0)
    else:
        INDEX_UP.set(1)
        INDEX_FALLBACK.set(1 if warning else 0)
        INDEX_SIZE.set(stats.size_bytes)
        INDEX_DOCUMENTS.set(stats.documents)
    try:
        queue = get_queue()
        counts = queue.counts()
        backlog = queue.backlog()
        oldest = queue.oldest_waiting_seconds()
    except Exception as exc:
        # Writes are off, or the queue cannot be read: its own errors say why.
        if not isinstance(exc, SearchsvcError):
            log.exception("task queue metrics unavailable")
    else:
        for status, count in counts.items():
            TASKS.labels(status).set(count)
        TASK_BACKLOG_BYTES.set(backlog["bytes"])
        TASK_OLDEST_WAITING.set(oldest)
    response = Response(generate_latest(registry()), mimetype="text/plain")
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    # Registered first, so its after_request runs last and times everything else.
    app.before_request(start_timer)
    app.after_request(record_request)
