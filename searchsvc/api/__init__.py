"""The HTTP API: the read endpoints under /api/v1, operations endpoints, their OpenAPI document."""

from __future__ import annotations

from flask import Flask

from searchsvc import __version__
from searchsvc.api import auth, docs, errors, http, metrics, ops, spec_plugins, views, writes

API_PREFIX = "/api/v1"
DESCRIPTION = (
    "Full-text search over scholarly publication records: ranked, filtered, faceted and "
    "highlighted search, records, similar records, suggestions, facet values, author views; "
    "records written through a durable task queue (with an API key)."
)


def init_app(app: Flask) -> None:
    """Register the API, its OpenAPI document (/api/v1/openapi.json) and docs page."""
    app.config.setdefault("API_VERSION", __version__)
    app.config.setdefault("OPENAPI_VERSION", "3.0.3")
    app.config.setdefault("OPENAPI_URL_PREFIX", API_PREFIX)
    app.config.setdefault("OPENAPI_JSON_PATH", "openapi.json")
    app.config.setdefault("API_SPEC_OPTIONS", {"info": {"description": DESCRIPTION}})
    metrics.init_app(app)
    http.init_app(app)
    plugins = [
        spec_plugins.EveryOperation(),
        auth.ReadKeyDocumented(app.config["REQUIRE_KEY_FOR_READS"]),
    ]
    api = errors.SearchApi(app, spec_kwargs={"extra_plugins": plugins})
    app.extensions["searchsvc.api"] = api
    errors.init_app(app)
    auth.init_app(app, api)
    writes.document(api)
    api.register_blueprint(views.blp)
    api.register_blueprint(writes.blp)
    api.register_blueprint(ops.blp)
    docs.init_app(app)
