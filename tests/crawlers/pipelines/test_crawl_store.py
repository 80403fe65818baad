"""Real crawls of the demo site through validate -> dedup -> store into Elasticsearch.

Two ``scrapy crawl demo`` workers share the Redis frontier; the crawl of revision 0 is
the baseline of the second test, which switches the site to revision 1 (5% of products
changed, 2% added) and crawls again with a new job.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from elasticsearch import Elasticsearch

from core.dedup.detector import JobChanges, job_changes
from core.jobs.index import JOBS_ALIAS, job_counters, job_started_at, write_job_document
from core.store import epoch_ms, spill_size
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import Catalog, build_catalog
from tests.crawlers.pipelines.support import (
    count_docs,
    key_of,
    module_site,
    reset_store,
    start_store_worker,
    stored_docs,
)
from tests.crawlers.support import log_excerpt, wait_all

PRODUCTS = 240


@dataclass
class Crawl:
    job_id: str
    docs: dict[str, dict[str, Any]]  # by _id
    changes: JobChanges
    counters: dict[str, int]


site = module_site("store-site", PRODUCTS)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(n_products=PRODUCTS)


def crawl(
    site: DemoSite,
    server: redis.Redis,
    redis_url: str,
    es: Elasticsearch,
    es_url: str,
    log_dir: Path,
    workers: int = 2,
) -> Crawl:
    job = produce(server, "demo", base_url=site.url)
    logs = [log_dir / f"{job.job_id}-{n}.log" for n in range(workers)]
    procs = [
        start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_url,
            es_url=es_url,
            # Full re-crawls: dedup's figures over every product (the listing-card skip,
            # which leaves detail-only changes to the rolling refresh: tests/crawlers/
            # test_cards.py).
            settings={"RECRAWL_CARD_SKIP": False},
        )
        for log in logs
    ]
    assert wait_all(procs, timeout=180) == [0] * workers, log_excerpt(logs[0])
    return Crawl(
        job_id=job.job_id,
        docs={doc["_id"]: doc for doc in stored_docs(es)},
        changes=job_changes(server, "demo", job.job_id),
        counters=job_counters(server, "demo", job.job_id),
    )


@pytest.fixture(scope="module")
def baseline(
    site: DemoSite,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Crawl]:
    server = redis_server.client()
    site.reset()
    with Elasticsearch(es_node.url, request_timeout=60) as es:
        reset_store(es, server)
        yield crawl(
            site, server, redis_server.url, es, es_node.url, tmp_path_factory.mktemp("baseline")
        )
        reset_store(es, server)


def test_full_crawl_stores_every_product_once_with_correct_fields(
    baseline: Crawl,
    catalog: Catalog,
    site: DemoSite,
    redis_server: RedisServer,
    es: Elasticsearch,
) -> None:
    server = redis_server.client()
    assert count_docs(es) == PRODUCTS  # one document per product, no duplicates
    assert set(baseline.docs) == {key_of(p.sku) for p in catalog.products}
    for product in catalog.products:
        doc = baseline.docs[key_of(product.sku)]
        expected = product.to_dict(site.url)
        assert {name: doc[name] for name in expected} == expected, product.sku
        assert doc["job_id"] == baseline.job_id
        assert doc["item_type"] == "demo_product" and doc["site"] == "demo"
        assert doc["item_key"] == key_of(product.sku)
        assert doc["first_seen"] == doc["last_changed"] == doc["last_seen"]
    # Every product is new in the first crawl, and the LLM step can find them all.
    assert baseline.changes.new == set(baseline.docs)
    assert baseline.changes.counts == {"new": PRODUCTS, "changed": 0, "unchanged": 0}
    counters = baseline.counters
    assert counters["validation/valid/demo_product"] == PRODUCTS
    assert counters["store/indexed"] == PRODUCTS
    assert counters["item_scraped_count"] == PRODUCTS
    assert spill_size(server, "demo") == 0

    document = write_job_document(
        es,
        "demo",
        baseline.job_id,
        "succeeded",
        job_started_at(server, "demo", baseline.job_id),
        dt.datetime.now(tz=dt.UTC),
        counters,
        spill_remaining=spill_size(server, "demo"),
        refresh=True,
    )
    stored = es.get(index=JOBS_ALIAS, id=f"demo:{baseline.job_id}")["_source"]
    assert stored == document
    assert (stored["items_new"], stored["items_changed"], stored["items_unchanged"]) == (
        PRODUCTS,
        0,
        0,
    )
    assert stored["items_scraped"] == PRODUCTS and stored["block_rate"] == 0.0
    assert stored["duration_seconds"] > 0


def test_second_crawl_reports_exactly_the_changed_and_added_products(
    baseline: Crawl,
    catalog: Catalog,
    site: DemoSite,
    redis_server: RedisServer,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    revised = catalog.revised(1)
    assert len(revised.changed_skus) == 12 and len(revised.added_skus) == 5
    site.control(revision=1)
    try:
        second = crawl(site, redis_server.client(), redis_server.url, es, es_node.url, tmp_path)
    finally:
        site.control(revision=0)

    changed = {key_of(sku) for sku in revised.changed_skus}
    added = {key_of(sku) for sku in revised.added_skus}
    assert second.changes.new == added
    assert second.changes.changed == changed
    unchanged = PRODUCTS - len(changed)
    assert second.changes.counts == {
        "new": len(added),
        "changed": len(changed),
        "unchanged": unchanged,
    }
    assert second.counters["items/unchanged"] == unchanged

    assert count_docs(es) == PRODUCTS + len(added)
    for product in revised.products:
        key = key_of(product.sku)
        doc = second.docs[key]
        expected = product.to_dict(site.url)
        assert {name: doc[name] for name in expected} == expected, product.sku
        assert doc["job_id"] == second.job_id
        if key in added:
            assert doc["first_seen"] == doc["last_changed"] == doc["last_seen"]
            continue
        before = baseline.docs[key]
        assert doc["first_seen"] == before["first_seen"]  # set once, on creation
        assert epoch_ms(doc["last_seen"]) > epoch_ms(before["last_seen"])  # every crawl
        if key in changed:
            assert epoch_ms(doc["last_changed"]) > epoch_ms(before["last_changed"])
            assert doc["last_changed"] == doc["last_seen"]
            assert doc["content_hash"] != before["content_hash"]
        else:
            assert doc["last_changed"] == before["last_changed"], product.sku
            assert doc["content_hash"] == before["content_hash"]
