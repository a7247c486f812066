"""HTTP to a SolrCloud: JSON answers from any live node, Solr's failures as the service's errors.

A request goes to the node that answered last; when a node does not answer (down, killed,
restarting) the next one is tried, and the cluster's live nodes are asked for again, so a
cluster that loses a node keeps answering. Solr's own error answers never reach a client as
they are: a rejected request becomes InvalidRequest (400), anything else IndexUnavailable (503).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import requests

from searchsvc.backends.solr.location import SolrLocation
from searchsvc.domain.errors import IndexUnavailable, InvalidRequest, SearchsvcError

CONNECT_TIMEOUT = 3.0
# How often the cluster's live nodes are asked for (after a request a node answered), and how
# long that request may take.
LIVE_NODES_INTERVAL = 60.0
LIVE_NODES_TIMEOUT = 5.0
# Messages Solr gives when the collection (or alias) is not there.
_MISSING = ("not found", "could not find collection", "no such collection")
# Longest part of a Solr error message passed on to a client.
_MAX_MESSAGE = 300
# A Java class name of an exception or error, with its colon (see _message).
_JAVA_CLASS = re.compile(r"\b(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)\b:?\s*")

Params = Sequence[tuple[str, str | int | float]] | Mapping[str, Any]


class CollectionMissing(IndexUnavailable):
    """The collection (or alias) named by the location does not exist (yet)."""


class SolrConnection:
    """JSON requests to a SolrCloud's nodes, failing over between them; thread-safe."""

    def __init__(self, location: SolrLocation) -> None:
        self.location = location
        self._session = requests.Session()
        self._lock = threading.Lock()
        self._nodes: list[str] = list(location.base_urls)
        self._nodes_learnt_at: float | None = None

    def get(self, path: str, params: Params | None = None, **options: Any) -> dict[str, Any]:
        return self.request("GET", path, params=params, **options)

    def post(self, path: str, params: Params | None = None, **options: Any) -> dict[str, Any]:
        return self.request("POST", path, params=params, **options)

    def request(
        self,
        method: str,
        path: str,
        params: Params | None = None,
        *,
        json: Any = None,
        data: Any = None,
        form: bool = False,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        collection: str | None = None,
        node: str | None = None,
    ) -> dict[str, Any]:
        """The JSON answer of `path` on some node; `path` is relative to the collection
        (`collection` or the location's) unless it starts with `/` (`/admin/collections`).

        `form` sends `params` as a form body (long queries do not fit in a URL). A node that
        cannot be reached is skipped. `node` (a base URL) asks that node alone (for its own
        cores' state).
        """
        if path.startswith("/"):
            suffix = path
        else:
            suffix = f"/{collection or self.location.collection}/{path}"
        read_timeout = timeout or self.location.timeout
        pairs = [*_pairs(params), ("wt", "json")]
        payload: dict[str, Any] = (
            {"data": pairs} if form else {"params": pairs, "json": json, "data": data}
        )
        failures: list[str] = []
        for base in [node] if node else self._candidates():
            try:
                response = self._session.request(
                    method,
                    base + suffix,
                    headers=headers,
                    timeout=(CONNECT_TIMEOUT, read_timeout),
                    **payload,
                )
            except requests.ReadTimeout:
                # The node took the request: another would not answer sooner.
                raise IndexUnavailable(
                    f"Solr did not answer within {read_timeout:g} s", engine="solr"
                ) from None
            except requests.RequestException as exc:
                failures.append(f"{base}: {type(exc).__name__}")
                self._forget(base)
                continue
            self._prefer(base)
            answer = _answer(response, self.location.collection if not path.startswith("/") else "")
            if node is None:
                self._learn_live_nodes()
            return answer
        raise IndexUnavailable(
            f"no Solr node of {self.location.url} answered", engine="solr", tried=len(failures)
        )

    def live_nodes(self, timeout: float | None = None) -> list[str]:
        """The base URLs of the cluster's live nodes (from any node that answers)."""
        # includeAll=false: live_nodes alone, not every collection's state (Solr 9.10; older
        # releases ignore both parameters and send everything, live_nodes included).
        answer = self.get(
            "/admin/collections",
            {"action": "CLUSTERSTATUS", "includeAll": "false", "liveNodes": "true"},
            timeout=timeout,
        )
        nodes = answer.get("cluster", {}).get("live_nodes", [])
        return [_node_url(node, self.location.context) for node in nodes]

    def close(self) -> None:
        self._session.close()

    # -- node choice -------------------------------------------------------------------------
    def _learn_live_nodes(self) -> None:
        """Add the cluster's live nodes to the nodes tried, after the known ones; at most once
        every LIVE_NODES_INTERVAL, after a node answered.

        Without this only the location's nodes were ever tried: a location naming one node (the
        README says any listed node will do) failed every request once that node was lost, the
        other nodes answering all along (tests/solr/test_failover.py).
        """
        now = time.monotonic()
        with self._lock:
            learnt = self._nodes_learnt_at
            if learnt is not None and now - learnt < LIVE_NODES_INTERVAL:
                return
            # Set first: the question is a request of its own, which comes back here.
            self._nodes_learnt_at = now
        try:
            live = self.live_nodes(timeout=LIVE_NODES_TIMEOUT)
        except SearchsvcError:
            return  # asked again after the next interval; the known nodes serve meanwhile
        with self._lock:
            self._nodes += [base for base in live if base not in self._nodes]

    def _candidates(self) -> list[str]:
        with self._lock:
            nodes = list(self._nodes)
        # The configured nodes come after the known ones: a node that was down may be back.
        for base in self.location.base_urls:
            if base not in nodes:
                nodes.append(base)
        return nodes

    def _prefer(self, base: str) -> None:
        with self._lock:
            if self._nodes and self._nodes[0] == base:
                return
            self._nodes = [base, *(node for node in self._nodes if node != base)]

    def _forget(self, base: str) -> None:
        with self._lock:
            self._nodes = [node for node in self._nodes if node != base] + [base]


def _pairs(params: Params | None) -> list[tuple[str, Any]]:
    if params is None:
        return []
    if isinstance(params, Mapping):
        return list(params.items())
    return list(params)


def _node_url(node: str, context: str) -> str:
    # Live node names are "host:port_context".
    address, _, _ = node.partition("_")
    return f"http://{address}/{context}"


def _answer(response: requests.Response, collection: str) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code == 200 and isinstance(body, dict):
        return body
    message = _message(body) or response.reason or f"HTTP {response.status_code}"
    lowered = message.lower()
    if response.status_code == 404 or (
        collection and any(marker in lowered for marker in _MISSING) and collection in message
    ):
        raise CollectionMissing(
            f"there is no index in the Solr collection {collection!r} yet"
            if collection
            else f"Solr: {message}",
            engine="solr",
        )
    if response.status_code == 400:
        raise InvalidRequest(f"Solr refused the request: {message}", engine="solr")
    raise IndexUnavailable(
        f"Solr could not answer (HTTP {response.status_code}): {message}", engine="solr"
    )


def _message(body: Any) -> str:
    """The first line of Solr's error message, without its Java stack trace, shortened."""
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    text = ""
    if isinstance(error, dict):
        text = str(error.get("msg") or "")
    elif isinstance(body.get("exception"), dict):
        text = str(body["exception"].get("msg") or "")
    elif body.get("failure"):
        text = str(body["failure"])
    first = text.strip().splitlines()[0] if text.strip() else ""
    # Solr prefixes some messages with its Java exception's class ("org.apache.solr.search.
    # SyntaxError: Cannot parse ..."), which reached API responses and the web page as it was:
    # the class names are Solr's internals, not the service's error.
    first = _JAVA_CLASS.sub("", first).strip()
    return first[:_MAX_MESSAGE]
