"""The Flask application factory: `create_app(config=None)`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask

from searchsvc import api, extension
from searchsvc import config as settings
from searchsvc.api import security
from searchsvc.api.encoding import JSONProvider


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The search service: API, operations endpoints and (when installed) the web page.

    Settings come from `searchsvc.config.DEFAULTS`, then `SEARCHSVC_*` environment variables,
    then `config` (tests pass e.g. `{"INDEX": tmp_path, "TESTING": True}`).
    """
    app = Flask(__name__)
    app.config.from_mapping(settings.load(config))
    app.json = JSONProvider(app)
    security.init_app(app)
    extension.init_app(app)
    api.init_app(app)
    _init_web(app)
    _init_mcp(app)
    return app


def _init_web(app: Flask) -> None:
    """Register the HTML search page when its package is installed."""
    try:
        from searchsvc.web import init_app as init_web
    except ModuleNotFoundError as exc:
        if exc.name != "searchsvc.web":
            raise
        return
    init_web(app)


def _init_mcp(app: Flask) -> None:
    """Answer MCP at /mcp (searchsvc/mcp/mounted.py) when the SDK is installed (the `mcp`
    extra)."""
    try:
        from searchsvc.mcp.mounted import init_app as init_mcp
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "mcp":
            raise
        return
    init_mcp(app)
