"""Ask the running cluster how it is: ZooKeeper's `ruok`, Solr's CLUSTERSTATUS.

`requests` is imported only when a node is asked, so that `searchsvc --help` and the rest of the
command line do not need it (it is an optional dependency: the `client` and `test` extras).
"""

from __future__ import annotations

import json
import socket
from types import ModuleType
from typing import Any

from searchsvc.domain.errors import SolrClusterError

CLUSTERSTATUS = "/admin/collections?action=CLUSTERSTATUS&wt=json"


def zookeeper_ok(port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> bool:
    """True when ZooKeeper answers `ruok` with `imok` (4-letter words are enabled in zoo.cfg)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"ruok")
            return sock.recv(16) == b"imok"
    except OSError:
        return False


def cluster_status(node_url: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """The `cluster` part of CLUSTERSTATUS from one node (`http://127.0.0.1:8983/solr`), or None
    when the node does not answer, or answers with an error (it is still starting)."""
    requests = _requests()
    try:
        response = requests.get(node_url + CLUSTERSTATUS, timeout=timeout)
    except requests.RequestException:
        return None
    if response.status_code != 200:
        return None
    try:
        cluster = response.json().get("cluster")
    except (ValueError, json.JSONDecodeError):
        return None
    return cluster if isinstance(cluster, dict) else None


def live_nodes(node_url: str, timeout: float = 5.0) -> list[str] | None:
    """The live nodes (`127.0.0.1:8983_solr`) one node knows of; None if it does not answer."""
    status = cluster_status(node_url, timeout)
    if status is None:
        return None
    return sorted(status.get("live_nodes") or [])


def _requests() -> ModuleType:
    try:
        import requests
    except ImportError as exc:
        raise SolrClusterError(
            "the local Solr launcher needs `requests`: pip install 'searchsvc[client]'"
        ) from exc
    return requests
