"""`searchsvc solr start|stop|status`: a local SolrCloud (ZooKeeper + Solr nodes, one JVM each).

Solr comes from Maven Central jars built in `solr/` (Java 17+ and Maven needed), so no Solr
installation is. The cluster keeps its data in one directory between runs; pid files there let
`stop` and `status` find a cluster that `start --detach` left running.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from types import FrameType

import click

from searchsvc.cli.common import reports_errors
from searchsvc.devtools.solrcluster import (
    DEFAULT_NODE_PORTS,
    DEFAULT_ZK_PORT,
    LocalCluster,
    default_solr_dir,
)
from searchsvc.devtools.solrcluster.cluster import DEFAULT_ZK_CLIENT_TIMEOUT_MS
from searchsvc.domain.errors import SolrClusterRunning

#: `status` exits with this when the cluster is not (fully) running, as LSB init scripts do.
NOT_RUNNING = 3


def _data_dir(data: str | None) -> Path:
    return Path(data) if data else default_solr_dir() / "data"


def _ports(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        ports = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of ports") from None
    if not ports or any(not 0 < port < 65536 for port in ports):
        raise click.BadParameter(f"{value!r}: give one port or more, between 1 and 65535")
    return ports


data_option = click.option(
    "--data",
    default=None,
    metavar="DIR",
    help="The cluster's data directory (ZooKeeper, node homes, logs, pids) [default: solr/data].",
)


@click.group()
def solr() -> None:
    """Run a local SolrCloud: ZooKeeper and Solr 9 nodes as separate JVMs (needs Java 17+ and
    Maven; the Solr jars are built in solr/ on first use)."""


@solr.command("start")
@data_option
# The defaults are those the data directory was last started with (ZooKeeper knows its nodes by
# address: a kept cluster restarted on other ports finds its replicas on nodes that no longer
# exist), else Solr's usual ports.
@click.option(
    "--ports",
    default=None,
    callback=_ports,
    help=(
        "Solr node ports, comma-separated: one node per port [default: as last started in "
        f"--data, else {','.join(map(str, DEFAULT_NODE_PORTS))}]."
    ),
)
@click.option(
    "--zk-port",
    type=int,
    default=None,
    help=f"ZooKeeper's port [default: as last started, else {DEFAULT_ZK_PORT}].",
)
@click.option(
    "--zk-client-timeout",
    type=int,
    default=None,
    metavar="MS",
    help=(
        "ZooKeeper session timeout of the nodes: how long a crashed node stays in live_nodes "
        f"[default: as last started, else {DEFAULT_ZK_CLIENT_TIMEOUT_MS}]."
    ),
)
@click.option(
    "--detach", is_flag=True, help="Leave the cluster running and return (stop it with `stop`)."
)
@reports_errors
def start(
    data: str | None,
    ports: list[int] | None,
    zk_port: int | None,
    zk_client_timeout: int | None,
    detach: bool,
) -> None:
    """Start the cluster and wait until every node is live.

    In the foreground (the default) Ctrl-C or SIGTERM stops it; with --detach it keeps running.
    Prints the index location to give searchsvc (`solr://HOST:PORT,.../solr/COLLECTION`).
    """
    given = {"node_ports": ports, "zk_port": zk_port, "zk_client_timeout_ms": zk_client_timeout}
    cluster = LocalCluster.from_data_dir(
        _data_dir(data), **{name: value for name, value in given.items() if value is not None}
    )
    if not detach:
        # SIGTERM (and SIGHUP: the terminal closed) stop the cluster as Ctrl-C does: all arrive
        # as KeyboardInterrupt. The JVMs, in sessions of their own, would outlive us otherwise.
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _interrupt)
    began = time.monotonic()
    try:
        cluster.start()
    except SolrClusterRunning as exc:
        click.echo(exc.message, err=True)
        return
    click.echo(
        f"Solr cluster ready in {time.monotonic() - began:.1f} s: nodes "
        f"{', '.join(cluster.node_urls)}; ZooKeeper {cluster.zk_address}",
        err=True,
    )
    click.echo(f"data and logs in {cluster.data_dir}", err=True)
    click.echo(f"index location: {cluster.solr_location('COLLECTION')}")
    if detach:
        click.echo(f"stop it with: searchsvc solr stop --data {cluster.data_dir}", err=True)
        return
    click.echo("Ctrl-C stops it", err=True)
    _watch(cluster)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _watch(cluster: LocalCluster) -> None:
    """Run until interrupted, saying when a process of the cluster ends; then stop them all."""
    reported: set[str] = set()
    try:
        while True:
            time.sleep(1.0)
            running = cluster.running()
            for process in [cluster.zookeeper, *cluster.nodes]:
                if process.name not in running and process.name not in reported:
                    reported.add(process.name)
                    click.echo(f"warning: {process.name} has ended (see {process.log})", err=True)
                elif process.name in running:
                    reported.discard(process.name)
    except KeyboardInterrupt:
        pass
    # A second Ctrl-C must not leave half the cluster running.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    click.echo("stopping the Solr cluster...", err=True)
    cluster.stop()
    click.echo("stopped", err=True)


@solr.command("stop")
@data_option
@reports_errors
def stop(data: str | None) -> None:
    """Stop the cluster of a data directory (nodes first, then ZooKeeper)."""
    cluster = LocalCluster.from_data_dir(_data_dir(data))
    if cluster.stop():
        click.echo(f"stopped the Solr cluster in {cluster.data_dir}")
    else:
        click.echo(f"no Solr cluster is running in {cluster.data_dir}")


@solr.command("status")
@data_option
@reports_errors
def status(data: str | None) -> None:
    """Show which processes run, the live nodes and the collections (exit 3 if not all live)."""
    cluster = LocalCluster.from_data_dir(_data_dir(data))
    running = cluster.running()
    click.echo(f"data: {cluster.data_dir}")
    for process in [cluster.zookeeper, *cluster.nodes]:
        pid = running.get(process.name)
        click.echo(f"{process.name}: " + (f"running (pid {pid})" if pid else "not running"))
    state = cluster.cluster_status() if running else None
    live = sorted(state.get("live_nodes") or []) if state else []
    if state is not None:
        collections = sorted((state.get("collections") or {}).keys())
        click.echo(f"live nodes: {', '.join(live) or 'none'}")
        click.echo(f"collections: {', '.join(collections) or 'none'}")
        click.echo(f"index location: {cluster.solr_location('COLLECTION')}")
    if len(running) < 1 + len(cluster.nodes) or set(live) != set(cluster.node_names):
        sys.exit(NOT_RUNNING)


COMMANDS = [solr]
