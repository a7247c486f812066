"""docker-compose.yml and the Dockerfile parse, refer to what exists, run the Makefile commands."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
# What the serving and indexing commands are, whatever the address and paths they are given:
# the service as deployed (nginx in front of gunicorn), and gunicorn alone for development.
SERVE = ["searchsvc", "serve", "--index", "*", "--bind", "*"]
GUNICORN = [
    "gunicorn",
    "--config",
    "python:searchsvc.serving.gunicorn_conf",
    "--bind",
    "*",
    "wsgi:app",
]
INDEX = ["searchsvc", "index", "*", "--index", "*"]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def matches(command: list[str], pattern: list[str]) -> bool:
    return len(command) == len(pattern) and all(
        p == "*" or c == p for c, p in zip(command, pattern, strict=True)
    )


def makefile_commands() -> list[list[str]]:
    """The Makefile's shell commands, continuation lines joined, `$(BIN)/` dropped."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        if line.startswith("\t"):
            words = shlex.split(line.replace("$(BIN)/", ""))
            # Drop leading VAR=value assignments.
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words.pop(0)
            commands.append(words)
    return commands


def makefile_target_commands(target: str) -> list[list[str]]:
    """The shell commands of one Makefile target, as `makefile_commands` gives them."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    recipe = text.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
    lines = [line for line in recipe.splitlines()[1:] if line.startswith("\t")]
    commands = []
    for line in lines:
        words = shlex.split(line.replace("$(BIN)/", ""))
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words.pop(0)
        commands.append(words)
    return commands


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def test_compose_has_an_indexer_a_web_service_and_a_writer_sharing_the_index(compose):
    services = compose["services"]
    assert set(services) == {"indexer", "web", "writer"}
    indexer, web, writer = services["indexer"], services["web"], services["writer"]
    assert matches(indexer["command"], INDEX)
    assert matches(web["command"], SERVE)
    assert web["depends_on"]["indexer"]["condition"] == "service_completed_successfully"
    index_volume = indexer["command"][indexer["command"].index("--index") + 1]
    assert f"index:{index_volume}" in indexer["volumes"]
    # Writable: the workers queue writes there; the writer, its own process, applies them.
    assert f"index:{index_volume}" in web["volumes"]
    assert web["environment"]["SEARCHSVC_WRITER"] == "off"
    assert writer["command"] == ["searchsvc", "writer", "--index", index_volume]
    assert f"index:{index_volume}" in writer["volumes"]
    assert writer["restart"] == "unless-stopped"
    assert web["environment"]["SEARCHSVC_INDEX"] == index_volume
    assert "index" in compose["volumes"]


def test_compose_web_healthcheck_probes_readiness(compose):
    test = " ".join(compose["services"]["web"]["healthcheck"]["test"])
    assert "/readyz" in test


def test_compose_refers_to_files_that_exist(compose):
    for service in compose["services"].values():
        if "build" in service:
            context = ROOT / service["build"]
            assert (context / "Dockerfile").is_file()
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            # ${VAR:-default}: the default must exist.
            source = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", source)
            if source.startswith((".", "/")):
                assert (ROOT / source).exists(), source
    serve = compose["services"]["web"]["command"]
    from searchsvc.cli import main

    assert serve[1] in main.commands, serve
    # gunicorn's config (`python:MODULE`) is a module of the installed package, found by import.
    (gunicorn,) = makefile_target_commands("run-gunicorn")
    module = gunicorn[gunicorn.index("--config") + 1].removeprefix("python:")
    assert importlib.util.find_spec(module) is not None, module


def test_dockerfile_copies_files_that_exist():
    for keyword, rest in dockerfile_instructions():
        if keyword == "COPY" and not rest.startswith("--from="):  # not from a build stage
            *sources, _ = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), source


def test_dockerfile_serves_with_the_makefile_command():
    commands = [rest for keyword, rest in dockerfile_instructions() if keyword == "CMD"]
    assert len(commands) == 1
    command = json.loads(commands[0])
    assert matches(command, SERVE)
    (run,) = makefile_target_commands("run")
    assert matches(run, SERVE)
    in_makefile = [c for c in makefile_commands() if c and c[0] == "gunicorn"]
    assert in_makefile, "the Makefile has no gunicorn command (for development)"
    assert all(matches(c, GUNICORN) for c in in_makefile)


def test_the_image_installs_nginx_and_the_package_ships_its_config():
    # `searchsvc serve` runs nginx, and writes its config from a template in the package.
    installs = [rest for keyword, rest in dockerfile_instructions() if "apt-get install" in rest]
    assert any(re.search(r"\bnginx\b", rest) for rest in installs)
    assert "serving/*.template" in (ROOT / "pyproject.toml").read_text()
    from importlib import resources

    template = resources.files("searchsvc.serving").joinpath("nginx.conf.template")
    assert "proxy_pass" in template.read_text()
    assert "nginx" in (ROOT / ".ci" / "run").read_text()


def test_indexer_runs_the_makefile_index_command(compose):
    in_makefile = [c for c in makefile_commands() if c[:2] == ["searchsvc", "index"]]
    assert in_makefile and all(matches(c, INDEX) for c in in_makefile)
    assert compose["services"]["indexer"]["command"][:2] == in_makefile[0][:2]
    assert "searchsvc index seeds/ --index /data/index" in DOCKERFILE.read_text()


def test_readme_serving_commands_are_the_dockerfile_and_makefile_ones():
    # The commands `make run` and `make run-gunicorn` run, as the deployment guide shows them.
    readme = (ROOT / "docs" / "guides" / "deployment.md").read_text()
    seen = set()
    for line in readme.splitlines():
        line = line.strip().strip("`")
        for marker, pattern in (("bin/searchsvc serve", SERVE), ("gunicorn --config", GUNICORN)):
            if marker in line:
                words = shlex.split(line)
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    words.pop(0)
                words[0] = Path(words[0]).name  # .venv/bin/gunicorn
                assert matches(words, pattern), line
                seen.add(marker)
    assert seen == {"bin/searchsvc serve", "gunicorn --config"}


def test_docker_compose_config_accepts_the_file():
    for command in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(command[0]) is None:
            continue
        probe = subprocess.run([*command, "version"], capture_output=True, timeout=30)
        if probe.returncode != 0:
            continue
        result = subprocess.run(
            [*command, "-f", str(COMPOSE), "config", "--quiet"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stderr
        return
    pytest.skip("neither `docker compose` nor `docker-compose` is installed")


def test_the_solr_override_points_every_service_at_one_collection(compose):
    """docker-compose.solr.yml adds ZooKeeper and two Solr nodes and moves the indexer, web and
    writer to one solr:// location the backend accepts; the task queue stays in the volume."""
    from searchsvc.backends import checked_location

    override = yaml.safe_load((ROOT / "docker-compose.solr.yml").read_text())
    services = override["services"]
    assert {"zookeeper", "solr1", "solr2"} <= set(services)
    locations = set()
    for name in ("indexer", "web", "writer"):
        assert name in compose["services"]  # extends a service of the base file
        environment = services[name]["environment"]
        locations.add(environment["SEARCHSVC_INDEX"])
        assert environment["SEARCHSVC_TASKS_DB"].startswith("/data/index/")
    assert services["indexer"]["command"][-1] in locations
    assert matches(services["indexer"]["command"], INDEX)
    assert services["writer"]["command"] == ["searchsvc", "writer", "--index", *locations]
    (location,) = locations
    assert checked_location(location).startswith("solr://solr1:8983,solr2:8983/")
    for node in ("solr1", "solr2"):
        assert services[node]["environment"]["ZK_HOST"].startswith("zookeeper:")
