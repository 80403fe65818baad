"""Removed items against a real Redis (and Redis Cluster) and a real ES node: items stored
by the real item pipelines, chunked by the real LLM step; K complete jobs without an item
mark it removed once, blocked/failed/unfinished jobs count nothing, a removed item seen
again is restored and chunked again, a replayed step counts nothing twice."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
import redis
from elasticsearch import Elasticsearch

from core.dedup.detector import ChangeDetector, job_changes
from core.figures.stats import JobStats
from core.jobs.index import job_counters, job_document
from core.keys import SiteKeys
from core.recrawl.removals import (
    RemovalReport,
    apply_job,
    failed_requests,
    job_report,
    removed_at,
    restored_keys,
    skip_reason,
)
from core.redis_client import connect, connect_async
from core.store import epoch_ms, get_items, index_for_key
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.index import chunks_index
from indexing.process import job_item_keys, process_job
from standins.demo_site.catalog import Product, build_catalog
from tests.core.redis_target import Target
from tests.indexing.support import RecordingEmbedder, product_item, store_job

K = 2


@dataclass
class Shop:
    """A fresh site on the session's Redis and ES node, crawled job by job."""

    site: str
    es: Elasticsearch
    server: redis.Redis
    es_url: str
    redis_url: str
    products: tuple[Product, ...]

    def crawl(self, job_id: str, products: Sequence[Product]) -> None:
        """``products`` through the real pipelines as job ``job_id`` (what a crawl stores)."""
        items = [product_item(p, job_id) for p in products]
        store_job(self.es_url, self.redis_url, self.site, job_id, items)

    def apply(self, job_id: str, *, finished: bool = True) -> RemovalReport:
        return apply_job(
            self.server, self.es, self.site, job_id, removed_after_jobs=K, finished=finished
        )

    def key(self, product: Product) -> str:
        (key,) = [k for k in self.keys() if k.endswith(product.sku)]
        return key

    def keys(self) -> set[str]:
        return {k.decode() for k in self.server.hkeys(SiteKeys(self.site).item_hashes)}

    def chunk_count(self, key: str) -> int:
        self.es.indices.refresh(index=chunks_index(self.site))
        query = {"term": {"item_key": key}}
        return int(self.es.count(index=chunks_index(self.site), query=query)["count"])

    def document(self, key: str) -> dict[str, object]:
        return dict(get_items(self.es, [key])[key])

    def misses(self, key: str) -> str | None:
        raw = self.server.hget(SiteKeys(self.site).removal_misses, key)
        return None if raw is None else raw.decode()


@pytest.fixture
def shop(es_node: ElasticsearchNode, redis_server: RedisServer) -> Iterator[Shop]:
    site = f"rm{uuid.uuid4().hex[:8]}"
    es = Elasticsearch(es_node.url, request_timeout=120)
    server = redis_server.client()
    products = build_catalog(n_products=6).products
    yield Shop(site, es, server, es_node.url, redis_server.url, products)
    es.indices.delete(index=f"items-{site}-*,{chunks_index(site)}", ignore_unavailable=True)
    es.close()


def test_k_complete_jobs_without_an_item_remove_it_once_and_seeing_it_restores_it(
    shop: Shop, local_embedder: RecordingEmbedder
) -> None:
    embedder = local_embedder
    gone, *rest = shop.products
    shop.crawl("job-1", shop.products)
    first = shop.apply("job-1")
    assert (first.removed, first.restored, first.skipped) == (0, 0, None)
    assert first.misses_counted and first.checked == len(shop.products)
    process_job(shop.es, shop.server, shop.site, "job-1", embedder)
    key = shop.key(gone)
    chunks = shop.chunk_count(key)
    assert chunks > 0

    # K - 1 complete jobs without it: one miss, nothing removed.
    shop.crawl("job-2", rest)
    assert shop.apply("job-2").removed == 0
    assert shop.misses(key) == "1:job-2"
    assert "removed_at" not in shop.document(key) and shop.chunk_count(key) == chunks

    # The K-th: removed_at (Redis' TIME) on its document, its chunks gone, counted once.
    shop.crawl("job-3", rest)
    third = shop.apply("job-3")
    assert (third.removed, third.restored, third.documents_updated) == (1, 0, 1)
    assert third.chunks_deleted == chunks
    stamp = removed_at(shop.server, shop.site, key)
    assert stamp is not None and epoch_ms(str(shop.document(key)["removed_at"])) == stamp
    assert shop.chunk_count(key) == 0
    assert all(shop.chunk_count(shop.key(p)) > 0 for p in rest)
    assert all("removed_at" not in shop.document(shop.key(p)) for p in rest)
    counters = job_counters(shop.server, shop.site, "job-3")
    assert (counters["items/removed"], counters["items/restored"]) == (1, 0)
    document = job_document(shop.site, "job-3", "completed", None, None, counters)
    assert (document["items_removed"], document["items_restored"]) == (1, 0)

    # A retry of the step (the flow resumed): reported again, nothing counted twice.
    replay = shop.apply("job-3")
    assert replay.replayed and (replay.removed, replay.restored) == (1, 0)
    assert shop.misses(key) == "2:job-3"
    assert job_report(shop.server, shop.site, "job-3") == third

    # Still missing: already removed, not counted again, its removed_at kept.
    shop.crawl("job-4", rest)
    assert shop.apply("job-4").removed == 0
    assert removed_at(shop.server, shop.site, key) == stamp

    # Back (unchanged): restored, removed_at cleared, chunked again by the LLM step.
    shop.crawl("job-5", shop.products)
    assert job_changes(shop.server, shop.site, "job-5").new_or_changed == set()
    fifth = shop.apply("job-5")
    assert (fifth.removed, fifth.restored) == (0, 1)
    assert removed_at(shop.server, shop.site, key) is None and shop.misses(key) is None
    assert shop.document(key).get("removed_at") is None
    assert restored_keys(shop.server, shop.site, "job-5") == {key}
    assert job_item_keys(shop.server, shop.site, "job-5") == {key}
    llm = process_job(shop.es, shop.server, shop.site, "job-5", embedder)
    assert (llm.items, llm.processed) == (1, 1)
    assert shop.chunk_count(key) == chunks
    assert job_counters(shop.server, shop.site, "job-5")["items/restored"] == 1


def test_blocked_failed_or_unfinished_jobs_count_no_miss_but_still_restore(shop: Shop) -> None:
    gone, *rest = shop.products
    keys = SiteKeys(shop.site)
    shop.crawl("job-1", shop.products)
    shop.apply("job-1")
    key = shop.key(gone)

    # A page the site refused: its only response recorded in the ledger is a block.
    shop.crawl("job-2", rest)
    shop.server.hset(keys.job_responses("job-2"), "fp:0.0.1", "captcha")
    blocked = shop.apply("job-2")
    assert (blocked.misses_counted, blocked.skipped) == (False, "1 page(s) refused by the site")
    # A block a retry got past (a challenge passed in the browser) loses no page.
    shop.server.hset(keys.job_responses("job-2b"), "fp:0.0.0", "challenge")
    shop.server.hset(keys.job_responses("job-2b"), "fp:0.0.0:b", "challenge:r")
    shop.server.hset(keys.job_responses("job-2b"), "fp:0.0.1", "ok")
    assert skip_reason(shop.server, shop.site, "job-2b") == "the job saw no items"
    # A request the fetch layer gave up on.
    shop.crawl("job-3", rest)
    JobStats(shop.server, shop.site).add("job-3", {"fetch/gave_up/error": 2})
    assert shop.apply("job-3").skipped == "2 request(s) failed for good"
    # A job that did not finish.
    shop.crawl("job-4", rest)
    assert shop.apply("job-4", finished=False).skipped == "the job did not finish"
    assert shop.misses(key) is None  # three jobs without it, none counted

    # Two complete ones: removed now (the streak starts with them).
    for job in ("job-5", "job-6"):
        shop.crawl(job, rest)
        report = shop.apply(job)
    assert report.removed == 1 and report.skipped is None

    # Seen again in a blocked job: restored all the same (an item seen is present).
    shop.crawl("job-7", shop.products)
    shop.server.hset(keys.job_responses("job-7"), "fp:0.0.0", "blocked")
    restored = shop.apply("job-7")
    assert (restored.restored, restored.skipped) == (1, "1 page(s) refused by the site")
    assert shop.document(key).get("removed_at") is None


def test_failed_request_counters() -> None:
    counters = {
        "fetch/gave_up/captcha": 1,
        "errors/request_failed/HttpError": 2,
        "demo/request_failed": 3,
        "spider_exceptions/ValueError": 4,
        "frontier/item_error_gave_up": 5,
        "fetch/retry/error": 100,  # retried, then fine
        "demo/reviews_failed": 100,  # a part: its item was stored (incomplete)
    }
    assert failed_requests(counters) == 3 + 4 + 5


def test_a_request_failed_for_good_counts_once_whichever_counters_saw_it() -> None:
    # A generic spider's errback counts both families; the retry layer's give-up reached it.
    generic = {
        "fetch/gave_up/network": 781,
        "errors/request_failed/TCPTimedOutError": 781,
        "shop/request_failed": 781,
        "log_count/ERROR": 781,
    }
    assert failed_requests(generic) == generic["log_count/ERROR"]
    # A spider without an errback: only the retry layer counted its give-ups.
    assert failed_requests({"fetch/gave_up/error": 3, "fetch/gave_up/blocked": 2}) == 5
    # 404s reach the errback without any give-up.
    assert failed_requests({"errors/request_failed/HttpError": 7, "fetch/gave_up/error": 2}) == 7
    assert failed_requests({}) == 0


# -- the Redis part on one Redis and on a Redis Cluster (dedup's verdicts only, no docs) ----


def classify(target: Target, site: str, job: str, keys: Sequence[str]) -> None:
    """The job's verdicts as dedup records them (every key unchanged after its first job)."""

    async def main() -> None:
        client = connect_async(target.url, cluster=target.cluster)
        detector = ChangeDetector(client, site)
        try:
            await asyncio.gather(*(detector.classify(job, key, "h") for key in keys))
        finally:
            await client.aclose()

    asyncio.run(main())


def test_batches_replays_and_job_order_on_one_redis_and_a_cluster(
    target: Target, es: Elasticsearch
) -> None:
    site = f"rc{uuid.uuid4().hex[:8]}"
    server = connect(target.url, cluster=target.cluster)
    keys = [f"{site}:product:{n:05d}" for n in range(1200)]  # several HSCAN batches
    kept, dropped = keys[:1000], keys[1000:]
    for job, seen in (("a", keys), ("b", kept), ("c", keys)):
        # Started (as the producer records it) before its items are seen.
        server.zadd(SiteKeys(site).jobs, {job: time.time()})
        classify(target, site, job, seen)

    def apply(job: str) -> RemovalReport:
        return apply_job(server, es, site, job, removed_after_jobs=1)

    assert apply("a").checked == 1200
    after_b = apply("b")
    assert (after_b.removed, after_b.checked, after_b.documents_updated) == (200, 1200, 0)
    assert apply("b").removed == 200  # replayed
    assert server.hget(SiteKeys(site).removal_misses, dropped[0]) == b"1:b"
    # The job started after b is applied; a late first run of a (older) changes nothing.
    server.hdel(SiteKeys(site).removal_jobs, "a")
    stale = apply("a")
    assert stale.skipped == "job b, started later, was applied" and stale.restored == 0
    after_c = apply("c")
    assert (after_c.removed, after_c.restored) == (0, 200)
    assert restored_keys(server, site, "c") == set(dropped)
    assert server.hlen(SiteKeys(site).removed) == 0
    assert server.hlen(SiteKeys(site).removal_pending) == 0  # nothing to mirror: no docs
    # No document to mark: the updates found no alias and created no index in its place.
    assert not es.indices.exists(index=index_for_key(dropped[0]))
    server.close()
