"""Two workers, one whose clock runs an hour behind (libfaketime), crawl one job together.

Nothing that decides anything may come from a worker's clock: the store's external
version (last_seen) and first_seen/last_changed come from Redis' ``TIME`` in dedup's Lua
call; a part queued again across the job carries ``not_before`` on the shared clock
(``crawlers.runtime.clock``); liveness deadlines are Redis-side. So the late worker's writes are
neither refused as stale nor win over fresher ones, and the timestamps stay right.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from elasticsearch import Elasticsearch

from core.store.layout import epoch_ms
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.support import module_site, reset_store, start_store_worker
from tests.crawlers.support import final_stats, log_excerpt, wait_all

PRODUCTS = 24
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
HOUR_BEHIND = {
    "LD_PRELOAD": str(LIBFAKETIME),
    "FAKETIME": "-1h",
    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
}
FAST_PARTS = {
    "RETRY_TIMES": 1,
    "RETRY_BACKOFF_BASE": 0.05,
    "PART_RETRY_TIMES": 3,
    "PART_RETRY_BACKOFF": 0.4,
    "CONCURRENT_REQUESTS": 4,
    # Job 2 must fetch every product again, whole (the listing-card skip and conditional
    # GETs have their own tests).
    "RECRAWL_CARD_SKIP": False,
    "RECRAWL_CONDITIONAL": False,
}

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not LIBFAKETIME.is_file(), reason="libfaketime missing: `apt-get install libfaketime`"
    ),
]


site = module_site("clocks-site", PRODUCTS)


@pytest.fixture
def server(site: DemoSite, redis_server: RedisServer, es: Elasticsearch) -> Iterator[redis.Redis]:
    client = redis_server.client()
    reset_store(es, client)
    yield client
    reset_store(es, client)
    site.reset()


def documents(es: Elasticsearch) -> dict[str, dict[str, Any]]:
    """sku -> the stored document with its ``_version`` (the external version)."""
    es.indices.refresh(index="items-demo")
    hits = es.search(index="items-demo", size=1000, version=True)["hits"]["hits"]
    return {hit["_source"]["sku"]: {**hit["_source"], "_version": hit["_version"]} for hit in hits}


def redis_ms(server: redis.Redis) -> int:
    seconds, micros = server.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_a_worker_an_hour_behind_neither_loses_nor_wins_writes(
    site: DemoSite,
    server: redis.Redis,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    es: Elasticsearch,
    tmp_path: Path,
) -> None:
    def worker(job_id: str, name: str, env: dict[str, str] | None = None) -> Any:
        return start_store_worker(
            job_id=job_id,
            base_url=site.url,
            log_path=tmp_path / f"{name}.log",
            redis_url=redis_server.url,
            es_url=es_node.url,
            settings=FAST_PARTS,
            env=env,
        )

    # Job 1, one correct worker: every product new.
    first_job = produce(server, "demo", base_url=site.url).job_id
    assert wait_all([worker(first_job, "first")], timeout=120) == [0]
    before = documents(es)
    assert len(before) == PRODUCTS

    # Job 2: the site changed a product, and its reviews API fails in bursts, so parts
    # are queued again with not_before and leased by either worker.
    site.control(revision=1, error_burst={"count": 12, "paths": ["/api/products/"]})
    job2_start = redis_ms(server)
    second_job = produce(server, "demo", base_url=site.url).job_id
    workers = [worker(second_job, "late", HOUR_BEHIND), worker(second_job, "correct")]
    codes = wait_all(workers, timeout=180)
    assert codes == [0, 0], log_excerpt(tmp_path / "late.log") + log_excerpt(
        tmp_path / "correct.log"
    )
    job2_end = redis_ms(server)

    late_log = (tmp_path / "late.log").read_text()
    assert "this host's clock is 3600" in late_log and "behind Redis' clock" in late_log
    assert final_stats(tmp_path / "late.log").get("item_scraped_count", 0) > 0
    assert final_stats(tmp_path / "correct.log").get("item_scraped_count", 0) > 0

    after = documents(es)
    catalog = {p.sku: p for p in build_catalog(n_products=PRODUCTS, revision=1).products}
    changed = {
        p.sku
        for p in build_catalog(n_products=PRODUCTS).products
        if p.price != catalog[p.sku].price
    }
    assert changed, "revision 1 changes at least one product"
    window = (job2_start - 1000, job2_end + 1000)
    for sku, doc in after.items():
        old = before[sku]
        # No fresh write refused: revision 1's content is stored, whole.
        assert doc["price"] == catalog[sku].price, sku
        assert not doc.get("incomplete") and len(doc["reviews"]) == len(catalog[sku].reviews)
        # No stale write won: job 2's version is newer than job 1's, on Redis' clock.
        assert doc["_version"] > old["_version"], sku
        assert window[0] <= epoch_ms(doc["last_seen"]) <= window[1], sku
        assert doc["first_seen"] == old["first_seen"], sku
        if sku in changed:
            assert window[0] <= epoch_ms(doc["last_changed"]) <= window[1], sku
        else:
            assert doc["last_changed"] == old["last_changed"], sku
