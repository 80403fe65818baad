"""Failures during real crawls: Elasticsearch stopped and restarted, a worker SIGKILLed.

Slow product pages keep the crawl going while the failure happens.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from elasticsearch import Elasticsearch

from core.dedup.detector import job_changes
from core.frontier.drain import drain_state
from core.frontier.workers import WorkerRegistry
from core.jobs.index import job_counters, job_document
from core.store import spill_size
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
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
from tests.crawlers.support import log_excerpt, wait_all, wait_for

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 240
ES_SETTINGS = {"action.destructive_requires_name": "false"}


site = module_site("failure-site", PRODUCTS)


@pytest.fixture(scope="module")
def all_keys() -> set[str]:
    return {key_of(p.sku) for p in build_catalog(n_products=PRODUCTS).products}


@pytest.fixture
def server(site: DemoSite, redis_server: RedisServer) -> Iterator[redis.Redis]:
    site.reset()
    client = redis_server.client()
    client.flushdb()
    yield client
    client.flushdb()
    site.reset()


def test_elasticsearch_stopped_mid_crawl_every_item_is_indexed_once(
    site: DemoSite,
    server: redis.Redis,
    redis_server: RedisServer,
    all_keys: set[str],
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "es-home"
    node = ElasticsearchNode(run_dir=tmp_path, data_dir=data_dir, settings=ES_SETTINGS).start()
    port = node.port
    es = Elasticsearch(node.url, request_timeout=30, max_retries=0)
    try:
        # Items are yielded from the reviews API: slow it, so they trickle in for longer
        # than the node takes to stop (at 300 ms a loaded machine finished the crawl first).
        site.control(slow={"rate": 1.0, "ms": 1000, "paths": ["/api/products/"]})
        job = produce(server, "demo", base_url=site.url)
        log = tmp_path / "worker.log"
        # Always-on: the worker outlives the outage, however fast the crawl goes.
        worker = start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_server.url,
            es_url=node.url,
            settings={"STORE_SPILL_AFTER": 1.0},
            arguments={"always_on": "true"},
        )
        wait_for(lambda: count_docs(es) >= 30, timeout=90, what="the first stored items")
        node.stop()  # mid-crawl: the worker keeps crawling, items go to the spill
        wait_for(lambda: spill_size(server, "demo") >= 10, timeout=30, what="items to be spilled")
        stored_before_restart = job_counters(server, "demo", job.job_id).get("store/indexed", 0)
        node = ElasticsearchNode(
            run_dir=tmp_path, port=port, data_dir=data_dir, settings=ES_SETTINGS
        ).start()
        wait_for(
            lambda: spill_size(server, "demo") == 0 and count_docs(es) >= PRODUCTS,
            timeout=90,
            what="the worker to drain its spill into the restarted node",
        )
        worker.send_signal(signal.SIGTERM)
        assert wait_all([worker], timeout=60) == [0], log_excerpt(log)

        docs = stored_docs(es)
        assert Counter(doc["_id"] for doc in docs) == Counter(all_keys)  # all, each once
        assert spill_size(server, "demo") == 0
        counters = job_counters(server, "demo", job.job_id)
        assert stored_before_restart < PRODUCTS
        assert counters["store/spilled"] >= 10
        assert counters["store/spill_drained"] == counters["store/spilled"]
        assert counters["store/outages"] >= 1
        assert job_changes(server, "demo", job.job_id).counts["new"] == PRODUCTS
        # One line per state change of the outage, from the store; none of the client's
        # per-attempt lines (requests, nodes marked dead, retry tracebacks).
        text = log.read_text()
        assert text.count("[core.store.writer] WARNING: Elasticsearch unreachable") == 1
        assert text.count("[core.store.writer] INFO: Elasticsearch reachable again") == 1
        assert "Traceback" not in text
        assert "[elastic_transport" not in text
    finally:
        es.close()
        node.stop()


def test_sigkilled_worker_leaves_no_duplicate_documents(
    site: DemoSite,
    server: redis.Redis,
    redis_server: RedisServer,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    all_keys: set[str],
    tmp_path: Path,
) -> None:
    reset_store(es, server)
    # Items come from the reviews API: slow it, so the victim dies holding leases whose
    # items are still being fetched or wait in its store's buffer.
    site.control(slow={"rate": 1.0, "ms": 500, "paths": ["/api/products/"]})
    job = produce(server, "demo", base_url=site.url)
    logs = [tmp_path / f"worker-{n}.log" for n in (1, 2)]
    workers = [
        start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_server.url,
            es_url=es_node.url,
        )
        for log in logs
    ]
    registry = WorkerRegistry(server, "demo")

    def victim_is_busy() -> bool:
        return (
            any(w.pid == workers[0].pid and w.in_flight >= 4 for w in registry.live())
            and count_docs(es) >= 20
        )

    wait_for(victim_is_busy, timeout=90, what="worker 1 to hold leases with items stored")
    os.kill(workers[0].pid, signal.SIGKILL)
    workers[0].wait(timeout=10)
    killed_at = time.monotonic()
    assert wait_all(workers[1:], timeout=180) == [0], log_excerpt(logs[1])

    docs = stored_docs(es)
    # Its requests were reclaimed and crawled again; deterministic ids absorb re-stores.
    assert Counter(doc["_id"] for doc in docs) == Counter(all_keys)
    assert {doc["job_id"] for doc in docs} == {job.job_id}
    changes = job_changes(server, "demo", job.job_id)
    assert changes.counts == {"new": PRODUCTS, "changed": 0, "unchanged": 0}
    assert changes.new == all_keys
    assert spill_size(server, "demo") == 0
    counters = job_counters(server, "demo", job.job_id)
    assert counters.get("frontier/reclaimed_leases", 0) >= 1
    # The report's figures come from the job's ledger: exact despite the kill (the
    # victim's last stats interval, pushed as deltas, died with it).
    document = job_document("demo", job.job_id, "completed", 0, 1, counters)
    assert (
        document["items_scraped"],
        document["items_new"],
        document["items_stored"],
        document["items_invalid"],
        document["items_incomplete"],
    ) == (PRODUCTS, PRODUCTS, PRODUCTS, 0, 0)
    state = drain_state(server, "demo", job.job_id)
    assert (state.queued, state.leased) == (0, 0)
    assert time.monotonic() - killed_at < 180
    reset_store(es, server)
