"""Regenerate searchsvc/domain/subjects/arxiv_taxonomy.json from arXiv's own taxonomy (arxiv-base).

    python scripts/make_subject_taxonomy.py [--wheel PATH] [--out PATH]

arXiv publishes its subject taxonomy as data in the `arxiv-base` package
(arxiv/taxonomy/definitions.py: GROUPS, ARCHIVES, CATEGORIES, CATEGORY_ALIASES,
ARCHIVES_SUBSUMED). Installing that package pulls uwsgi and old pinned dependencies, so the
service ships a JSON file made from it instead: this script downloads the wheel (`pip download
--no-deps`, or uses --wheel), loads definitions.py alone (it imports only `datetime`) and writes
the file with its provenance. Re-run it when arXiv adds categories; nothing else needs to change.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "searchsvc" / "subjects" / "arxiv_taxonomy.json"
PACKAGE = "arxiv-base"
DEFINITIONS = "arxiv/taxonomy/definitions.py"


def download_wheel(directory: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(directory), PACKAGE],
        check=True,
    )
    return next(directory.glob("arxiv_base-*.whl"))


def load_definitions(wheel: Path, directory: Path):
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read(DEFINITIONS)
    path = directory / "definitions.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("arxiv_taxonomy_definitions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def taxonomy(definitions) -> dict:
    groups = {
        code: {"name": group["name"]}
        for code, group in definitions.GROUPS.items()
        if not group.get("is_test")
    }
    archives = {
        code: {"name": archive["name"], "group": archive["in_group"]}
        for code, archive in definitions.ARCHIVES.items()
        if archive["in_group"] in groups
    }
    categories = {
        code: {"name": category["name"], "archive": category["in_archive"]}
        for code, category in definitions.CATEGORIES.items()
        if category["in_archive"] in archives
    }
    return {
        "groups": groups,
        "archives": archives,
        "categories": categories,
        # alias -> canonical category (an article in one is in the other)
        "aliases": dict(definitions.CATEGORY_ALIASES),
        # defunct archive -> the category that took it over
        "subsumed": dict(definitions.ARCHIVES_SUBSUMED),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="an arxiv-base wheel (default: download it)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or download_wheel(Path(tmp))
        data = taxonomy(load_definitions(wheel, Path(tmp)))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    document = {
        "provenance": {
            "source": f"{wheel.name} ({PACKAGE} on PyPI), {DEFINITIONS}",
            "sha256": digest,
            "license": "MIT (Copyright 2017 Cornell University)",
            "made_by": "scripts/make_subject_taxonomy.py",
        },
        **data,
    }
    args.out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    counts = ", ".join(f"{len(data[k])} {k}" for k in ("groups", "archives", "categories"))
    print(f"wrote {args.out} ({counts})")


if __name__ == "__main__":
    main()
