"""The documentation against the code (issue 35: every command shown in README and docs is run by
a test, or checked where running it is not possible here).

Run for real:

- README's "A tour" commands, read from README.md: its `curl` URLs, by the real `curl` binary
  against the app served by werkzeug on a free port over a seed index in a temp dir (200 and a
  JSON body with hits), and its `.venv/bin/searchsvc ...` lines, by this interpreter's
  `searchsvc` with `--index` pointed at that index (exit status 0 and some output).

Checked (the command is real, not run):

- README.md's shell commands: `make` targets exist (`make -n`), `searchsvc` commands and
  options exist in the click CLI, `curl` URLs are app routes with the curl's method, `docker
  compose` services exist in the Compose files.
- docs/**/*.md, CONTRIBUTING.md and ARCHITECTURE.md: every `make` target named exists; every
  `curl` URL in a code block is an app route with the right method (the host is ignored, and
  placeholder segments such as `<id>`, `{id}`, `KEY_ID` or `ssk_...` stand for route
  variables); every `searchsvc ...` command line in a code block (also after `docker compose
  run|exec SERVICE`) or an inline code span names real commands and options.
- The generated reference pages are current, and every relative link between the pages leads
  somewhere.

Out of scope (not checked mechanically): pip, python snippets, JSON/YAML/nginx configuration,
and the environment-variable settings the pages show.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

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
    return [
        words
        for block in code_blocks(text)
        for line in block.replace("\\\n", " ").splitlines()
        for words in line_commands(line)
    ]


def line_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line (ValueError when it does not lex, e.g. a quote
    left open)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands = []
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
        path = unquote(urlsplit(url).path)
        if not any(_route_matches(adapter, p, method) for p in _path_samples(path)):
            problems.append(f"{method} {path}: {_route_problem(adapter, path, method)}")
    return problems


# A placeholder a page writes for a path segment: <id>, {id}, ID, KEY_ID, $ID, ssk_... (hosts,
# YOUR-HOST among them, are never matched: only the path is).
PLACEHOLDER = re.compile(r"<[^>/]*>|\{[^}/]*\}|[A-Z][A-Z0-9_-]*|\$\w+|[^/]*\.\.\.[^/]*")
# What a placeholder may stand for: a record id (string and path converters) or a number (int).
PLACEHOLDER_SAMPLES = ("2301.00001", "1")


def _path_samples(path: str) -> list[str]:
    """The path, each placeholder segment replaced by each sample value a route variable takes."""
    segments = path.split("/")
    holes = [i for i, segment in enumerate(segments) if PLACEHOLDER.fullmatch(segment)]
    samples = []
    for value in PLACEHOLDER_SAMPLES:
        filled = list(segments)
        for i in holes:
            filled[i] = value
        samples.append("/".join(filled))
    return samples


def _route_matches(adapter, path: str, method: str) -> bool:
    try:
        adapter.match(path, method=method)
    except Exception:  # NotFound, MethodNotAllowed, RequestRedirect
        return False
    return True


def _route_problem(adapter, path: str, method: str) -> str:
    try:
        adapter.match(_path_samples(path)[0], method=method)
    except Exception as exc:
        return type(exc).__name__
    return "no match"


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


def test_every_curl_url_in_the_pages_is_a_route_with_its_method(url_adapter):
    """Every `curl` in the code blocks of README, CONTRIBUTING, ARCHITECTURE and docs/ asks for
    a route of the app with a method it answers; hosts are ignored and placeholder segments
    (`<id>`, `KEY_ID`, `ssk_...`) stand for route variables."""
    problems = []
    checked = 0
    for page in PAGES:
        for block in code_blocks(page.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                if not re.search(r"(?:^|[\s|;&(])curl\s", line.split("#", 1)[0]):
                    continue
                try:
                    # `<id>` left unquoted is a placeholder the reader replaces, not redirections
                    commands = line_commands(re.sub(r"<(\w[\w-]*)>", r"{\1}", line))
                except ValueError as exc:
                    problems.append(f"{page.relative_to(ROOT)}: {line.strip()}: {exc}")
                    continue
                for words in commands:
                    if Path(words[0]).name == "curl":
                        checked += 1
                        problems += [
                            f"{page.relative_to(ROOT)}: {problem}"
                            for problem in _curl_problems(words, url_adapter)
                        ]
    assert checked, "no `curl` found in the pages' code blocks: is code_blocks() broken?"
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
    assert not _curl_problems(["curl", "https://YOUR-HOST/api/v1/records/<id>"], url_adapter)
    assert not _curl_problems(["curl", "http://h/api/v1/records/<id>/similar"], url_adapter)
    assert not _curl_problems(["curl", "http://h/api/v1/tasks/TASK_ID"], url_adapter)
    assert not _curl_problems(["curl", "-X", "DELETE", "http://h/api/v1/records/ID"], url_adapter)
    assert _curl_problems(["curl", "-X", "DELETE", "http://h/api/v1/search"], url_adapter)
    assert _curl_problems(["curl", "-d", "{}", "http://h/api/v1/records/<id>/similar"], url_adapter)
    assert _curl_problems(["curl", "http://h/api/v1/<what>/x/y/z"], url_adapter)
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
        text = page.read_text()
        lines = [
            line.split("  #", 1)[0]
            for block in code_blocks(text)
            for line in block.replace("\\\n", " ").splitlines()
        ]
        # and the inline code spans of the prose (`searchsvc keys create NAME --scope read`)
        lines += re.findall(r"`((?:\S*/)?searchsvc [^`]+)`", text)
        for line in lines:
            for part in re.split(r"\s(?:\||&&|;)\s", line):
                words = part.split()
                names = [Path(w).name for w in words]
                if names[:2] == ["docker", "compose"] and "searchsvc" in names:
                    words = words[names.index("searchsvc") :]  # docker compose exec web searchsvc
                if not words or Path(words[0]).name != "searchsvc":
                    continue
                # synopses: [--opt], a|b, and click's shortened help (`--format...`)
                args = [
                    a.removesuffix("...") or a for w in words[1:] for a in w.strip("[]").split("|")
                ]
                problems += [f"{page.relative_to(ROOT)}: {p}" for p in _searchsvc_problems(args)]
    assert not problems, problems


# ---------------------------------------------------------------------------- README's tour, run


def tour_commands() -> list[list[str]]:
    """The shell commands of README's "A tour" section, as README shows them."""
    section = re.search(r"^## A tour\n(.*?)(?=^## |\Z)", README.read_text(), re.M | re.S)
    assert section, 'README.md has no "## A tour" section'
    return shell_commands(section.group(1))


@pytest.fixture(scope="module")
def tour_index(tmp_path_factory, seed_records) -> str:
    """A real index of the seed corpus, as `make run` builds `index/`, in a temp dir."""
    from tests.support import build_index

    return build_index(tmp_path_factory.mktemp("tour") / "index", seed_records)


@pytest.fixture(scope="module")
def tour_server(tour_index) -> Iterator[str]:
    """HOST:PORT of the app over the tour's index, served by werkzeug on a free port."""
    from werkzeug.serving import make_server

    from searchsvc.app import create_app

    app = create_app({"INDEX": tour_index, "TESTING": True})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def _served_here(word: str, netloc: str) -> str:
    """A URL word with its host:port replaced by the test's server; any other word as it is."""
    if not word.startswith(("http://", "https://")):
        return word
    url = urlsplit(word)
    return urlunsplit(("http", netloc, url.path, url.query, url.fragment))


def test_the_tour_curl_commands_answer_with_hits(tour_server, tmp_path):
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("needs the curl binary (apt-get install curl) to run README's tour")
    commands = [words for words in tour_commands() if Path(words[0]).name == "curl"]
    assert commands, 'README\'s "A tour" shows no curl command'
    for number, words in enumerate(commands):
        body = tmp_path / f"answer-{number}.json"
        result = subprocess.run(
            [
                curl,
                *[_served_here(word, tour_server) for word in words[1:]],
                "--silent",
                "--show-error",
                "--noproxy",
                "*",
                "--output",
                str(body),
                "--write-out",
                "%{http_code}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{shlex.join(words)}: {result.stderr}"
        assert result.stdout == "200", f"{shlex.join(words)}: {result.stdout} {body.read_text()}"
        answer = json.loads(body.read_text())
        assert answer["hits"], f"{shlex.join(words)}: no hits: {answer}"


def _on_index(args: list[str], index: str) -> list[str]:
    """ARGS with the index README names (`--index index`) replaced by INDEX."""
    out = []
    for word, previous in zip(args, ["", *args], strict=False):
        if previous == "--index":
            out.append(index)
        elif word.startswith("--index="):
            out.append(f"--index={index}")
        else:
            out.append(word)
    return out


def test_the_tour_searchsvc_commands_run(tour_index, tmp_path):
    searchsvc = Path(sys.executable).parent / "searchsvc"
    assert searchsvc.exists(), f"no {searchsvc}: install the package (pip install -e .)"
    commands = [words for words in tour_commands() if Path(words[0]).name == "searchsvc"]
    assert commands, 'README\'s "A tour" shows no searchsvc command'
    for words in commands:
        assert "--index" in words, (
            f"{shlex.join(words)}: the tour runs on the index `make run` serves"
        )
        result = subprocess.run(
            [str(searchsvc), *_on_index(words[1:], tour_index)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{shlex.join(words)}: {result.stdout}{result.stderr}"
        assert result.stdout.strip(), f"{shlex.join(words)}: no output"
