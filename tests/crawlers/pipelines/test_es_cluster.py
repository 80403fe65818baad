"""A real crawl into a three-node Elasticsearch cluster that loses a node half-way.

Two ``scrapy crawl demo`` workers share the Redis frontier and write through the store to
ELASTICSEARCH_URL = the three nodes' list. Once the first items are stored (and the item
index's replica has started), the node holding the primary of the item index is stopped: the
cluster turns yellow (its replica is promoted, the lost copy unassigned) and the crawl goes
on against the other two. Every product must
end up stored exactly once, the job's ledger must say so, and the node, started again,
rejoins with its copy: green.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from elasticsearch import Elasticsearch

from core.config import elasticsearch_client_kwargs
from core.jobs.index import job_counters
from core.store import IndexLayout, spill_size
from crawlers.addon import project_settings
from crawlers.cli.producer import produce
from crawlers.runtime.services import es_client_kwargs
from harness.base import wait_until
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchCluster
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.support import (
    count_docs,
    key_of,
    module_site,
    reset_store,
    start_store_worker,
    stored_docs,
)
from tests.crawlers.support import final_stats, log_excerpt, wait_all

PRODUCTS = 240
WORKERS = 2
# An item is complete with its reviews (the last request of a product): until the node is
# gone each reviews call takes SLOW_MS and a worker fetches 4 at a time, so few items are
# stored by then; the rest of the crawl, with the node away, goes faster.
REVIEWS = ["/api/products/"]
SLOW_MS = 1000
SLOW_MS_WITHOUT_NODE = 100
CONCURRENCY = 4


site = module_site("es-cluster-site", PRODUCTS)


def test_pipeline_clients_try_a_refused_connection_on_the_other_listed_nodes() -> None:
    settings = project_settings().copy()
    settings.set("ELASTICSEARCH_URL", "http://es1:9200,http://es2:9200,http://es3:9200")
    kwargs = es_client_kwargs(settings)
    assert kwargs["hosts"] == ["http://es1:9200", "http://es2:9200", "http://es3:9200"]
    # Each other node once, on a connection error only: no status, no timeout is retried.
    assert (kwargs["max_retries"], kwargs["retry_on_status"], kwargs["retry_on_timeout"]) == (
        2,
        (),
        False,
    )
    settings.set("ELASTICSEARCH_URL", "http://es1:9200")
    assert es_client_kwargs(settings)["max_retries"] == 0


def primary_holder(es: Elasticsearch, cluster: ElasticsearchCluster, index: str) -> int:
    """The cluster's index of the node holding ``index``'s (one) primary shard."""
    shards = es.cat.shards(index=index, format="json")
    name = next(s["node"] for s in shards if s["prirep"] == "p" and s["state"] == "STARTED")
    return [node.name for node in cluster.nodes].index(name)


def test_a_crawl_stores_every_item_once_while_one_node_of_three_is_down(
    site: DemoSite,
    es_cluster: ElasticsearchCluster,
    redis_server: RedisServer,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    server = redis_server.client()
    index = IndexLayout.index("demo", "demo_product")
    es = Elasticsearch(**elasticsearch_client_kwargs(es_cluster.url), request_timeout=30)  # type: ignore[arg-type]
    reset_store(es, server)
    site.control(slow={"rate": 1.0, "ms": SLOW_MS, "paths": REVIEWS})
    job = produce(server, "demo", base_url=site.url)
    logs = [tmp_path / f"worker-{n}.log" for n in range(WORKERS)]
    workers = [
        start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_server.url,
            es_url=es_cluster.url,
            settings={
                "CONCURRENT_REQUESTS": CONCURRENCY,
                "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
            },
        )
        for log in logs
    ]
    victim: int | None = None
    try:
        # As soon as the workers have created the item index and its replica has started
        # (losing a primary's only copy would be red, not the node loss tested here).
        wait_until(lambda: count_docs(es) > 0, timeout=120, what="the first stored items")
        es_cluster.wait_for(status="green", nodes=3, timeout=60)
        victim = primary_holder(es, es_cluster, index)
        stored_before = count_docs(es)
        es_cluster.stop_node(victim)
        es_cluster.wait_for(status="yellow", nodes=2, timeout=60)
        site.control(slow={"rate": 1.0, "ms": SLOW_MS_WITHOUT_NODE, "paths": REVIEWS})
        # The node went away mid-crawl: workers still running, items still to store.
        assert [w.poll() for w in workers] == [None] * WORKERS
        assert stored_before <= PRODUCTS * 3 // 4  # a quarter of the items or more still to store

        assert wait_all(workers, timeout=300) == [0] * WORKERS, log_excerpt(logs[0])
        health = es.cluster.health()
        assert (health["status"], health["number_of_nodes"]) == ("yellow", 2)

        docs = stored_docs(es)
        keys = Counter(doc["item_key"] for doc in docs)
        duplicates = sum(n - 1 for n in keys.values())
        expected = {key_of(p.sku) for p in build_catalog(n_products=PRODUCTS).products}
        counters = job_counters(server, "demo", job.job_id)
        numbers = {
            "items_expected": len(expected),
            "stored": len(docs),
            "distinct_keys": len(keys),
            "duplicates": duplicates,
            "ledger_stored": counters.get("items/stored"),
            "stored_before_node_loss": stored_before,
            "store_retried": sum(final_stats(log).get("store/retried", 0) for log in logs),
        }
        print(f"\nES node loss during a crawl: {numbers}")
        for name, value in numbers.items():
            record_property(name, value)
        assert duplicates == 0 and set(keys) == expected and len(docs) == PRODUCTS
        assert counters["items/stored"] == counters["items/new"] == PRODUCTS
        assert spill_size(server, "demo") == 0
        # auto replicas: the workers created the index with one replica (three data nodes).
        settings = es.indices.get_settings(index=index)[index]["settings"]["index"]
        assert settings["number_of_replicas"] == "1"

        es_cluster.start_node(victim)  # waits for three nodes and green
        victim = None
        health = es.cluster.health()
        assert (health["status"], health["number_of_nodes"]) == ("green", 3)
        assert count_docs(es) == PRODUCTS
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
        if victim is not None:
            es_cluster.start_node(victim)
        site.control(slow=None)
        reset_store(es, server)
        es.close()
