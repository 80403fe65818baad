"""RecrawlRecordPipeline: page validators recorded for complete durable items (real Redis)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from core.keys import SiteKeys
from core.recrawl.layouts import NO_BASELINE
from crawlers.items import DemoProduct
from crawlers.pipelines.recrawl import RecordUnavailable, RecrawlRecordPipeline
from crawlers.recrawl.context import (
    RECRAWL_META,
    ItemSeen,
    RecrawlContext,
    RecrawlContextMiddleware,
)
from crawlers.runtime.services import CrawlServices
from harness.redis_server import RedisServer

SITE = "unit"
KEY = SiteKeys(SITE).page_validators


class UnitSpider(Spider):
    name = SITE


def crawler_for(redis_url: str | None, **settings: Any) -> Crawler:
    crawler = get_crawler(
        UnitSpider,
        {
            "REDIS_URL": redis_url,
            "DEDUP_RETRY_TIMES": 1,
            "DEDUP_RETRY_BACKOFF": 0.01,
            "DEDUP_RETRY_BACKOFF_MAX": 0.01,
            "RECRAWL_CONDITIONAL_BATCH": 500,
            **settings,
        },
    )
    crawler.spider = UnitSpider.from_crawler(crawler)
    return crawler


def product(sku: str, incomplete: list[str] | None = None) -> DemoProduct:
    return DemoProduct(
        sku=sku,
        url=f"http://shop.test/product/{sku}",
        name="Kettle",
        price=10.0,
        currency="EUR",
        incomplete=incomplete,
    )


def yielded(crawler: Crawler, item: Any, context: RecrawlContext) -> Any:
    """``item`` as its page's callback yields it: its context noted against it."""
    url = str(item.url)
    response = Response(url, request=Request(url, meta={RECRAWL_META: context}))
    (out,) = RecrawlContextMiddleware(crawler).process_spider_output(response, [item])
    return out


def page(sku: str, etag: str | None = '"e1"') -> RecrawlContext:
    modified = "Mon, 01 Jan 2024 00:00:00 GMT" if etag else None
    return RecrawlContext(url=f"http://shop.test/product/{sku}", etag=etag, last_modified=modified)


def run(pipeline: RecrawlRecordPipeline, items: list[Any]) -> list[Any]:
    async def scenario() -> list[Any]:
        await pipeline.open_spider()
        try:
            return list(
                await asyncio.gather(
                    *(pipeline.process_item(item) for item in items), return_exceptions=True
                )
            )
        finally:
            await pipeline.close_spider()
            await CrawlServices.of(pipeline.crawler).aclose()

    return asyncio.run(scenario())


def records(redis_server: RedisServer) -> dict[str, dict[str, Any]]:
    raw = redis_server.client().hgetall(KEY)
    return {url.decode(): json.loads(value) for url, value in raw.items()}


def test_off_without_redis() -> None:
    with pytest.raises(NotConfigured):
        RecrawlRecordPipeline.from_crawler(crawler_for(None))


def test_complete_items_are_recorded_incomplete_ones_cleared(redis_server: RedisServer) -> None:
    server = redis_server.client()
    server.delete(KEY)
    stale = {"etag": '"old"', "key": f"{SITE}:demo_product:DM-2", "item_type": "demo_product"}
    server.hset(
        KEY,
        mapping={f"http://shop.test/product/{sku}": json.dumps(stale) for sku in ("DM-2", "DM-4")},
    )
    crawler = crawler_for(redis_server.url)
    pipeline = RecrawlRecordPipeline.from_crawler(crawler)
    items = [
        yielded(crawler, product("DM-1"), page("DM-1")),
        yielded(crawler, product("DM-2", incomplete=["reviews"]), page("DM-2")),
        yielded(
            crawler, product("DM-3"), RecrawlContext(key=f"{SITE}:demo_product:DM-3", card_hash="h")
        ),
        yielded(crawler, product("DM-4"), page("DM-4", etag=None)),  # answered without validators
        product("DM-5"),  # no context: not an item page's item
        ItemSeen(
            f"{SITE}:demo_product:DM-6",
            "demo_product",
            "http://shop.test/product/DM-6",
            "not_modified",
        ),
    ]
    assert run(pipeline, items) == items  # every item passes on, unchanged
    assert records(redis_server) == {
        "http://shop.test/product/DM-1": {
            "etag": '"e1"',
            "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT",
            "key": f"{SITE}:demo_product:DM-1",
            "item_type": "demo_product",
            # The layout it was parsed under: its job's (none recorded: the worker's own,
            # a site without an accepted baseline).
            "layout": NO_BASELINE,
        }
    }
    assert crawler.stats is not None
    assert crawler.stats.get_value("recrawl/record/validators") == 1
    assert crawler.stats.get_value("recrawl/record/cleared") == 2

    # Re-delivered (at-least-once): the same record again, nothing else.
    again = RecrawlRecordPipeline.from_crawler(crawler)
    run(again, [yielded(crawler, product("DM-1"), page("DM-1"))])
    assert set(records(redis_server)) == {"http://shop.test/product/DM-1"}


def test_a_record_carries_its_jobs_layout(redis_server: RedisServer) -> None:
    """The layout the producer recorded for the item's job (core.recrawl.layouts), over the
    worker's own: the record is a shortcut only for jobs of that layout."""
    server = redis_server.client()
    server.delete(KEY)
    server.set(SiteKeys(SITE).job_layout("job-7"), "0123456789abcdef")
    crawler = crawler_for(redis_server.url)
    pipeline = RecrawlRecordPipeline.from_crawler(crawler)
    item = DemoProduct(**{**product("DM-1").__dict__, "job_id": "job-7"})
    other = yielded(crawler, product("DM-2"), page("DM-2"))  # no job: the worker's own
    run(pipeline, [yielded(crawler, item, page("DM-1")), other])
    layouts = {url: record["layout"] for url, record in records(redis_server).items()}
    assert layouts == {
        "http://shop.test/product/DM-1": "0123456789abcdef",
        "http://shop.test/product/DM-2": NO_BASELINE,
    }


def test_records_of_items_in_flight_share_a_round_trip(redis_server: RedisServer) -> None:
    redis_server.client().delete(KEY)
    crawler = crawler_for(redis_server.url)
    pipeline = RecrawlRecordPipeline.from_crawler(crawler)
    items = [yielded(crawler, product(f"DM-{n}"), page(f"DM-{n}")) for n in range(200)]
    flushes: list[int] = []
    record = pipeline._record

    async def counted(batch: list[Any]) -> None:
        flushes.append(len(batch))
        await record(batch)

    pipeline._record = counted  # type: ignore[method-assign]
    run(pipeline, items)
    assert sum(flushes) == 200 and len(flushes) <= 2
    assert len(records(redis_server)) == 200


def test_redis_down_a_lost_record_is_counted_a_stale_one_fails_the_item() -> None:
    crawler = crawler_for("redis://127.0.0.1:1")  # nothing listens there
    pipeline = RecrawlRecordPipeline.from_crawler(crawler)
    complete = yielded(crawler, product("DM-1"), page("DM-1"))
    incomplete = yielded(crawler, product("DM-2", incomplete=["reviews"]), page("DM-2"))
    first, second = run(pipeline, [complete, incomplete])
    # Without its record the page is fetched in full next time: safe, the item goes on.
    # A record that should have been cleared would pass the incomplete item off as
    # unchanged: the item fails (its page is crawled again).
    assert first is complete
    assert isinstance(second, RecordUnavailable)
    assert crawler.stats is not None
    assert crawler.stats.get_value("recrawl/record/failed") == 2
