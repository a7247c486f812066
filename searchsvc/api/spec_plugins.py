"""What the OpenAPI document says of every operation, besides what each view declares."""

from __future__ import annotations

from typing import Any

from apispec import BasePlugin

METHODS = ("get", "put", "post", "patch", "delete")


class EveryOperation(BasePlugin):
    """Every operation may answer 413: any request's query string or body can be over the
    service's limits (api/http.py), whichever view it was meant for. An operation with a path
    parameter may answer 404 before its view runs: a value the route cannot hold (a line break
    in an id) matches no route."""

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        for method, operation in (operations or {}).items():
            if method in METHODS:
                responses = operation.setdefault("responses", {})
                responses.setdefault(413, "REQUEST_ENTITY_TOO_LARGE")
                if path and "{" in path:
                    responses.setdefault(404, "NOT_FOUND")
