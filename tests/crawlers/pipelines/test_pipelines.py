"""The pipeline classes in-process: configuration, the dedup -> store hand-over, drops."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.test import get_crawler

from core.dedup.detector import job_changes
from core.items_schema import plain_fields, schema_by_type
from core.store import IndexLayout, build_action
from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline, DedupUnavailable
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.runtime.item_context import find_context
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from harness.base import free_port
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.support import REPO_ROOT

BASE = "http://shop.example"
PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}


@pytest.fixture
def services(
    redis_server: RedisServer, es_node: ElasticsearchNode, es: Elasticsearch
) -> Iterator[dict[str, Any]]:
    """Settings naming the test's Redis and Elasticsearch (nothing in the environment)."""
    redis_server.client().flushdb()
    es.indices.delete(index="items-demo-*", ignore_unavailable=True, allow_no_indices=True)
    yield {"REDIS_URL": redis_server.url, "ELASTICSEARCH_URL": es_node.url}
    redis_server.client().flushdb()
    es.indices.delete(index="items-demo-*", ignore_unavailable=True, allow_no_indices=True)


NO_SERVICES: dict[str, Any] = {"REDIS_URL": None, "ELASTICSEARCH_URL": None}


def crawler_for(job_id: str = "job-1", **settings: Any) -> Crawler:
    """A crawler of the platform add-on (its defaults), configured by ``settings`` only."""
    crawler = get_crawler(DemoSpider, {**PLATFORM, "STORE_FLUSH_INTERVAL": 0.2, **settings})
    crawler.spider = DemoSpider.from_crawler(crawler, job_id=job_id, base_url=BASE)
    return crawler


def test_dedup_and_store_are_off_without_their_services() -> None:
    crawler = crawler_for(**NO_SERVICES)
    # Off in local mode: a bare NotConfigured (nothing above DEBUG), LocalModeSummary says
    # once what is off.
    with pytest.raises(NotConfigured) as dedup_off:
        DedupPipeline.from_crawler(crawler)
    with pytest.raises(NotConfigured) as store_off:
        StorePipeline.from_crawler(crawler)
    assert dedup_off.value.args == store_off.value.args == ()
    assert ValidationPipeline.from_crawler(crawler) is not None


def test_the_store_needs_dedup_before_it_and_clients_do_not_retry(
    es_node: ElasticsearchNode,
) -> None:
    crawler = crawler_for(REDIS_URL=None, ELASTICSEARCH_URL=es_node.url)
    # The store writes dedup's verdicts: without dedup it refuses to start, loudly.
    with pytest.raises(RuntimeError, match="DedupPipeline"):
        StorePipeline.from_crawler(crawler)
    DedupPipeline.from_crawler(crawler)  # ES only: dedup reads the stored documents
    store = StorePipeline.from_crawler(crawler)
    # One retry layer per hop: the writer's; the client's are off.
    es_kwargs = store.services.es_kwargs
    assert (es_kwargs["max_retries"], es_kwargs["retry_on_timeout"]) == (0, False)


def test_dedup_retries_a_bounded_number_of_times_then_fails_the_item_counted() -> None:
    # Redis refuses connections: a few quick retries, then the item fails (item_error),
    # neither passed on without a verdict nor dropped as if handled.
    crawler = crawler_for(
        REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
        DEDUP_RETRY_TIMES=2,
        DEDUP_RETRY_BACKOFF=0.01,
        DEDUP_RETRY_BACKOFF_MAX=0.02,
    )
    dedup = DedupPipeline.from_crawler(crawler)
    item = DemoProduct(**build_catalog(n_products=1).products[0].to_dict(BASE))

    async def main() -> None:
        await dedup.open_spider()
        try:
            with pytest.raises(DedupUnavailable, match="after 2 retries"):
                await dedup.process_item(item)
        finally:
            await CrawlServices.of(crawler).aclose()

    asyncio.run(main())
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert (stats["dedup/retries"], stats["dedup/failed"]) == (3, 1)
    assert find_context(item) is None  # no verdict left on the failed item


def test_validation_drop_names_every_field_and_counts_it() -> None:
    crawler = crawler_for(**NO_SERVICES)
    pipeline = ValidationPipeline.from_crawler(crawler)
    bad = DemoProduct(sku="DM-1", url=BASE + "/p", name=None, price="1", currency="EUR")  # type: ignore[arg-type]
    with pytest.raises(
        DropItem, match=r"invalid demo_product DM-1: name: missing; price: float_type"
    ):
        asyncio.run(pipeline.process_item(bad))
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["validation/invalid/demo_product/name/missing"] == 1
    assert stats["validation/invalid/demo_product/price/float_type"] == 1
    assert stats["validation/dropped/demo_product"] == 1


def test_chain_hands_the_verdict_to_the_store_and_forgets_it(
    services: dict[str, Any], es: Elasticsearch, redis_server: RedisServer
) -> None:
    crawler = crawler_for(**services)
    products = [DemoProduct(**p.to_dict(BASE)) for p in build_catalog(n_products=30).products]
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)

    async def main() -> None:
        await dedup.open_spider()
        await store.open_spider()
        try:
            valid = [await validate.process_item(item) for item in products]
            for item in valid:
                await dedup.process_item(item)
            verdicts = [find_context(item) for item in valid]
            assert sum(c is not None and c.verdict is not None for c in verdicts) == 30
            await asyncio.gather(*(store.process_item(item) for item in valid))
            for item in valid:  # as Scrapy signals each item that left the pipelines
                await crawler.signals.send_catch_log_async(
                    signal=signals.item_scraped, item=item, response=None, spider=crawler.spider
                )
            assert [find_context(item) for item in valid] == [None] * 30  # nothing left
        finally:
            await store.close_spider()
            await CrawlServices.of(crawler).aclose()

    asyncio.run(main())
    es.indices.refresh(index=IndexLayout.read_alias("demo"))
    assert es.count(index=IndexLayout.read_alias("demo"))["count"] == 30
    changes = job_changes(redis_server.client(), "demo", "job-1")
    assert changes.counts["new"] == 30
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["store/indexed"] == 30 and stats["dedup/verdict/new"] == 30
    assert stats["store/spill_remaining_at_close"] == 0


def test_a_document_elasticsearch_refuses_is_dropped_and_kept(
    services: dict[str, Any], redis_server: RedisServer
) -> None:
    crawler = crawler_for(**services)
    dedup = DedupPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    # Bypasses validation, as a spider bug in a pipeline-less path could.
    broken = DemoProduct(sku="DM-9", url=BASE + "/p", name="N", price="cheap", currency="EUR")  # type: ignore[arg-type]

    async def main() -> None:
        await dedup.open_spider()
        await store.open_spider()
        try:
            with pytest.raises(DropItem, match="kept in dead letters"):
                await store.process_item(await dedup.process_item(broken))
        finally:
            await store.close_spider()
            await CrawlServices.of(crawler).aclose()

    asyncio.run(main())
    assert redis_server.client().llen("{demo}:store:dead_letters") == 1
    assert crawler.stats.get_value("store/dead_letter") == 1  # type: ignore[union-attr]


def test_drain_command_moves_a_spill_into_elasticsearch(
    services: dict[str, Any],
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
) -> None:
    schema = schema_by_type("demo_product")
    actions = []
    for product in build_catalog(n_products=25).products:
        fields = plain_fields(DemoProduct(**product.to_dict(BASE)))
        actions.append(
            build_action(
                site="demo",
                item_type="demo_product",
                key=schema.key("demo", fields),
                fields=fields,
                content_hash=schema.content_hash(fields),
                job_id="job-1",
                seen_ms=2,
                first_seen_ms=1,
                last_changed_ms=1,
            )
        )
    server = redis_server.client()
    server.rpush("{demo}:store:spill", *[a.to_json() for a in actions])
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    argv = [sys.executable, "-m", "crawlers.cli.spill", "drain", "demo"]
    argv += ["--redis-url", redis_server.url, "--elasticsearch-url", es_node.url]
    result = subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "demo: redis list {demo}:store:spill: drained 25, 0 left; 0 dead letters "
        "({demo}:store:dead_letters)\n"
    ) in result.stdout
    assert server.llen("{demo}:store:spill") == 0
    es.indices.refresh(index=IndexLayout.read_alias("demo"))
    assert es.count(index=IndexLayout.read_alias("demo"))["count"] == 25
