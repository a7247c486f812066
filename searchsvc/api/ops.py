"""Operations endpoints: liveness, readiness and Prometheus metrics (outside /api/v1)."""

from __future__ import annotations

import logging

from flask import Response, jsonify
from flask_smorest import Blueprint

from searchsvc.api import schemas
from searchsvc.api.auth import may_read
from searchsvc.api.metrics import metrics_response
from searchsvc.domain.errors import IndexUnavailable, SearchsvcError
from searchsvc.domain.query import SearchRequest
from searchsvc.extension import get_service

log = logging.getLogger(__name__)

blp = Blueprint("ops", __name__, description="Liveness, readiness and metrics.")

# The cheapest question that still goes through the engine: one hit, no facets, no highlights.
READINESS_PROBE = SearchRequest(per_page=1, facets=(), highlight=False)


@blp.route("/healthz")
@blp.response(200, schemas.HealthSchema)
def healthz() -> Response:
    """Liveness: the process answers HTTP."""
    return jsonify({"status": "ok"})


@blp.route("/readyz")
@blp.response(200, schemas.ReadinessSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def readyz() -> Response:
    """Readiness: the index is open and answers a search (503 while it is not, saying why).

    When the live index is damaged and the previous one answers instead, `status` is
    `degraded` and `warning` says why. When reads take a key, probes need none, but the count
    of documents is shown only to a key with the read scope."""
    service = get_service()
    try:
        result = service.search_request(READINESS_PROBE)
        warning = service.warning()
        body: dict[str, str | int] = {"status": "ready", "version": service.version()}
    except SearchsvcError:
        raise
    except Exception as exc:
        # Not ready, whatever the engine raised: a probe's failure is a 503, never a 500.
        log.exception("readiness probe failed")
        raise IndexUnavailable(f"the index cannot answer a search ({type(exc).__name__})") from exc
    if may_read():
        body["documents"] = result.total
    if warning:
        body.update(status="degraded", warning=warning)
    return jsonify(body)


@blp.route("/metrics")
@blp.doc(
    responses={
        200: {
            "description": "Prometheus text exposition format.",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
)
def metrics() -> Response:
    """Request counts and latency histograms by endpoint and status; index size.

    It counts documents: when reads take a key, so does it (a scraper sends it as a bearer
    token). When reads are open, keep it to the monitoring hosts at the front
    (docs/guides/applications.md)."""
    return metrics_response()
