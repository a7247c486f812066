"""Find Java and Maven, and build the Solr jars (solr/target) when they are missing or stale.

The jars are a build product, not part of the checkout: `mvn package` copies Solr's 141 runtime
jars to solr/target/lib and compiles the node launcher. A stamp file (the same one the Makefile
uses) records a finished build, so a half-done copy is never taken for a good one.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

from searchsvc.domain.errors import SolrClusterError

#: The Java release Solr 9 needs (and `solr/pom.xml` compiles for).
JAVA_RELEASE = 17

INSTALL_HINT = "install Java 17+ and Maven (Debian: apt-get install openjdk-17-jdk-headless maven)"


def default_solr_dir() -> Path:
    """The `solr/` project folder: beside the package in a checkout, or SEARCHSVC_SOLR_DIR."""
    override = os.environ.get("SEARCHSVC_SOLR_DIR")
    if override:
        return Path(override).resolve()
    return Path(__file__).resolve().parents[3] / "solr"


def stamp_path(solr: Path) -> Path:
    """Touched after a successful build; the Makefile's `solr/target/lib/.built` target too."""
    return solr / "target" / "lib" / ".built"


def classpath(solr: Path) -> str:
    """The node launcher's classes and every Solr jar, as `java -cp` takes them."""
    return os.pathsep.join([str(solr / "target" / "classes"), str(solr / "target" / "lib" / "*")])


def find_java() -> str:
    """The `java` to run: $JAVA_HOME/bin/java when set, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise SolrClusterError(f"`java` was not found (the local Solr needs it): {INSTALL_HINT}")
    return found


def check_java(java: str) -> None:
    """Refuse a Java older than 17 with a message, not a JVM class-version stack trace."""
    try:
        result = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise SolrClusterError(f"cannot run {java}: {exc}; {INSTALL_HINT}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if match is None:
        return  # An unusual JVM: let it try.
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" is Java 8
        major = int(match.group(2))
    if major < JAVA_RELEASE:
        raise SolrClusterError(
            f"{java} is Java {major}; Solr 9 needs Java {JAVA_RELEASE} or newer: {INSTALL_HINT}"
        )


def _sources(solr: Path) -> list[Path]:
    """What a build depends on. Folders count too: deleting a source changes its folder's time."""
    sources = [solr / "pom.xml"]
    src = solr / "src"
    if src.is_dir():
        sources.append(src)
        sources.extend(src.rglob("*"))
    return sources


def needs_build(solr: Path | None = None) -> bool:
    """True when the jars or classes are missing, or older than pom.xml or a source file."""
    solr = solr or default_solr_dir()
    stamp = stamp_path(solr)
    if not stamp.exists() or not (solr / "target" / "classes").is_dir():
        return True
    built = stamp.stat().st_mtime
    return any(path.stat().st_mtime > built for path in _sources(solr) if path.exists())


def build(solr: Path | None = None, *, force: bool = False) -> bool:
    """Run `mvn -B -q package` in solr/ when needed (or `force`); True when it ran.

    A file lock keeps two processes (the tests, `make solr`) from building at once; the second
    one finds the jars fresh when it gets the lock and does nothing.
    """
    solr = solr or default_solr_dir()
    if not (solr / "pom.xml").is_file():
        raise SolrClusterError(
            f"no Solr project at {solr} (expected pom.xml there; set SEARCHSVC_SOLR_DIR)"
        )
    if not force and not needs_build(solr):
        return False
    (solr / "target").mkdir(exist_ok=True)
    with open(solr / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and not needs_build(solr):
            return False
        find_java()  # Maven needs it too; say so first, it is the likelier one to be missing.
        mvn = shutil.which("mvn")
        if mvn is None:
            raise SolrClusterError(
                f"`mvn` was not found: the Solr jars in {solr / 'target'} are missing or stale "
                f"and Maven builds them; {INSTALL_HINT}"
            )
        result = subprocess.run(
            [mvn, "-B", "-q", "package"], cwd=solr, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            raise SolrClusterError(
                f"`mvn -B -q package` failed in {solr} (exit {result.returncode}):\n{tail}"
            )
        stamp_path(solr).touch()
    return True
