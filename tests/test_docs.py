"""The documentation against the code: the generated reference pages are current, every command
README.md shows names a real make target, `searchsvc` command and option, API route or Compose
service, and every relative link between the pages leads somewhere."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import click
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = sorted(
    [README, ROOT / "CONTRIBUTING.md", ROOT / "ARCHITECTURE.md", *ROOT.glob("docs/**/*.md")]
)
README_MAX_LINES = 150


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_reference", ROOT / "docs" / "make_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_reference", module)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------- reference pages


def test_reference_pages_are_what_the_generator_makes_now():
    stale = [
        name
        for name, text in _generator().pages().items()
        if not (ROOT / "docs" / "reference" / name).exists()
        or (ROOT / "docs" / "reference" / name).read_text() != text
    ]
    assert not stale, f"docs/reference/{stale} out of date: run `make docs` and commit the pages"


def test_settings_reference_lists_every_setting_with_its_comment():
    from searchsvc import config

    page = (ROOT / "docs" / "reference" / "settings.md").read_text()
    for name in config.DEFAULTS:
        row = next(line for line in page.splitlines() if line.startswith(f"| `SEARCHSVC_{name}` |"))
        assert row.rstrip(" |").split("|")[-1].strip(), (
            f"SEARCHSVC_{name} has no comment in config.py"
        )


def test_generated_api_page_links_to_its_own_operations():
    page = (ROOT / "docs" / "reference" / "http-api.md").read_text()
    anchors = _anchors(page)
    for target in re.findall(r"\]\(#([^)]+)\)", page):
        assert target in anchors, target


# ---------------------------------------------------------------------------- README's commands


def test_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move detail to docs/"


def code_blocks(text: str) -> list[str]:
    """The Markdown code blocks' texts: fenced, or indented by four spaces after a blank line."""
    blocks: list[list[str]] = []
    fenced = in_indented = False
    previous_blank = True
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            if fenced:
                blocks.append([])
        elif fenced:
            blocks[-1].append(line)
        elif line.startswith("    ") and (previous_blank or in_indented):
            if not in_indented:
                blocks.append([])
            in_indented = True
            blocks[-1].append(line[4:])
        else:
            in_indented = False
        previous_blank = not line.strip()
    return ["\n".join(block) for block in blocks]


def shell_commands(text: str) -> list[list[str]]:
    """Each simple command of the code blocks (split at |, &&, ||, ;), comments and leading
    VAR=value assignments left out."""
    commands = []
    for block in code_blocks(text):
        for line in block.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words: list[str] = []
            for token in [*lexer, ";"]:
                if token in ("|", "&&", "||", ";", "&"):
                    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
                        words.pop(0)
                    if words:
                        commands.append(words)
                    words = []
                else:
                    words.append(token)
    return commands


def _make_target_exists(target: str) -> bool:
    result = subprocess.run(
        ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    return result.returncode == 0


def _searchsvc_problems(args: list[str]) -> list[str]:
    """Why `searchsvc ARGS` would not parse: an unknown command, subcommand or option."""
    from searchsvc.cli import main

    command: click.Command = main
    context = click.Context(main, info_name="searchsvc")
    path = ["searchsvc"]
    args = list(args)
    while isinstance(command, click.Group):
        names = [a for a in args if not a.startswith("-")]
        if not names:
            return []  # `searchsvc --help`, `searchsvc --version`
        name = names[0]
        sub = command.get_command(context, name)
        if sub is None:
            return [f"{' '.join(path)}: no command {name!r}"]
        args = args[args.index(name) + 1 :]
        context = click.Context(sub, info_name=name, parent=context)
        command, path = sub, [*path, name]
    options = {
        opt for param in command.get_params(context) for opt in [*param.opts, *param.secondary_opts]
    }
    problems = []
    for word in args:
        if word.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", word) and word != "-":
            option = word.split("=", 1)[0]
            if option not in options:
                problems.append(f"{' '.join(path)}: no option {option}")
    return problems


@pytest.fixture(scope="module")
def url_adapter():
    from searchsvc.app import create_app

    with tempfile.TemporaryDirectory() as index:
        app = create_app({"INDEX": index, "TESTING": True})
        yield app.url_map.bind("127.0.0.1")


def _curl_problems(words: list[str], adapter) -> list[str]:
    method = "GET"
    for flag, value in zip(words, [*words[1:], ""], strict=True):
        if flag in ("-X", "--request"):
            method = value
        elif flag in ("-d", "--data", "--data-binary", "--json") and method == "GET":
            method = "POST"
    urls = [w for w in words if w.startswith(("http://", "https://"))]
    if not urls:
        return [f"curl without a URL: {words}"]
    problems = []
    for url in urls:
        path = unquote(urlsplit(url).path).replace("<id>", "2301.00001")
        try:
            adapter.match(path, method=method)
        except Exception as exc:  # NotFound, MethodNotAllowed
            problems.append(f"{method} {path}: {type(exc).__name__}")
    return problems


def _docker_problems(words: list[str]) -> list[str]:
    if words[1:2] != ["compose"]:
        return [f"not a `docker compose` command: {words}"]
    files = [ROOT / "docker-compose.yml"]
    rest = words[2:]
    while rest and rest[0].startswith("-"):
        if rest[0] == "-f":
            files.append(ROOT / rest[1])
            rest = rest[2:]
        else:
            rest = rest[1:]
    services = set()
    for file in files:
        if not file.exists():
            return [f"no {file.name}"]
        services |= set(yaml.safe_load(file.read_text())["services"])
    if not rest:
        return ["docker compose without a subcommand"]
    if rest[0] in ("run", "exec"):
        names = [w for w in rest[1:] if not w.startswith("-")]
        if not names or names[0] not in services:
            return [f"docker compose {rest[0]}: no service {names[:1]}"]
    return []


def test_readme_shows_shell_commands_of_every_kind_the_checks_know():
    programs = {Path(words[0]).name for words in shell_commands(README.read_text())}
    assert {"make", "searchsvc", "curl", "docker"} <= programs


def test_every_command_in_readme_is_real(url_adapter):
    problems = []
    for words in shell_commands(README.read_text()):
        program = Path(words[0]).name
        if program == "make":
            targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
            problems += [f"make {t}: no such target" for t in targets if not _make_target_exists(t)]
        elif program == "searchsvc":
            problems += _searchsvc_problems(words[1:])
        elif program == "curl":
            problems += _curl_problems(words, url_adapter)
        elif program == "docker":
            problems += _docker_problems(words)
        else:
            problems.append(
                f"{' '.join(words)}: no check for {program!r}: add one to tests/test_docs.py"
            )
    assert not problems, problems


def test_every_make_target_the_pages_name_exists():
    named = set()
    for page in PAGES:
        named |= set(re.findall(r"`make ([a-z][a-z0-9-]*)(?=[`\s])", page.read_text()))
        for block in code_blocks(page.read_text()):
            for line in block.splitlines():
                words = line.split("#", 1)[0].split()
                if words[:1] == ["make"]:
                    named |= {w for w in words[1:] if "=" not in w and not w.startswith("-")}
    missing = sorted(t for t in named if not _make_target_exists(t))
    assert not missing, missing


def test_the_checks_catch_what_is_not_real(url_adapter):
    assert not _make_target_exists("no-such-target")
    assert _searchsvc_problems(["serach", "x"])
    assert _searchsvc_problems(["search", "x", "--no-such-option"])
    assert _searchsvc_problems(["keys", "forget"])
    assert not _searchsvc_problems(["search", "x", "--index", "index", "--from", "2022"])
    assert _curl_problems(["curl", "http://127.0.0.1:8000/api/v2/search"], url_adapter)
    assert not _curl_problems(["curl", "http://127.0.0.1:8000/api/v1/search?q=a"], url_adapter)
    assert _docker_problems(["docker", "compose", "run", "--rm", "nobody"])
    assert shell_commands("    A=1 .venv/bin/searchsvc stats | head  # a comment\n") == [
        [".venv/bin/searchsvc", "stats"],
        ["head"],
    ]


# ---------------------------------------------------------------------------- links


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -."""
    seen: dict[str, int] = {}
    anchors = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^#{1,6} (.+)$", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_relative_links_between_pages_lead_somewhere():
    broken = []
    for page in PAGES:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif (
                anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved.read_text())
            ):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_every_searchsvc_command_line_in_the_pages_is_real():
    """The guides' command lines and synopses (`searchsvc index SOURCE... [--update]`) name real
    commands and options."""
    problems = []
    for page in PAGES:
        for block in code_blocks(page.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                for part in re.split(r"\s(?:\||&&|;)\s", line.split("  #", 1)[0]):
                    words = part.split()
                    if not words or Path(words[0]).name != "searchsvc":
                        continue
                    args = [a for w in words[1:] for a in w.strip("[]").split("|")]
                    problems += [
                        f"{page.relative_to(ROOT)}: {p}" for p in _searchsvc_problems(args)
                    ]
    assert not problems, problems
