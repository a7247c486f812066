"""Node loss on a real SolrCloud, as the product promises it: "with one node stopped or killed
(kill -9), searches keep answering with complete totals, writes resume once the cluster notices
(tests may lower ZooKeeper's session timeout), the node rejoins and catches up; no acknowledged
write is lost."

Each test starts its own cluster (tests.solr.cluster.running_cluster: ZooKeeper and two Solr
nodes, separate JVMs, a 5 s ZooKeeper session timeout) since it stops or kills a node; the
index is the default shape of a location, 2 shards x 2 replicas, so each node holds a replica
of every shard. ZooKeeper is a process of its own and is never killed here.

Run with `-s` to see what was measured (lines starting with "failover:"): how long leadership
took to move, when writes were accepted again, how many writes were retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from searchsvc.backends import SearchBackend, open_backend
from searchsvc.devtools.solrcluster import LocalCluster
from searchsvc.domain.errors import IndexUnavailable
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from searchsvc.tasks import TaskQueue, TaskWriter
from tests.solr.cluster import running_cluster
from tests.support import multi_block_records

pytestmark = pytest.mark.slow

RECORDS = 300
# A ranked query with every facet counted in full, and the match-all listing.
SEARCHES = (
    SearchRequest(q="learning", facet_size=100, highlight=False),
    SearchRequest(q="scheduling caches", facet_size=100, highlight=False),
    SearchRequest(facet_size=100, highlight=False),
)
# Bounds of the waits (generous: two cores shared with other JVMs); none is asserted as a time.
WRITE_RESUME_TIMEOUT = 120.0
RECOVERY_TIMEOUT = 240.0
DRAIN_TIMEOUT = 300.0


def report(message: str) -> None:
    print(f"failover: {message}", flush=True)


# -- the cluster as CLUSTERSTATUS describes it ---------------------------------------------------


@dataclass(frozen=True)
class Replica:
    shard: str
    name: str
    core: str
    base_url: str
    node: str
    state: str
    leader: bool


def replicas(cluster: LocalCluster, collection: str) -> list[Replica]:
    """Every replica of `collection`, from the CLUSTERSTATUS of a node that answers."""
    status = cluster.cluster_status()
    assert status is not None, "no node answers CLUSTERSTATUS"
    shards = status["collections"][collection]["shards"]
    return [
        Replica(
            shard=shard,
            name=name,
            core=replica["core"],
            base_url=replica["base_url"],
            node=replica["node_name"],
            state=replica["state"],
            leader=str(replica.get("leader", "false")) == "true",
        )
        for shard, described in sorted(shards.items())
        for name, replica in sorted(described["replicas"].items())
    ]


def leader_nodes(cluster: LocalCluster, collection: str) -> dict[str, str]:
    """Each shard's leader's node name."""
    return {r.shard: r.node for r in replicas(cluster, collection) if r.leader}


def leader_holder(cluster: LocalCluster, leaders: dict[str, str]) -> int:
    """The index of a node holding a shard leader (the first such)."""
    return cluster.node_names.index(sorted(leaders.values())[0])


def all_active(cluster: LocalCluster, collection: str) -> bool:
    status = cluster.cluster_status()
    if status is None:
        return False
    live = set(status.get("live_nodes") or [])
    found = replicas(cluster, collection)
    return len(found) == 4 and all(r.state == "active" and r.node in live for r in found)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll `condition` until true; the seconds it took. Fails the test after `timeout`."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what}: not after {timeout:.0f} s"
        time.sleep(0.25)
    return time.monotonic() - started


def target_collection(location: str) -> str:
    with open_backend(location) as backend:
        target = backend.collections.target()  # type: ignore[attr-defined]
    assert target is not None
    return str(target)


def naming(cluster: LocalCluster, nodes: list[int], collection: str = "papers") -> str:
    """A location naming `nodes` of the cluster, in that order."""
    hosts = ",".join(f"127.0.0.1:{cluster.node_ports[i]}" for i in nodes)
    return f"solr://{hosts}/solr/{collection}"


def victim_first(cluster: LocalCluster, victim: int) -> str:
    """A location naming the lost node first: the backend's first request goes to it, so the
    searches below go through the connection's fail-over, not around it."""
    return naming(cluster, [victim, *(i for i in range(len(cluster.nodes)) if i != victim)])


class LeadershipWatch:
    """Polls CLUSTERSTATUS in a thread from the moment a node is lost: when the lost node left
    live_nodes, and when every shard's leader was on another node."""

    def __init__(self, cluster: LocalCluster, collection: str, lost: str) -> None:
        self.cluster, self.collection, self.lost = cluster, collection, lost
        self.started = time.monotonic()
        self.left_live_nodes: float | None = None
        self.leaders_moved: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            status = self.cluster.cluster_status()
            now = time.monotonic() - self.started
            if status is not None:
                if self.left_live_nodes is None and self.lost not in status["live_nodes"]:
                    self.left_live_nodes = now
                shards = status["collections"][self.collection]["shards"]
                leaders = [
                    replica["node_name"]
                    for described in shards.values()
                    for replica in described["replicas"].values()
                    if str(replica.get("leader", "false")) == "true"
                ]
                if (
                    self.leaders_moved is None
                    and len(leaders) == len(shards)
                    and self.lost not in leaders
                ):
                    self.leaders_moved = now
            if self.left_live_nodes is not None and self.leaders_moved is not None:
                return
            self._stop.wait(0.2)

    def finish(self, timeout: float) -> None:
        self._thread.join(timeout)
        self._stop.set()
        assert self.left_live_nodes is not None, f"{self.lost} stayed in live_nodes"
        assert self.leaders_moved is not None, "shard leadership did not move"


# -- the index as the cores hold it --------------------------------------------------------------


def core_count(replica: Replica, query: str = "*:*") -> int:
    """Documents of one replica core alone (distrib=false), of those matching `query`."""
    response = requests.get(
        f"{replica.base_url}/{replica.core}/select",
        params={"q": query, "distrib": "false", "rows": 0, "wt": "json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return int(response.json()["response"]["numFound"])


def assert_replicas_agree(
    cluster: LocalCluster, collection: str, records: int, present: list[str]
) -> dict[str, int]:
    """Each shard's replicas hold the same documents (as many, and each id of `present`), the
    shards hold `records` records in all, and each id of `present` is in exactly one shard."""
    by_shard: dict[str, list[Replica]] = {}
    for replica in replicas(cluster, collection):
        by_shard.setdefault(replica.shard, []).append(replica)
    assert len(by_shard) == 2 and all(len(held) == 2 for held in by_shard.values()), by_shard
    counts = {}
    for shard, held in by_shard.items():
        numbers = {r.core: core_count(r, "kind:record") for r in held}
        assert len(set(numbers.values())) == 1, f"{shard}'s replicas disagree: {numbers}"
        counts[shard] = next(iter(numbers.values()))
    assert sum(counts.values()) == records, counts
    for record_id in present:
        holders = {
            shard: [core_count(r, f'id:"{record_id}"') for r in held]
            for shard, held in by_shard.items()
        }
        assert sorted(holders.values()) == [[0, 0], [1, 1]], f"{record_id}: {holders}"
    return counts


def search_snapshot(backend: SearchBackend) -> list[tuple[int, dict[str, Any]]]:
    """Total and every facet count of each of SEARCHES."""
    found = []
    for request in SEARCHES:
        result = backend.search(request)
        facets = {
            name: sorted((value.value, value.count) for value in values)
            for name, values in result.facets.items()
        }
        found.append((result.total, facets))
    return found


def new_record(record_id: str) -> Record:
    return Record(
        id=record_id,
        title=f"Axolotl regeneration while a node is lost ({record_id})",
        abstract="Written during a failover.",
        authors=("Failover Tester",),
        year=2024,
        categories=("q-bio.TO",),
        source="test",
    )


def upsert_until_accepted(backend: SearchBackend, record: Record) -> tuple[int, float]:
    """Write `record`, trying again while the cluster says it cannot take it now (the writer
    does the same with queued tasks); (attempts refused, seconds until accepted). Any other
    error than IndexUnavailable escapes and fails the test."""
    started = time.monotonic()
    refused = 0
    while True:
        try:
            backend.write(upserts=[record])
        except IndexUnavailable as exc:
            refused += 1
            waited = time.monotonic() - started
            assert waited < WRITE_RESUME_TIMEOUT, f"writes did not resume: {exc}"
            report(f"  write refused after {waited:.1f} s: {exc.message[:160]}")
            time.sleep(0.5)
            continue
        return refused, time.monotonic() - started


# -- one node lost: stopped, or killed -----------------------------------------------------------


def lose_a_node_and_get_it_back(tmp_path, how: str) -> None:
    with running_cluster(tmp_path) as cluster:
        location = cluster.solr_location("papers")
        with open_backend(location) as backend:
            backend.rebuild(multi_block_records(RECORDS))
            before = search_snapshot(backend)
        assert [total for total, _ in before][-1] == RECORDS
        collection = target_collection(location)
        leaders = leader_nodes(cluster, collection)
        # Stopped or killed: a node holding a shard leader, so leadership has to move.
        victim = leader_holder(cluster, leaders)
        lost = cluster.node_names[victim]
        report(f"{how} {lost}; leaders before: {leaders}")
        # "Any listed node will do" (README): a backend told of the lost node alone, which
        # has answered before the loss, keeps answering through the nodes it learnt of.
        told_of_one = open_backend(naming(cluster, [victim]))
        assert search_snapshot(told_of_one) == before

        started = time.monotonic()
        if how == "stop":
            cluster.stop_node(victim)
        else:
            cluster.kill_node(victim)
        watch = LeadershipWatch(cluster, collection, lost)

        # Searches answer at once (no retry), complete: the same totals and facet counts.
        with open_backend(victim_first(cluster, victim)) as backend:
            assert search_snapshot(backend) == before
            searched = time.monotonic() - started
            report(f"  searches answered completely {searched:.1f} s after the {how}")
            with told_of_one:
                assert search_snapshot(told_of_one) == before

            record = new_record(f"failover-{how}")
            refused, _ = upsert_until_accepted(backend, record)
            report(
                f"  write accepted {time.monotonic() - started:.1f} s after the {how}, "
                f"{refused} attempts refused before"
            )
            assert backend.get(record.id) == record
            assert backend.search(SearchRequest(highlight=False)).total == RECORDS + 1
            assert backend.search(SearchRequest(q="axolotl")).total == 1

        watch.finish(timeout=WRITE_RESUME_TIMEOUT)
        report(
            f"  {lost} left live_nodes after {watch.left_live_nodes:.1f} s, every leader on "
            f"the other node after {watch.leaders_moved:.1f} s: {leader_nodes(cluster, collection)}"
        )
        assert lost not in leader_nodes(cluster, collection).values()

        restarted = time.monotonic()
        cluster.start_node(victim)
        live = time.monotonic() - restarted
        active = wait_for(
            lambda: all_active(cluster, collection), RECOVERY_TIMEOUT, "every replica active"
        )
        report(
            f"  {lost} live {live:.1f} s after its start, every replica active "
            f"{live + active:.1f} s after"
        )
        counts = assert_replicas_agree(cluster, collection, RECORDS + 1, [record.id])
        report(f"  records per shard on every replica: {counts}")

        # And the whole cluster answers as before, with the write.
        with open_backend(location) as backend:
            assert backend.search(SearchRequest(highlight=False)).total == RECORDS + 1
            assert backend.get(record.id) == record


def test_a_stopped_node_loses_no_search_nor_write_and_catches_up_when_back(tmp_path):
    lose_a_node_and_get_it_back(tmp_path, "stop")


def test_a_killed_leader_node_loses_no_search_nor_write_and_catches_up_when_back(tmp_path):
    lose_a_node_and_get_it_back(tmp_path, "kill")


# -- no acknowledged write lost: the task queue's writer through a kill -9 -----------------------

INITIAL = 100
TASKS = 300
RECORDS_PER_TASK = 5


@dataclass
class Producer:
    """Enqueues TASKS upsert tasks of RECORDS_PER_TASK new records, paced; a task counts as
    acknowledged once enqueue_upserts returned (it is committed to SQLite)."""

    queue: TaskQueue
    pause: float = 0.1
    acknowledged: dict[int, list[str]] = field(default_factory=dict)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            for n in range(TASKS):
                records = [
                    Record(
                        id=f"fi-{n:04d}-{k}",
                        title=f"Streamed record {n} {k} about failover",
                        authors=(f"Writer {n % 7}",),
                        year=2020 + n % 5,
                        categories=("cs.DC",),
                    )
                    for k in range(RECORDS_PER_TASK)
                ]
                task = self.queue.enqueue_upserts(records, origin="api")
                self.acknowledged[task.id] = [record.id for record in records]
                time.sleep(self.pause)
        except BaseException as exc:  # reported by the test
            self.error = exc


def test_no_acknowledged_write_is_lost_when_a_node_is_killed_mid_stream(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="searchsvc.tasks.writer")
    with running_cluster(tmp_path) as cluster:
        location = cluster.solr_location("papers")
        with open_backend(location) as backend:
            backend.rebuild(multi_block_records(INITIAL))
        collection = target_collection(location)
        leaders = leader_nodes(cluster, collection)
        victim = leader_holder(cluster, leaders)
        lost = cluster.node_names[victim]

        queue = TaskQueue(tmp_path / "tasks.sqlite3")
        applied: list[float] = []  # when each batch was committed (monotonic)
        writer_backend = open_backend(location)
        # Small batches: many engine commits while the node is lost, not a few large ones.
        writer = TaskWriter(
            queue,
            writer_backend,
            batch_records=50,
            on_batch=lambda _: applied.append(time.monotonic()),
        )
        thread, stop = writer.start_thread()
        producer = Producer(queue)
        try:
            producer.thread.start()
            wait_for(lambda: len(producer.acknowledged) >= 50, 120, "50 tasks acknowledged")
            wait_for(lambda: len(applied) >= 2, 120, "the writer applying batches")

            killed = time.monotonic()
            acked_at_kill = len(producer.acknowledged)
            cluster.kill_node(victim)
            watch = LeadershipWatch(cluster, collection, lost)
            report(f"killed {lost} (leaders before: {leaders}) after {acked_at_kill} tasks")
            watch.finish(timeout=WRITE_RESUME_TIMEOUT)
            # Writes resume on the surviving node: a batch is committed after the kill.
            wait_for(
                lambda: any(t > killed + (watch.leaders_moved or 0) for t in applied),
                WRITE_RESUME_TIMEOUT,
                "a batch applied after leadership moved",
            )
            resumed = min(t for t in applied if t > killed + (watch.leaders_moved or 0))
            report(
                f"  {lost} left live_nodes after {watch.left_live_nodes:.1f} s, leaders moved "
                f"after {watch.leaders_moved:.1f} s, first batch after that "
                f"{resumed - killed:.1f} s after the kill"
            )
            restarted = time.monotonic()
            acked_at_restart = len(producer.acknowledged)
            cluster.start_node(victim)  # while the producer and the writer keep going
            report(
                f"  {lost} started again after {acked_at_restart} tasks, live "
                f"{time.monotonic() - restarted:.1f} s later"
            )

            producer.thread.join(DRAIN_TIMEOUT)
            assert not producer.thread.is_alive() and producer.error is None, producer.error
            acked_total = len(producer.acknowledged)
            assert acked_total == TASKS
            report(
                f"  producer done ({acked_total} tasks) "
                f"{time.monotonic() - restarted:.1f} s after the restart"
            )

            def drained() -> bool:
                counts = queue.counts()
                return counts["enqueued"] + counts["processing"] == 0

            drain = wait_for(drained, DRAIN_TIMEOUT, "every task applied")
            report(f"  queue drained {drain:.1f} s after the producer ended")
        finally:
            stop.set()
            thread.join(60)
            writer_backend.close()

        counts = queue.counts()
        assert counts == {"enqueued": 0, "processing": 0, "succeeded": TASKS, "failed": 0}
        assert all(queue.get(task_id).status == "succeeded" for task_id in producer.acknowledged)

        retries = [r for r in caplog.records if "retrying in" in r.getMessage()]
        unexpected = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert not unexpected, [r.getMessage() for r in unexpected]
        report(f"  batches applied: {len(applied)}; writes retried by the writer: {len(retries)}")
        for reason, times in Counter(_reason(r.getMessage()) for r in retries).most_common():
            report(f"    {times} x {reason}")

        written = [record_id for ids in producer.acknowledged.values() for record_id in ids]
        assert len(set(written)) == TASKS * RECORDS_PER_TASK
        active = wait_for(
            lambda: all_active(cluster, collection), RECOVERY_TIMEOUT, "every replica active"
        )
        report(f"  every replica active {active:.1f} s after the queue drained")
        with open_backend(location) as backend:
            held = Counter(record.id for record in backend.records())
            assert not [i for i, n in held.items() if n != 1], "a record is held twice"
            missing = set(written) - set(held)
            assert not missing, f"{len(missing)} acknowledged records lost: {sorted(missing)[:10]}"
            assert len(held) == INITIAL + len(written)
            total = backend.search(SearchRequest(highlight=False)).total
            assert total == INITIAL + len(written)
            streamed = backend.search(SearchRequest(q="streamed", highlight=False)).total
            assert streamed == len(written)
        # Every replica of each shard holds the same records, the killed node's too.
        per_shard = assert_replicas_agree(
            cluster, collection, INITIAL + len(written), [written[0], written[-1]]
        )
        report(f"  records per shard on every replica: {per_shard}")


def _reason(message: str) -> str:
    """A retry's cause without its details (node addresses, ids)."""
    cause = message.split(" s: ", 1)[-1]
    return cause[:120]
