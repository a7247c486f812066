"""LocalCluster: ZooKeeper and N Solr nodes, each its own JVM, with their data in one directory.

Layout of the data directory (kept between runs, so collections survive a restart):

    cluster.json            the ports and timeout it was last started with (for `stop`/`status`)
    zookeeper/zoo.cfg       rewritten at each start; zookeeper/data/ holds the cluster state
    node-8983/              a node's Solr home: solr.xml (written by the node) and its cores
    logs/zookeeper.log, logs/node-8983.log
    pids/zookeeper.pid, pids/node-8983.pid
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from searchsvc.devtools.solrcluster.build import build as build_jars
from searchsvc.devtools.solrcluster.build import check_java, classpath, default_solr_dir, find_java
from searchsvc.devtools.solrcluster.processes import Managed, log_tail, port_in_use, stop_all
from searchsvc.devtools.solrcluster.status import cluster_status, live_nodes, zookeeper_ok
from searchsvc.domain.errors import SolrClusterError, SolrClusterRunning

DEFAULT_NODE_PORTS = (8983, 8984)
DEFAULT_ZK_PORT = 9983
#: Solr's own default. A killed node leaves live_nodes only after this; tests use less.
DEFAULT_ZK_CLIENT_TIMEOUT_MS = 30000
HOST = "127.0.0.1"
CONTEXT = "solr"

# Measured to start fastest and smallest (shared notes): C1 only, one GC thread, a small heap.
FAST_JVM = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
STATE_FILE = "cluster.json"


class LocalCluster:
    """A SolrCloud on this machine: start, stop, and stop or kill single nodes (for tests).

    The processes outlive this object unless `stop()` is called (a `with` block calls it), so a
    cluster started by one command can be stopped by another: `LocalCluster.from_data_dir(path)`
    finds it again through the pid files.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        node_ports: Sequence[int] = DEFAULT_NODE_PORTS,
        zk_port: int = DEFAULT_ZK_PORT,
        zk_client_timeout_ms: int = DEFAULT_ZK_CLIENT_TIMEOUT_MS,
        *,
        heap: str = "512m",
        log_level: str = "WARN",
        java_options: Sequence[str] = (),
        solr_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not node_ports:
            raise SolrClusterError("a Solr cluster needs at least one node port")
        ports = [int(port) for port in node_ports]
        if len(set(ports) | {zk_port}) != len(ports) + 1:
            raise SolrClusterError(f"node ports {ports} and ZooKeeper port {zk_port} must differ")
        self.data_dir = Path(data_dir).resolve()
        self.node_ports = ports
        self.zk_port = int(zk_port)
        self.zk_client_timeout_ms = int(zk_client_timeout_ms)
        self.heap = heap
        self.log_level = log_level
        self.java_options = list(java_options)
        self.solr_dir = Path(solr_dir).resolve() if solr_dir else default_solr_dir()
        self._java: str | None = None
        self.zookeeper = self._zookeeper_process()
        self.nodes = [self._node_process(port) for port in self.node_ports]

    # ---- finding a cluster again ----

    @classmethod
    def from_data_dir(cls, data_dir: str | os.PathLike[str], **overrides: Any) -> LocalCluster:
        """The cluster last started in `data_dir`, with the ports it was started with.

        Falls back to the defaults when it was never started (nothing will be running then).
        """
        settings: dict[str, Any] = {}
        state = Path(data_dir) / STATE_FILE
        if state.is_file():
            try:
                saved = json.loads(state.read_text())
                settings = {
                    "node_ports": saved["node_ports"],
                    "zk_port": saved["zk_port"],
                    "zk_client_timeout_ms": saved["zk_client_timeout_ms"],
                }
            except (ValueError, KeyError, TypeError) as exc:
                raise SolrClusterError(f"cannot read {state}: {exc}") from exc
        settings.update(overrides)
        return cls(data_dir, **settings)

    # ---- addresses ----

    @property
    def zk_address(self) -> str:
        """ZooKeeper's `host:port`, the zkHost of the nodes (and of SolrJ-style clients)."""
        return f"{HOST}:{self.zk_port}"

    @property
    def node_urls(self) -> list[str]:
        """Each node's base URL, `http://127.0.0.1:8983/solr`."""
        return [f"http://{HOST}:{port}/{CONTEXT}" for port in self.node_ports]

    @property
    def node_names(self) -> list[str]:
        """Each node's name as live_nodes lists it, `127.0.0.1:8983_solr`."""
        return [f"{HOST}:{port}_{CONTEXT}" for port in self.node_ports]

    def solr_location(self, collection: str) -> str:
        """The index location of `collection` on this cluster, for `--index` / SEARCHSVC_INDEX:
        `solr://127.0.0.1:8983,127.0.0.1:8984/solr/COLLECTION`."""
        hosts = ",".join(f"{HOST}:{port}" for port in self.node_ports)
        return f"solr://{hosts}/{CONTEXT}/{collection}"

    # ---- building ----

    def build(self) -> bool:
        """Build the jars when missing or stale (`searchsvc.devtools.solrcluster.build`); True if
        built."""
        return build_jars(self.solr_dir)

    # ---- starting and stopping ----

    def running(self) -> dict[str, int]:
        """The processes of this cluster that are running now: name -> pid."""
        found = {}
        for process in [self.zookeeper, *self.nodes]:
            pid = process.pid()
            if pid is not None:
                found[process.name] = pid
        return found

    def start(self, timeout: float = 180.0) -> None:
        """Start ZooKeeper, then the nodes, and wait until every node is in live_nodes.

        Builds the jars first when needed. Processes of this cluster that are already running
        are left as they are (so `start` also restarts a killed node); when all are, it raises
        SolrClusterRunning. On failure, what this call started is stopped again, and the error
        shows the end of the log of the process that failed.
        """
        self._refuse_other_cluster_in_data_dir()
        if len(self.running()) == 1 + len(self.nodes):
            raise SolrClusterRunning(
                f"the Solr cluster in {self.data_dir} is already running "
                f"({self.solr_location('COLLECTION')}); stop it with "
                f"`searchsvc solr stop --data {self.data_dir}`",
            )
        # Every port checked before anything starts: a taken node port found after ZooKeeper
        # started would cost a start and a stop for nothing.
        if not self.zookeeper.running():
            self._check_port_free(self.zk_port, "ZooKeeper")
        for node, port in zip(self.nodes, self.node_ports, strict=True):
            if not node.running():
                self._check_port_free(port, f"Solr node {port}")
        self.build()
        java = self._find_java()
        started: list[Managed] = []
        try:
            if not self.zookeeper.running():
                self._write_zoo_cfg()
                self._start(self.zookeeper, java, started)
            self._save_state()
            self._wait(
                lambda: zookeeper_ok(self.zk_port),
                [self.zookeeper],
                timeout,
                f"ZooKeeper did not answer on {self.zk_address}",
            )
            for node in self.nodes:
                if not node.running():
                    self._start(node, java, started)
            self.wait_until_live(timeout=timeout)
            # A restart on kept data: the cores recover a moment after their nodes are live, and
            # until then searches answer "no active replicas".
            self.wait_until_active(timeout=timeout)
        except BaseException:
            # Nodes before ZooKeeper, as in stop().
            stop_all([p for p in started if p is not self.zookeeper], timeout=30.0)
            stop_all([p for p in started if p is self.zookeeper], timeout=30.0)
            raise

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the nodes (SIGTERM: cores closed, sessions ended), then ZooKeeper.

        Works on a cluster started by another process. False when nothing was running.
        """
        was_running = bool(self.running())
        stop_all(self.nodes, timeout)
        stop_all([self.zookeeper], timeout)
        return was_running

    def stop_node(self, index: int, timeout: float = 60.0) -> None:
        """Stop one node cleanly (SIGTERM): it leaves live_nodes at once."""
        stop_all([self.nodes[index]], timeout)

    def kill_node(self, index: int) -> None:
        """Kill one node (SIGKILL), as a crash would: it stays in live_nodes until its ZooKeeper
        session expires (zk_client_timeout_ms)."""
        node = self.nodes[index]
        if node.signal(signal.SIGKILL) and not node.wait(30.0):
            raise SolrClusterError(f"{node.name} did not end after SIGKILL")

    def start_node(self, index: int, timeout: float = 120.0) -> None:
        """Start one node again (ZooKeeper must be running) and wait until it is live."""
        node = self.nodes[index]
        if node.running():
            return
        if not self.zookeeper.running():
            raise SolrClusterError(f"ZooKeeper of {self.data_dir} is not running; start() first")
        self._check_port_free(self.node_ports[index], f"Solr node {self.node_ports[index]}")
        started: list[Managed] = []
        try:
            self._start(node, self._find_java(), started)
            self.wait_until_live([index], timeout=timeout)
        except BaseException:
            stop_all(started, timeout=30.0)
            raise

    # ---- asking the cluster ----

    def cluster_status(self) -> dict[str, Any] | None:
        """CLUSTERSTATUS's `cluster` (live_nodes, collections...) from the first node that
        answers; None when none does."""
        for url in self.node_urls:
            status = cluster_status(url)
            if status is not None:
                return status
        return None

    def live_nodes(self) -> list[str]:
        """live_nodes as the first answering node sees it; [] when no node answers."""
        status = self.cluster_status()
        return sorted(status.get("live_nodes") or []) if status else []

    def wait_until_live(self, indexes: Sequence[int] | None = None, timeout: float = 180.0) -> None:
        """Wait until each node of `indexes` (default: all) answers CLUSTERSTATUS itself and
        every one of them is in live_nodes.

        Asking each node itself matters after a kill: its old entry can still be in live_nodes
        (the session has not expired) before the new process has registered.
        """
        chosen = list(range(len(self.nodes))) if indexes is None else list(indexes)

        def all_live() -> bool:
            for i in chosen:
                seen = live_nodes(self.node_urls[i], timeout=5.0)
                if seen is None or not {self.node_names[j] for j in chosen} <= set(seen):
                    return False
            return True

        names = ", ".join(self.node_names[i] for i in chosen)
        self._wait(
            all_live,
            [self.zookeeper, *(self.nodes[i] for i in chosen)],
            timeout,
            f"Solr nodes {names} were not all live",
        )

    def wait_until_active(self, timeout: float = 180.0) -> None:
        """Wait until every replica of every collection is `active`."""

        def all_active() -> bool:
            status = self.cluster_status()
            if status is None:
                return False
            return all(
                replica.get("state") == "active"
                for collection in (status.get("collections") or {}).values()
                for shard in (collection.get("shards") or {}).values()
                for replica in (shard.get("replicas") or {}).values()
            )

        self._wait(
            all_active,
            [self.zookeeper, *self.nodes],
            timeout,
            "the collections' replicas did not all become active",
        )

    def wait_for_live_nodes(self, expected: Sequence[str], timeout: float = 60.0) -> list[str]:
        """Wait until live_nodes is exactly `expected` (node names); returns it. For tests of
        node loss: after kill_node, live_nodes drops the node when its session expires."""
        want = sorted(expected)
        deadline = time.monotonic() + timeout
        while True:
            seen = self.live_nodes()
            if seen == want:
                return seen
            if time.monotonic() >= deadline:
                raise SolrClusterError(f"live_nodes is {seen}, not {want}, after {timeout:.0f} s")
            time.sleep(0.25)

    # ---- context manager ----

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"LocalCluster({str(self.data_dir)!r}, node_ports={self.node_ports}, "
            f"zk_port={self.zk_port})"
        )

    # ---- the processes ----

    def _zookeeper_process(self) -> Managed:
        config = self.data_dir / "zookeeper" / "zoo.cfg"
        java_args = [
            "-Xms16m",
            "-Xmx256m",
            *FAST_JVM,
            f"-Dlog4j2.level={self.log_level}",
            # ZooKeeper's own admin web server would take port 8080.
            "-Dzookeeper.admin.enableServer=false",
            *self.java_options,
            "-cp",
            classpath(self.solr_dir),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(config),
        ]
        return Managed(
            name="zookeeper",
            java_args=java_args,
            log=self.data_dir / "logs" / "zookeeper.log",
            pid_file=self.data_dir / "pids" / "zookeeper.pid",
            marker=f" {config} ",
        )

    def _node_process(self, port: int) -> Managed:
        home = self.data_dir / f"node-{port}"
        java_args = [
            "-Xms64m",
            f"-Xmx{self.heap}",
            *FAST_JVM,
            f"-Dlog4j2.level={self.log_level}",
            *self.java_options,
            "-cp",
            classpath(self.solr_dir),
            "searchsvc.solr.SolrNode",
            "--port",
            str(port),
            "--home",
            str(home),
            "--zk",
            self.zk_address,
            "--zk-client-timeout",
            str(self.zk_client_timeout_ms),
        ]
        return Managed(
            name=f"node-{port}",
            java_args=java_args,
            log=self.data_dir / "logs" / f"node-{port}.log",
            pid_file=self.data_dir / "pids" / f"node-{port}.pid",
            marker=f" --home {home} ",
        )

    def _find_java(self) -> str:
        if self._java is None:
            java = find_java()
            check_java(java)
            self._java = java
        return self._java

    def _start(self, process: Managed, java: str, started: list[Managed]) -> None:
        process.start(java)
        started.append(process)

    def _write_zoo_cfg(self) -> None:
        """A standalone ZooKeeper on 127.0.0.1 only. tickTime 1000 lets sessions be as short as
        2 s (tests); `ruok` is how the launcher tells it is up."""
        zk_dir = self.data_dir / "zookeeper"
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        (zk_dir / "zoo.cfg").write_text(
            "# Written by searchsvc.devtools.solrcluster at every start.\n"
            "tickTime=1000\n"
            f"dataDir={zk_dir / 'data'}\n"
            f"clientPort={self.zk_port}\n"
            f"clientPortAddress={HOST}\n"
            "minSessionTimeout=2000\n"
            "maxSessionTimeout=120000\n"
            "maxClientCnxns=0\n"
            "4lw.commands.whitelist=ruok,mntr,conf,srvr,stat\n"
            "admin.enableServer=false\n"
            "autopurge.snapRetainCount=3\n"
            "autopurge.purgeInterval=1\n"
        )

    def _save_state(self) -> None:
        state = {
            "node_ports": self.node_ports,
            "zk_port": self.zk_port,
            "zk_client_timeout_ms": self.zk_client_timeout_ms,
        }
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    def _refuse_other_cluster_in_data_dir(self) -> None:
        """A data directory holds one cluster: starting it with other ports while it runs would
        open the same ZooKeeper data twice."""
        state = self.data_dir / STATE_FILE
        if not state.is_file():
            return
        try:
            recorded = LocalCluster.from_data_dir(self.data_dir, solr_dir=self.solr_dir)
        except SolrClusterError:
            return
        if (recorded.node_ports, recorded.zk_port) == (self.node_ports, self.zk_port):
            return
        if recorded.running():
            raise SolrClusterError(
                f"a Solr cluster with other ports (nodes {recorded.node_ports}, ZooKeeper "
                f"{recorded.zk_port}) is running from {self.data_dir}; stop it first "
                f"(`searchsvc solr stop --data {self.data_dir}`)"
            )

    @staticmethod
    def _check_port_free(port: int, what: str) -> None:
        if port_in_use(port):
            raise SolrClusterError(
                f"port {port} for {what} is taken by another program (no pid file of this "
                "data directory names it); stop it or choose other ports (--ports, --zk-port)"
            )

    def _wait(
        self,
        ready: Callable[[], bool],
        processes: Sequence[Managed],
        timeout: float,
        what: str,
    ) -> None:
        """Poll `ready` until true; fail early, with its log tail, if a process has ended."""
        deadline = time.monotonic() + timeout
        while True:
            for process in processes:
                if not process.running():
                    code = process.exit_code()
                    ended = f"exited with status {code}" if code is not None else "is not running"
                    raise SolrClusterError(
                        f"{what}: {process.name} {ended}; end of {process.log}:\n"
                        + log_tail(process.log)
                    )
            if ready():
                return
            if time.monotonic() >= deadline:
                logs = "\n".join(f"-- end of {p.log}:\n{log_tail(p.log, 12)}" for p in processes)
                raise SolrClusterError(f"{what} after {timeout:.0f} s\n{logs}")
            time.sleep(0.25)
