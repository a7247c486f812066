"""The layering of searchsvc, read from its imports: each folder imports only the layers below it
(ARCHITECTURE.md draws them), the domain nothing else of the package, no entry point an engine,
the client only the domain (and the client package, clients/python, nothing of
searchsvc), and the engines stay in their packages."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "searchsvc"
WHOOSH_BACKEND = PACKAGE / "backends" / "whoosh"
SERVING = PACKAGE / "serving"
WEB_AND_ENGINE = ("flask", "werkzeug", "whoosh")

# The layers: a module's layer is its folder under searchsvc/ (backends/ split into its core,
# the code every engine shares, and each engine), or the top-level module itself.
ENGINES = ("backends.whoosh", "backends.solr")
ENTRY_POINTS = ("api", "web", "cli", "serving", "extension", "app", "mcp")
# What each layer may import of the package besides itself. Data flows one way: an entry
# point speaks the domain and the service; the service and the write side speak the engine
# contract (`backends`, its core); only the core opens an engine, by import path, on demand.
MAY_IMPORT: dict[str, frozenset[str]] = {
    name: frozenset(allowed)
    for name, allowed in {
        "domain": (),
        "system": (),
        "http": ("domain",),
        "sources": ("domain", "system"),
        "embeddings": ("domain", "system"),
        "backends": ("domain",),
        "backends.shared": ("domain", "backends", "embeddings"),
        "backends.whoosh": ("domain", "system", "embeddings", "backends", "backends.shared"),
        "backends.solr": ("domain", "system", "embeddings", "backends", "backends.shared"),
        "tasks": ("domain", "backends"),
        "indexing": ("domain", "system", "sources", "embeddings", "backends", "tasks"),
        "service": ("domain", "backends", "embeddings", "tasks"),
        "params": ("domain",),
        "config": ("domain", "backends"),
        "client": ("domain",),
        "devtools": ("domain", "system"),
        "extension": ("domain", "service", "tasks", "config"),
        "api": ("domain", "http", "params", "service", "extension", "tasks", "config"),
        "web": ("domain", "http", "params", "service", "extension", "config"),
        "cli": (
            "domain",
            "system",
            "sources",
            "params",
            "service",
            "indexing",
            "tasks",
            "config",
            "devtools",
            "mcp",
        ),
        "serving": ("domain", "system", "http", "extension", "config"),
        "app": ("domain", "http", "api", "web", "extension", "config", "mcp"),
        # The MCP server (the tools on the service; /mcp of the app, behind the read key).
        "mcp": ("domain", "service", "extension"),
        "searchsvc": ("service",),  # the package's __init__: SearchService, on first use
    }.items()
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> str:
    """The layer of a searchsvc module name (`searchsvc.backends.whoosh.store` is
    `backends.whoosh`, `searchsvc.service` is `service`)."""
    parts = name.split(".")[1:]
    if not parts:
        return "searchsvc"
    if parts[0] == "backends" and len(parts) > 1 and parts[1] in ("shared", "whoosh", "solr"):
        return f"backends.{parts[1]}"
    return parts[0]


def python_files(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


def domain_files() -> list[Path]:
    return python_files(PACKAGE / "domain")


@cache
def imports_of(path: Path) -> frozenset[str]:
    """Every module `path` imports, anywhere in it (functions included), relative ones resolved
    to absolute names; `from a import b` counts as importing `a` and `a.b`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return frozenset(names)


def searchsvc_modules_imported(path: Path) -> set[str]:
    """The searchsvc modules `path` imports (attribute names of `from a import b` left out)."""
    found = set()
    for name in imports_of(path):
        if top_level(name) == "searchsvc" and _module_file(name) is not None:
            found.add(name)
    return found


def top_level(name: str) -> str:
    return name.split(".")[0]


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_every_module_is_in_a_layer_of_the_plan():
    layers = {layer_of(module_name(path)) for path in python_files()}
    assert layers <= set(MAY_IMPORT), sorted(layers - set(MAY_IMPORT))
    # The walk sees what it looks for: the domain is there, and the Whoosh backend imports
    # whoosh.
    assert {"searchsvc/domain/query.py", "searchsvc/domain/querylang/parser.py"} <= {
        relative(path) for path in domain_files()
    }
    assert any(
        top_level(name) == "whoosh"
        for path in python_files(WHOOSH_BACKEND)
        for name in imports_of(path)
    )


@pytest.mark.parametrize("path", python_files(), ids=relative)
def test_a_module_imports_only_the_layers_below_its_own(path):
    own = layer_of(module_name(path))
    # Every layer may read the package's own __version__ (its __init__ loads nothing else).
    allowed = MAY_IMPORT[own] | {own, "searchsvc"}
    wrong = sorted(
        name for name in searchsvc_modules_imported(path) if layer_of(name) not in allowed
    )
    assert wrong == [], f"{relative(path)} ({own}) may import only {sorted(allowed)}"


def test_no_entry_point_imports_an_engine_or_the_engine_contract():
    # They speak the service (and the write side: tasks, indexing), never a backend.
    offenders = {
        relative(path): sorted(
            name
            for name in searchsvc_modules_imported(path)
            if layer_of(name) in ("backends", "backends.shared", *ENGINES)
        )
        for path in python_files()
        if layer_of(module_name(path)) in ENTRY_POINTS
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_an_engine_imports_no_other_engine():
    for engine in ENGINES:
        for path in python_files(PACKAGE.joinpath(*engine.split("."))):
            others = [n for n in searchsvc_modules_imported(path) if layer_of(n) in ENGINES]
            assert all(layer_of(name) == engine for name in others), relative(path)


def test_the_client_imports_only_its_own_modules_and_the_domain():
    for path in python_files(PACKAGE / "client"):
        layers = {layer_of(name) for name in searchsvc_modules_imported(path)}
        assert layers <= {"client", "domain"}, relative(path)


# The client package (clients/python, its own distribution): the standard library and requests.
CLIENT_PACKAGE = PACKAGE.parent / "clients" / "python" / "src" / "searchsvc_client"


def test_the_client_package_imports_nothing_of_searchsvc_only_requests():
    files = python_files(CLIENT_PACKAGE)
    assert CLIENT_PACKAGE / "__init__.py" in files
    allowed = {*sys.stdlib_module_names, "requests", "searchsvc_client"}
    imported = {top_level(name) for path in files for name in imports_of(path)}
    assert "requests" in imported
    assert sorted(imported - allowed) == []


def test_no_module_outside_the_whoosh_backend_imports_whoosh():
    offenders = [
        relative(path)
        for path in python_files()
        if not path.is_relative_to(WHOOSH_BACKEND)
        and any(top_level(name) == "whoosh" for name in imports_of(path))
    ]
    assert offenders == []


@pytest.mark.parametrize("path", domain_files(), ids=relative)
def test_a_domain_module_imports_neither_flask_nor_werkzeug_nor_whoosh(path):
    assert sorted(n for n in imports_of(path) if top_level(n) in WEB_AND_ENGINE) == []


def _module_file(name: str) -> Path | None:
    """The file of a searchsvc module, or None for a name that is not one (an attribute)."""
    base = PACKAGE.parent.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _closure(path: Path) -> Iterator[Path]:
    """`path` and every searchsvc module it imports, directly or not (packages included)."""
    seen: set[Path] = set()
    todo = [path]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        for name in imports_of(current):
            if top_level(name) != "searchsvc":
                continue
            parts = name.split(".")
            for end in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                found = _module_file(".".join(parts[:end]))
                if found is not None:
                    todo.append(found)


@pytest.mark.parametrize("path", domain_files(), ids=relative)
def test_no_domain_module_reaches_flask_werkzeug_or_whoosh_through_searchsvc_modules(path):
    reached = {
        relative(module): sorted(n for n in imports_of(module) if top_level(n) in WEB_AND_ENGINE)
        for module in _closure(path)
    }
    assert {module: names for module, names in reached.items() if names} == {}


def test_nothing_outside_serving_imports_it():
    offenders = [
        relative(path)
        for path in python_files()
        if not path.is_relative_to(SERVING)
        and any(name == "searchsvc.serving" or name.startswith("searchsvc.serving.")
                for name in imports_of(path))
    ]  # fmt: skip
    assert offenders == []


def test_the_python_api_loads_neither_flask_nor_whoosh():
    code = (
        "import sys\n"
        "import searchsvc\n"
        "searchsvc.SearchService\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'whoosh'))\n"
        "print(','.join(loaded))\n"
    )
    result = run_python(code)
    assert result.stdout.strip() == ""


def test_the_http_client_loads_none_of_the_server():
    code = (
        "import sys\n"
        "from searchsvc.client import SearchClient\n"
        "server = ('flask', 'whoosh', 'numpy', 'marshmallow', 'webargs', 'onnxruntime', 'isal')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in server))\n"
        "print(sorted(m for m in sys.modules if m.startswith('searchsvc.')\n"
        "             and m.split('.')[1] not in ('client', 'domain')))\n"
    )
    assert run_python(code).stdout.split("\n")[:2] == ["[]", "[]"]


def test_the_client_package_loads_none_of_the_server():
    code = (
        "import sys\n"
        "import searchsvc_client\n"
        "server = ('searchsvc', 'flask', 'whoosh', 'numpy', 'marshmallow', 'onnxruntime')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in server))\n"
    )
    assert run_python(code).stdout.strip() == "[]"


def test_opening_a_whoosh_index_loads_whoosh_only_then(fixture_index):
    code = (
        "import sys\n"
        "from searchsvc import SearchService\n"
        "assert 'whoosh' not in sys.modules\n"
        f"service = SearchService.open({fixture_index!r})\n"
        "print(service.search('learning').total, 'whoosh' in sys.modules, 'flask' in sys.modules)\n"
    )
    result = run_python(code)
    assert result.stdout.split() == ["2", "True", "False"]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter from the project root; fail on a non-zero exit."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result
