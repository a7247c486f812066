"""Operations endpoints: liveness, readiness and Prometheus metrics (outside /api/v1)."""

from __future__ import annotations

from flask import Response, jsonify
from flask_smorest import Blueprint

from searchsvc.api import schemas
from searchsvc.api.metrics import metrics_response
from searchsvc.extension import get_service
from searchsvc.query import SearchRequest

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
    """Readiness: the index is open and answers a search (503 while it is not)."""
    service = get_service()
    result = service.search_request(READINESS_PROBE)
    return jsonify({"status": "ready", "documents": result.total, "version": service.version()})


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
    """Request counts and latency histograms by endpoint and status; index size."""
    return metrics_response()
