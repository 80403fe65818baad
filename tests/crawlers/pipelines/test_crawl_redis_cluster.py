"""A real crawl on a Redis Cluster (``REDIS_CLUSTER``): two ``scrapy crawl demo`` workers
share the frontier, dedup state, ledger and spill on the cluster's master for ``{demo}``
and store every product of the demo site in Elasticsearch exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.cluster
from elasticsearch import Elasticsearch

from core.dedup.detector import job_changes
from core.figures.stats import JobStats
from core.frontier.drain import drain_state
from core.frontier.workers import WorkerRegistry
from core.jobs.index import job_counters
from core.keys import SiteKeys
from core.redis_client import connect
from core.store import spill_size
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisCluster
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.support import (
    SITE,
    key_of,
    module_site,
    reset_store,
    start_store_worker,
    stored_docs,
)
from tests.crawlers.support import final_stats, log_excerpt, wait_all, wait_for

PRODUCTS = 120


site = module_site("cluster-site", PRODUCTS)


@pytest.fixture
def cluster(
    site: DemoSite, redis_cluster: RedisCluster, es: Elasticsearch
) -> Iterator[redis.cluster.RedisCluster]:
    site.reset()
    client = connect(redis_cluster.url, cluster=True)
    assert isinstance(client, redis.cluster.RedisCluster)
    reset_store(es, client)  # type: ignore[arg-type]  # FLUSHDB goes to every master
    yield client
    reset_store(es, client)  # type: ignore[arg-type]
    client.close()


def test_two_workers_on_the_redis_cluster_store_every_item_exactly_once(
    site: DemoSite,
    cluster: redis.cluster.RedisCluster,
    redis_cluster: RedisCluster,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    job = produce(cluster, SITE, base_url=site.url)
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    # Pages 100 ms slower: the crawl outlasts the second worker's start-up, so both work.
    site.control(slow={"rate": 1.0, "ms": 100})
    try:
        workers = start_workers(site, redis_cluster, es_node, job.job_id, logs)
        assert wait_all(workers, timeout=240) == [0, 0], log_excerpt(logs[0])
    finally:
        site.control(slow=None)

    # Every product once in Elasticsearch, each new, stored by exactly one worker.
    catalog = build_catalog(n_products=PRODUCTS).products
    docs = stored_docs(es)
    assert sorted(doc["_id"] for doc in docs) == sorted(key_of(p.sku) for p in catalog)
    assert {doc["job_id"] for doc in docs} == {job.job_id}
    stats = [final_stats(log) for log in logs]
    assert sum(s.get("store/indexed", 0) for s in stats) == PRODUCTS
    assert all(s.get("store/indexed", 0) > 0 for s in stats), stats  # both worked

    # The ledger's figures (Lua and pipelines on the {demo} master) match.
    counters = job_counters(cluster, SITE, job.job_id)
    figures = ("items/scraped", "items/new", "items/stored")
    assert {name: counters[name] for name in figures} == dict.fromkeys(figures, PRODUCTS)
    assert (counters["items/changed"], counters["items/invalid"]) == (0, 0)
    assert job_changes(cluster, SITE, job.job_id).new == {key_of(p.sku) for p in catalog}
    assert spill_size(cluster, SITE) == 0
    state = drain_state(cluster, SITE, job.job_id)
    assert (state.queued, state.leased, state.workers) == (0, 0, [])
    # It all lives on one master: the one the {demo} hash tag maps to.
    master = cluster.get_node_from_key(SiteKeys(SITE).partition(0, 1).priorities)
    stats_key = SiteKeys(SITE).stats(job.job_id)
    assert master.redis_connection is not None
    assert master.redis_connection.exists(stats_key, SiteKeys(SITE).job_stored(job.job_id)) == 2


def start_workers(
    site: DemoSite,
    redis_cluster: RedisCluster,
    es_node: ElasticsearchNode,
    job_id: str,
    logs: list[Path],
) -> list[subprocess.Popen[bytes]]:
    return [
        start_store_worker(
            job_id=job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_cluster.url,
            es_url=es_node.url,
            settings={"REDIS_CLUSTER": True, "FRONTIER_IDLE_CLOSE_SECONDS": 5},
        )
        for log in logs
    ]


def assert_every_item_once(
    es: Elasticsearch, cluster: redis.cluster.RedisCluster, job_id: str
) -> None:
    """Every product in Elasticsearch exactly once, the ledger's figures exact, nothing
    queued, leased or spilled."""
    catalog = build_catalog(n_products=PRODUCTS).products
    docs = stored_docs(es)
    assert sorted(doc["_id"] for doc in docs) == sorted(key_of(p.sku) for p in catalog)
    counters = job_counters(cluster, SITE, job_id)
    figures = ("items/scraped", "items/new", "items/stored")
    assert {name: counters[name] for name in figures} == dict.fromkeys(figures, PRODUCTS)
    assert spill_size(cluster, SITE) == 0
    state = drain_state(cluster, SITE, job_id)
    assert (state.queued, state.leased) == (0, 0)


def test_sigkilled_worker_on_the_cluster_loses_nothing(
    site: DemoSite,
    cluster: redis.cluster.RedisCluster,
    redis_cluster: RedisCluster,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    # Items come from the reviews API: slow it, so the crawl lasts long enough for the
    # victim to be seen (heartbeats every 0.5 s) holding leases with items already stored.
    site.control(slow={"rate": 1.0, "ms": 1000, "paths": ["/api/products/"]})
    job = produce(cluster, SITE, base_url=site.url)
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = start_workers(site, redis_cluster, es_node, job.job_id, logs)
    registry = WorkerRegistry(cluster, SITE)

    def victim_holds_leases() -> bool:
        return any(w.pid == workers[0].pid and w.in_flight >= 4 for w in registry.live()) and (
            job_counters(cluster, SITE, job.job_id).get("items/stored", 0) >= 1
        )

    wait_for(victim_holds_leases, timeout=90, what="worker 0 to hold leases mid-crawl")
    os.kill(workers[0].pid, signal.SIGKILL)
    workers[0].wait(timeout=10)
    assert wait_all(workers[1:], timeout=240) == [0], log_excerpt(logs[1])
    assert_every_item_once(es, cluster, job.job_id)
    assert JobStats(cluster, SITE).get(job.job_id).get("frontier/reclaimed_leases", 0) >= 1


def test_sigkilled_master_restarted_with_its_aof_loses_nothing(
    site: DemoSite,
    cluster: redis.cluster.RedisCluster,
    redis_cluster: RedisCluster,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    site.control(slow={"rate": 1.0, "ms": 100, "paths": ["/product/"]})
    job = produce(cluster, SITE, base_url=site.url)
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = start_workers(site, redis_cluster, es_node, job.job_id, logs)
    # The master holding the {demo} slot: the frontier, dedup state, ledger and spill.
    port = cluster.get_node_from_key(SiteKeys(SITE).partition(0, 1).priorities).port
    index = next(i for i, node in enumerate(redis_cluster.nodes) if node.port == port)
    wait_for(
        lambda: job_counters(cluster, SITE, job.job_id).get("items/stored", 0) >= 20,
        timeout=90,
        what="the crawl to get going",
    )
    redis_cluster.nodes[index].kill()  # SIGKILL: no shutdown, only what the AOF holds
    time.sleep(3)  # workers meet CLUSTERDOWN / refused connections meanwhile
    redis_cluster.start_node(index)
    codes = wait_all(workers, timeout=300)
    assert codes == [0, 0], log_excerpt(logs[0]) + log_excerpt(logs[1])
    assert_every_item_once(es, cluster, job.job_id)
    # The outage really hit a running crawl.
    assert any("Redis" in log.read_text() and "unreachable" in log.read_text() for log in logs)
