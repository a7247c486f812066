"""The layering of searchsvc, read from its imports: the engine stays in its backend, the domain
knows neither Flask nor Whoosh, and the in-process API loads neither."""

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

DOMAIN = (
    "records.py",
    "query.py",
    "querylang/*.py",
    "facets.py",
    "errors.py",
    "params.py",
    "service.py",
    "indexer.py",
    "texts.py",
    "sources/*.py",
    "backends/__init__.py",
    "backends/contract.py",
)
WEB_AND_ENGINE = ("flask", "werkzeug", "whoosh")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


def domain_files() -> list[Path]:
    return sorted({path for pattern in DOMAIN for path in PACKAGE.glob(pattern)})


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


def top_level(name: str) -> str:
    return name.split(".")[0]


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_the_walk_finds_the_package_and_its_domain():
    files = {relative(path) for path in python_files()}
    assert "searchsvc/service.py" in files and "searchsvc/backends/whoosh/backend.py" in files
    domain = {relative(path) for path in domain_files()}
    assert {"searchsvc/querylang/parser.py", "searchsvc/sources/jsonl.py"} <= domain
    assert "searchsvc/backends/whoosh/backend.py" not in domain
    # The walk sees what it looks for: the Whoosh backend does import whoosh.
    assert any(
        top_level(name) == "whoosh"
        for path in python_files(WHOOSH_BACKEND)
        for name in imports_of(path)
    )


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
