"""The API docs page at /api/v1/docs: the OpenAPI document rendered as plain HTML.

Swagger UI and ReDoc load their scripts from a CDN; this page is rendered on the server from the
same spec as /api/v1/openapi.json and works offline. Each operation without path parameters
gets a form that sends the request from the browser.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from flask import Flask, Response, current_app
from markupsafe import Markup, escape

# The page's style and script are files of their own: the pages' security policy (security.py)
# runs no inline script or style.
STYLE = """body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
h2{margin-top:2.5rem;border-bottom:1px solid #ccc} code{background:#f3f3f3;padding:0 .2em}
table{border-collapse:collapse;width:100%;margin:.5rem 0} td,th{border:1px solid #ddd;
padding:.25rem .5rem;text-align:left;vertical-align:top} th{background:#f7f7f7}
.op{margin:1.5rem 0;padding:.5rem 1rem;border-left:4px solid #3a6ea5;background:#fafcff}
.method{font-weight:bold;color:#3a6ea5} form input{margin:.1rem .3rem .1rem 0}
"""
# Empty fields are left out, so that they take their defaults.
SCRIPT = """for (const form of document.querySelectorAll("form.try")) {
  form.addEventListener("submit", () => {
    for (const input of form.elements) if (!input.value) input.disabled = true;
  });
}
"""
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} API</title>
<link rel="stylesheet" href="docs.css">
<script src="docs.js" defer></script></head><body>
<h1>{title} API <small>{version}</small></h1>
<p>{description} The machine-readable document: <a href="openapi.json">openapi.json</a>
(OpenAPI {openapi}). Every error answers
<code>{{"error": {{"status", "code", "message", "details"}}}}</code>.</p>
{operations}
<h2>Schemas</h2>
{schemas}
</body></html>
"""


def _type_of(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type_of(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        return f"object of {_type_of(schema['additionalProperties'])}"
    if "allOf" in schema:
        return " & ".join(_type_of(part) for part in schema["allOf"])
    return str(kind)


def _constraints(schema: dict[str, Any]) -> str:
    parts = [f"{key} {schema[key]}" for key in ("minimum", "maximum", "maxLength") if key in schema]
    items = schema.get("items", {})
    if "enum" in schema or "enum" in items:
        parts.append("one of " + ", ".join(map(str, schema.get("enum") or items["enum"])))
    if "default" in schema:
        parts.append(f"default {json.dumps(schema['default'])}")
    return "; ".join(parts)


def _rows(cells: Iterable[list[Any]]) -> str:
    return "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in cells
    )


def _operation(path: str, method: str, operation: dict[str, Any], responses: dict[str, Any]) -> str:
    parameters = operation.get("parameters", [])
    html = [
        f'<div class="op"><p><span class="method">{escape(method.upper())}</span> '
        f"<code>{escape(path)}</code> — {escape(operation.get('summary', ''))}</p>"
    ]
    if parameters:
        html.append("<table><tr><th>parameter</th><th>in</th><th>type</th><th>rules</th>")
        html.append("<th>description</th></tr>")
        html.append(
            _rows(
                [
                    p["name"],
                    p["in"],
                    _type_of(p.get("schema", {})),
                    _constraints(p.get("schema", {})),
                    p.get("description", ""),
                ]
                for p in parameters
            )
        )
        html.append("</table>")
    rows = []
    for status, response in operation.get("responses", {}).items():
        if "$ref" in response:  # a shared response of components/responses
            response = responses[response["$ref"].rsplit("/", 1)[-1]]
        rows.append([status, response.get("description", ""), _response_schema(response)])
    html.append("<table><tr><th>status</th><th>meaning</th><th>body</th></tr>")
    html.append(_rows(rows) + "</table>")
    if method == "get" and "{" not in path:
        inputs = "".join(
            f'<input name="{escape(p["name"])}" placeholder="{escape(p["name"])}">'
            for p in parameters
            if p["in"] == "query"
        )
        html.append(
            f'<form class="try" method="get" action="{escape(path)}">{Markup(inputs)}'
            '<button type="submit">Send</button></form>'
        )
    html.append("</div>")
    return "".join(html)


def _response_schema(response: dict[str, Any]) -> str:
    for media, content in response.get("content", {}).items():
        return f"{media}: {_type_of(content.get('schema', {}))}"
    return ""


def _schema(name: str, schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    rows = [
        [
            field,
            _type_of(prop),
            "required" if field in required else "",
            prop.get("description", ""),
        ]
        for field, prop in schema.get("properties", {}).items()
    ]
    return (
        f'<h3 id="{escape(name)}">{escape(name)}</h3>'
        "<table><tr><th>field</th><th>type</th><th></th><th>description</th></tr>"
        f"{_rows(rows)}</table>"
    )


def render(spec: dict[str, Any]) -> str:
    """The whole docs page for an OpenAPI 3 document."""
    components = spec.get("components", {})
    operations = []
    for path, item in spec.get("paths", {}).items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                # Path-level parameters (record_id, facet...) apply to every method of the path.
                operation = {
                    **operation,
                    "parameters": item.get("parameters", []) + operation.get("parameters", []),
                }
                operations.append(
                    _operation(path, method, operation, components.get("responses", {}))
                )
    schemas = components.get("schemas", {})
    info = spec.get("info", {})
    return PAGE.format(
        title=escape(info.get("title", "")),
        version=escape(info.get("version", "")),
        description=escape(info.get("description", "")),
        openapi=escape(spec.get("openapi", "")),
        operations="".join(operations),
        schemas="".join(_schema(name, schema) for name, schema in schemas.items()),
    )


def docs_page() -> Response:
    spec = current_app.extensions["searchsvc.api"].spec.to_dict()
    return Response(render(spec), mimetype="text/html")


def docs_style() -> Response:
    return Response(STYLE, mimetype="text/css")


def docs_script() -> Response:
    return Response(SCRIPT, mimetype="text/javascript")


def init_app(app: Flask) -> None:
    app.add_url_rule("/api/v1/docs", "api_docs", docs_page)
    app.add_url_rule("/api/v1/docs.css", "api_docs_style", docs_style)
    app.add_url_rule("/api/v1/docs.js", "api_docs_script", docs_script)
