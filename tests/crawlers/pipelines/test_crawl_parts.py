"""Parts of an item during real frontier crawls: a reviews API answering 503.

A burst longer than the fetch layer's retries is outlasted by queueing the part again
across the job; a part that never comes is stored marked ``incomplete``, counted in the
job's figures, and the next run fetches it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from elasticsearch import Elasticsearch

from core.figures.ledger import incomplete_items
from core.jobs.index import job_counters, job_document
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.support import (
    key_of,
    module_site,
    reset_store,
    start_store_worker,
    stored_docs,
)
from tests.crawlers.support import final_stats, log_excerpt, wait_all

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 24
# Fast rounds for the test: the fetch layer's retries, then the part's rounds.
FAST_PARTS = {
    "RETRY_TIMES": 1,
    "RETRY_BACKOFF_BASE": 0.05,
    "PART_RETRY_TIMES": 2,
    "PART_RETRY_BACKOFF": 0.4,
}


site = module_site("parts-site", PRODUCTS)


@pytest.fixture
def server(site: DemoSite, redis_server: RedisServer, es: Elasticsearch) -> Iterator[redis.Redis]:
    site.reset()
    client = redis_server.client()
    reset_store(es, client)
    yield client
    reset_store(es, client)
    site.reset()


def crawl(site: DemoSite, server: redis.Redis, redis_url: str, es_url: str, log: Path) -> str:
    job = produce(server, "demo", base_url=site.url)
    worker = start_store_worker(
        job_id=job.job_id,
        base_url=site.url,
        log_path=log,
        redis_url=redis_url,
        es_url=es_url,
        settings=FAST_PARTS,
    )
    assert wait_all([worker], timeout=120) == [0], log_excerpt(log)
    return job.job_id


def reviews_path(sku: str) -> str:
    return f"/api/products/{sku}/reviews"


def test_a_burst_longer_than_the_retries_is_outlasted_across_the_job(
    site: DemoSite,
    server: redis.Redis,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    es: Elasticsearch,
    tmp_path: Path,
) -> None:
    # Every reviews request fails until 40 have failed: more than each request's fetch
    # retries (2 attempts), fewer than the part's rounds add up to.
    site.control(error_burst={"count": 40, "paths": ["/api/products/"]})
    log = tmp_path / "worker.log"
    job_id = crawl(site, server, redis_server.url, es_node.url, log)

    docs = stored_docs(es)
    expected = {p.sku: len(p.reviews) for p in build_catalog(n_products=PRODUCTS).products}
    assert {d["sku"]: len(d["reviews"]) for d in docs} == expected
    assert not any(d.get("incomplete") for d in docs)
    stats = final_stats(log)
    assert stats["parts/requeued/reviews"] >= 1
    assert "parts/gave_up/reviews" not in stats
    figures = job_document("demo", job_id, "completed", 0, 1, job_counters(server, "demo", job_id))
    assert (figures["items_stored"], figures["items_incomplete"]) == (PRODUCTS, 0)


def test_a_part_that_never_comes_is_stored_incomplete_then_fetched_next_run(
    site: DemoSite,
    server: redis.Redis,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    es: Elasticsearch,
    tmp_path: Path,
) -> None:
    catalog = build_catalog(n_products=PRODUCTS)
    broken = catalog.products[3]
    site.control(error_burst={"count": 1000, "paths": [reviews_path(broken.sku)]})
    job_id = crawl(site, server, redis_server.url, es_node.url, tmp_path / "first.log")

    docs = {d["sku"]: d for d in stored_docs(es)}
    assert len(docs) == PRODUCTS
    assert docs[broken.sku]["incomplete"] == ["reviews"]
    assert docs[broken.sku]["reviews"] is None
    assert [sku for sku, d in docs.items() if d.get("incomplete")] == [broken.sku]
    assert incomplete_items(server, "demo", job_id) == {key_of(broken.sku): ["reviews"]}
    stats = final_stats(tmp_path / "first.log")
    assert stats["parts/requeued/reviews"] == FAST_PARTS["PART_RETRY_TIMES"]
    assert stats["parts/gave_up/reviews"] == 1
    document = job_document("demo", job_id, "completed", 0, 1, job_counters(server, "demo", job_id))
    assert (document["items_stored"], document["items_incomplete"]) == (PRODUCTS, 1)

    # The API answers again: the next run stores the product whole.
    site.reset()
    next_job = crawl(site, server, redis_server.url, es_node.url, tmp_path / "second.log")
    docs = {d["sku"]: d for d in stored_docs(es)}
    assert not docs[broken.sku].get("incomplete")
    assert len(docs[broken.sku]["reviews"]) == len(broken.reviews)
    counters = job_counters(server, "demo", next_job)
    document = job_document("demo", next_job, "completed", 0, 1, counters)
    assert (document["items_incomplete"], document["items_changed"]) == (0, 1)
    assert document["items_unchanged"] == PRODUCTS - 1
