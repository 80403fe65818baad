"""A real crawl on a Redis Cluster (``REDIS_CLUSTER``): two ``scrapy crawl demo`` workers
share the frontier, dedup state, ledger and spill on the cluster's master for ``{demo}``
and store every product of the demo site in Elasticsearch exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.cluster
from elasticsearch import Elasticsearch

from core.dedup import job_changes
from core.drain import drain_state
from core.jobs_index import job_counters
from core.keys import SiteKeys
from core.redis_client import connect
from core.store import spill_size
from crawlers.producer import produce
from demo_site.catalog import build_catalog
from services.demo_site import DemoSite
from services.es_node import ElasticsearchNode
from services.redis_server import RedisCluster
from tests.crawlers.pipelines.support import (
    SITE,
    key_of,
    reset_store,
    start_store_worker,
    stored_docs,
)
from tests.crawlers.support import final_stats, log_excerpt, wait_all

PRODUCTS = 120


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("cluster-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="cluster-site") as server:
        yield server


@pytest.fixture
def cluster(redis_cluster: RedisCluster, es: Elasticsearch) -> Iterator[redis.cluster.RedisCluster]:
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
    workers = [
        start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_cluster.url,
            es_url=es_node.url,
            settings={"REDIS_CLUSTER": True},
        )
        for log in logs
    ]
    assert wait_all(workers, timeout=240) == [0, 0], log_excerpt(logs[0])

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
    master = cluster.get_node_from_key(SiteKeys(SITE).queue)
    stats_key = SiteKeys(SITE).stats(job.job_id)
    assert master.redis_connection is not None
    assert master.redis_connection.exists(stats_key, SiteKeys(SITE).job_stored(job.job_id)) == 2
