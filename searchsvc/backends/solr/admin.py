"""The collections behind a location: the configset uploaded, collections created and swapped.

The name in a location (`.../solr/papers`) is an alias the backend owns. Each rebuild fills a
new collection (`papers_g<N>`) and then points the alias at it, in one step, so readers see the
old index or the new one, never a half-built one; the old collection is deleted after the
swap. The configset is uploaded under a name carrying a digest of its files, so a changed
schema goes to new collections without touching the ones in use.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import time
import zipfile
from importlib import resources
from importlib.resources.abc import Traversable

from searchsvc.backends.solr.connection import SolrConnection
from searchsvc.domain.errors import IndexUnavailable

COLLECTIONS = "/admin/collections"
CONFIGS = "/admin/configs"
# Creating a collection waits for its replicas to be active; generous for a loaded cluster.
ADMIN_TIMEOUT = 180.0


def configset_files() -> dict[str, bytes]:
    """The shipped configset's files (solrconfig.xml, schema.xml, stopwords.txt)."""
    conf = resources.files("searchsvc.backends.solr").joinpath("configset/conf")
    return {entry.name: entry.read_bytes() for entry in _files(conf)}


def configset_name() -> str:
    digest = hashlib.sha256()
    for name, data in sorted(configset_files().items()):
        digest.update(name.encode() + b"\0" + data + b"\0")
    return f"searchsvc-{digest.hexdigest()[:12]}"


class Collections:
    """Collections API calls for one location's alias."""

    def __init__(self, connection: SolrConnection, alias: str, shards: int, replicas: int):
        self.connection = connection
        self.alias = alias
        self.shards = shards
        self.replicas = replicas

    def target(self) -> str | None:
        """The collection the alias names (or the name itself, if it is a plain collection);
        None when there is neither."""
        status = self.connection.get(COLLECTIONS, {"action": "LISTALIASES"})
        aliases = status.get("aliases", {})
        if self.alias in aliases:
            return str(aliases[self.alias]).split(",")[0]
        if self.alias in self.collections():
            return self.alias
        return None

    def collections(self) -> list[str]:
        return list(self.connection.get(COLLECTIONS, {"action": "LIST"}).get("collections", []))

    def generations(self) -> list[str]:
        """This alias's collections (`ALIAS_g<N>`), oldest first."""
        prefix = f"{self.alias}_g"
        found = [
            c for c in self.collections() if c.startswith(prefix) and c[len(prefix) :].isdigit()
        ]
        return sorted(found, key=lambda c: int(c[len(prefix) :]))

    def create_generation(self) -> str:
        """A new, empty collection for this alias (not yet pointed at)."""
        self.ensure_configset()
        # Milliseconds: later generations sort after earlier ones, and two are never equal.
        name = f"{self.alias}_g{time.time_ns() // 1_000_000}"
        self.connection.get(
            COLLECTIONS,
            {
                "action": "CREATE",
                "name": name,
                "numShards": self.shards,
                "replicationFactor": self.replicas,
                "collection.configName": configset_name(),
                "waitForFinalState": "true",
            },
            timeout=ADMIN_TIMEOUT,
        )
        return name

    def point_alias(self, collection: str) -> None:
        self.connection.get(
            COLLECTIONS,
            {"action": "CREATEALIAS", "name": self.alias, "collections": collection},
            timeout=ADMIN_TIMEOUT,
        )

    def delete(self, collection: str) -> None:
        # Already gone, or the cluster fails now: the next rebuild deletes it.
        with contextlib.suppress(IndexUnavailable):
            self.connection.get(
                COLLECTIONS, {"action": "DELETE", "name": collection}, timeout=ADMIN_TIMEOUT
            )

    def delete_older_than(self, keep: str) -> None:
        """The alias's generations other than `keep` (left behind by a swap or a failure)."""
        for name in self.generations():
            if name != keep:
                self.delete(name)

    def ensure_configset(self) -> None:
        name = configset_name()
        listed = self.connection.get(CONFIGS, {"action": "LIST"}).get("configSets", [])
        if name in listed:
            return
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for file_name, data in configset_files().items():
                archive.writestr(file_name, data)
        self.connection.request(
            "POST",
            CONFIGS,
            {"action": "UPLOAD", "name": name, "overwrite": "true"},
            data=buffer.getvalue(),
            headers={"Content-Type": "application/octet-stream"},
            timeout=ADMIN_TIMEOUT,
        )


def _files(folder: Traversable) -> list[Traversable]:
    return sorted((entry for entry in folder.iterdir() if entry.is_file()), key=lambda e: e.name)
