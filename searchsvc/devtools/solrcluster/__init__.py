"""A local SolrCloud for development and tests: ZooKeeper and Solr nodes as separate JVMs.

No Solr distribution can be had on the machines this project runs on, but Maven Central can:
`solr/pom.xml` fetches Solr 9's jars and `solr/src/.../SolrNode.java` runs one node from them.
This package builds those jars when needed, starts ZooKeeper and the nodes as processes of their
own (so a test can kill one node), waits until the cluster says every node is live, and keeps
pid files in the data directory so another shell can stop a detached cluster.

    with LocalCluster("solr/data") as cluster:   # start() ... stop()
        cluster.solr_location("papers")          # solr://127.0.0.1:8983,127.0.0.1:8984/solr/papers
"""

from __future__ import annotations

from searchsvc.devtools.solrcluster.build import default_solr_dir, needs_build
from searchsvc.devtools.solrcluster.cluster import DEFAULT_NODE_PORTS, DEFAULT_ZK_PORT, LocalCluster

__all__ = [
    "DEFAULT_NODE_PORTS",
    "DEFAULT_ZK_PORT",
    "LocalCluster",
    "default_solr_dir",
    "needs_build",
]
