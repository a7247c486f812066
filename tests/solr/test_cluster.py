"""The local SolrCloud of `searchsvc solr` (searchsvc.devtools.solrcluster): it starts with every
node live, keeps its collections across a restart, notices a killed node and takes it back, and its
command line fails in one clear line when Java is missing."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import requests

from searchsvc.devtools.solrcluster import LocalCluster
from searchsvc.devtools.solrcluster.status import zookeeper_ok
from tests.solr.cluster import free_ports, running_cluster

pytestmark = pytest.mark.slow

# The smallest configset SolrCloud takes: the jars ship none (not even _default).
SOLRCONFIG = """<?xml version="1.0" encoding="UTF-8" ?>
<config>
  <luceneMatchVersion>9.12</luceneMatchVersion>
  <dataDir>${solr.data.dir:}</dataDir>
  <updateHandler class="solr.DirectUpdateHandler2">
    <updateLog><str name="dir">${solr.ulog.dir:}</str></updateLog>
  </updateHandler>
  <requestHandler name="/select" class="solr.SearchHandler"/>
</config>
"""
SCHEMA = """<?xml version="1.0" encoding="UTF-8" ?>
<schema name="tiny" version="1.6">
  <uniqueKey>id</uniqueKey>
  <fieldType name="string" class="solr.StrField" sortMissingLast="true"/>
  <fieldType name="plong" class="solr.LongPointField" docValues="true"/>
  <field name="id" type="string" indexed="true" stored="true" required="true"/>
  <field name="title" type="string" indexed="true" stored="true"/>
  <field name="_version_" type="plong" indexed="false" stored="false"/>
</schema>
"""


def admin(cluster: LocalCluster, path: str, **params: object) -> dict:
    """Call an admin API on the first node; fail the test on an error answer."""
    response = requests.get(f"{cluster.node_urls[0]}/admin/{path}", params=params, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


def create_tiny_collection(cluster: LocalCluster, name: str) -> None:
    """Upload the tiny configset (a zip, through the Configset API), create a collection of one
    shard with a replica on every node, index one document."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("solrconfig.xml", SOLRCONFIG)
        zipped.writestr("managed-schema.xml", SCHEMA)
    upload = requests.post(
        f"{cluster.node_urls[0]}/admin/configs",
        params={"action": "UPLOAD", "name": "tiny", "wt": "json"},
        data=archive.getvalue(),
        headers={"Content-Type": "application/octet-stream"},
        timeout=60,
    )
    assert upload.status_code == 200, upload.text
    admin(
        cluster,
        "collections",
        action="CREATE",
        name=name,
        numShards=1,
        replicationFactor=len(cluster.nodes),
        **{"collection.configName": "tiny"},
        wt="json",
    )
    update = requests.post(
        f"{cluster.node_urls[0]}/{name}/update",
        params={"commit": "true"},
        json=[{"id": "1", "title": "kept across restarts"}],
        timeout=60,
    )
    assert update.status_code == 200, update.text


def wait_for_document_count(cluster: LocalCluster, collection: str, timeout: float = 60) -> int:
    """numFound of *:* once the collection answers (its replicas load after the nodes start)."""
    deadline = time.monotonic() + timeout
    while True:
        response = requests.get(
            f"{cluster.node_urls[0]}/{collection}/select", params={"q": "*:*"}, timeout=30
        )
        if response.status_code == 200:
            return response.json()["response"]["numFound"]
        assert time.monotonic() < deadline, response.text
        time.sleep(0.5)


def test_the_cluster_starts_with_every_node_live(solr_cluster):
    assert solr_cluster.live_nodes() == sorted(solr_cluster.node_names)
    assert len(solr_cluster.node_names) == 2
    assert zookeeper_ok(solr_cluster.zk_port)
    assert solr_cluster.zk_address == f"127.0.0.1:{solr_cluster.zk_port}"
    first, second = solr_cluster.node_ports
    assert solr_cluster.node_urls == [
        f"http://127.0.0.1:{first}/solr",
        f"http://127.0.0.1:{second}/solr",
    ]
    assert solr_cluster.solr_location("papers") == (
        f"solr://127.0.0.1:{first},127.0.0.1:{second}/solr/papers"
    )
    # Each JVM is a process of its own, with its pid file in the data directory.
    pids = solr_cluster.running()
    assert len(set(pids.values())) == 3
    assert all((solr_cluster.data_dir / "pids" / f"{name}.pid").is_file() for name in pids)


def test_a_second_start_says_the_cluster_is_already_running(solr_cluster):
    from searchsvc.domain.errors import SolrClusterRunning

    again = LocalCluster.from_data_dir(solr_cluster.data_dir)
    assert again.node_ports == solr_cluster.node_ports
    with pytest.raises(SolrClusterRunning, match="already running"):
        again.start()


def test_a_restart_on_the_same_data_keeps_collections_and_documents(tmp_path):
    with running_cluster(tmp_path) as cluster:
        create_tiny_collection(cluster, "kept")
        assert wait_for_document_count(cluster, "kept") == 1
        cluster.stop()
        assert cluster.running() == {}
        assert cluster.live_nodes() == []
        # Another object on the same directory finds the same ports, ZooKeeper data and cores.
        again = LocalCluster.from_data_dir(cluster.data_dir)
        again.start()
        assert "kept" in (again.cluster_status() or {}).get("collections", {})
        assert wait_for_document_count(again, "kept") == 1


def test_a_killed_node_leaves_live_nodes_within_the_session_timeout_and_comes_back(tmp_path):
    timeout_ms = 5000
    with running_cluster(tmp_path, zk_client_timeout_ms=timeout_ms) as cluster:
        survivor, victim = cluster.node_names
        killed = time.monotonic()
        cluster.kill_node(1)
        assert cluster.nodes[1].name not in cluster.running()
        # ZooKeeper expires the session after the timeout, checked once per tick (1 s).
        cluster.wait_for_live_nodes([survivor], timeout=timeout_ms / 1000 + 10)
        assert time.monotonic() - killed < timeout_ms / 1000 + 10
        cluster.start_node(1)
        assert cluster.live_nodes() == sorted([survivor, victim])
        # A clean stop leaves live_nodes at once (the node ends its session).
        cluster.stop_node(1)
        assert cluster.wait_for_live_nodes([survivor], timeout=5)


def test_start_without_java_fails_in_one_clear_line(tmp_path):
    zk_port, node_port = free_ports(2)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # a directory without java (nor mvn)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from searchsvc.cli import main; main()",
            "solr",
            "start",
            "--data",
            str(tmp_path / "data"),
            "--ports",
            str(node_port),
            "--zk-port",
            str(zk_port),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "java" in lines[0] and "Java 17" in lines[0]
    assert not (tmp_path / "data" / "pids" / "zookeeper.pid").exists()


def test_the_solr_commands_have_help(runner):
    result = runner("solr", "--help")
    assert result.exit_code == 0
    assert all(command in result.output for command in ("start", "stop", "status"))
    for command in ("start", "stop", "status"):
        assert runner("solr", command, "--help").exit_code == 0


def test_stop_and_status_of_a_directory_without_a_cluster(runner, tmp_path: Path):
    stopped = runner("solr", "stop", "--data", tmp_path)
    assert stopped.exit_code == 0 and "no Solr cluster is running" in stopped.output
    status = runner("solr", "status", "--data", tmp_path)
    assert status.exit_code == 3 and "not running" in status.output
