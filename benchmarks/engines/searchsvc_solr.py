"""searchsvc on SolrCloud: the same SearchRequest through `SolrBackend.search`.

The cache entry holds a local cluster's data (ZooKeeper and two nodes,
searchsvc/devtools/solrcluster): `build` starts it on free ports, fills a 2 x 2 collection through
the engine contract and stops it; `open` starts it again on the kept data; `close` stops it. Needs
Java 17+ and Maven.
"""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Sequence

from benchmarks.common import code_digest
from benchmarks.engines import Answer, Engine, EngineUnavailable, Task
from benchmarks.engines.searchsvc_core import SearchsvcEngine
from searchsvc.domain.records import Record

COLLECTION = "bench"
_INDEX_CODE = (
    "searchsvc/backends/solr/configset/conf/schema.xml",
    "searchsvc/backends/solr/configset/conf/solrconfig.xml",
    "searchsvc/backends/solr/documents.py",
)


class SearchsvcSolrEngine(Engine):
    name = "searchsvc_solr"
    description = "searchsvc search core on a local SolrCloud (SolrBackend, 2 shards x 2 replicas)"

    @classmethod
    def check_available(cls) -> None:
        if not shutil.which("java") or not shutil.which("mvn"):
            raise EngineUnavailable("needs Java 17+ and Maven (java, mvn) for a local SolrCloud")

    @classmethod
    def index_version(cls, **options: object) -> str:
        return f"v1-{code_digest(_INDEX_CODE)}"

    def _cluster(self):
        from searchsvc.devtools.solrcluster import LocalCluster

        # ZooKeeper knows the nodes by address: a kept cluster restarts on the ports it was
        # built with (saved beside its data), free ones for a new one.
        saved = self.index_dir / "ports.json"
        if saved.exists():
            ports = json.loads(saved.read_text())
        else:
            ports = _free_ports(3)
            saved.write_text(json.dumps(ports))
        zk_port, *node_ports = ports
        return LocalCluster(self.index_dir / "cluster", node_ports=node_ports, zk_port=zk_port)

    def build(self, records: Sequence[Record]) -> None:
        from searchsvc.backends import open_backend

        cluster = self._cluster()
        cluster.start()
        try:
            with open_backend(cluster.solr_location(COLLECTION)) as backend:
                backend.rebuild(list(records))
        finally:
            cluster.stop()

    def open(self) -> None:
        from searchsvc.backends import open_backend
        from searchsvc.domain.query import SearchRequest

        self.cluster = self._cluster()
        self.cluster.start()
        self.request_type = SearchRequest
        self.backend = open_backend(self.cluster.solr_location(COLLECTION))
        # Lexical only here (SearchsvcEngine.search embeds the query when there is an encoder).
        self.mode, self.encoder = "lexical", None

    def close(self) -> None:
        self.backend.close()
        self.cluster.stop()

    request = SearchsvcEngine.request

    def search(self, task: Task) -> Answer:
        return SearchsvcEngine.search(self, task)  # type: ignore[arg-type]


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
