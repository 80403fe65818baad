"""Item pages the job could not parse (crawlers/recrawl/unparsed.py): which responses are
watched, when a page counts as unparsed, and what the job does then (the middleware on
its own; with a real Redis, the pages skipped so far come back as full fetches).
``tests/crawlers/recrawl/test_layouts.py`` crawls it whole."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from core.recrawl.cards import CardState
from core.redis_client import connect_async
from crawlers.recrawl.context import RECRAWL_META, RecrawlContext
from crawlers.recrawl.unparsed import UnparsedPagesMiddleware, UnparsedWatch, skipped_page
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from harness.redis_server import RedisServer

BASE = "http://127.0.0.1:8000"


def demo_crawler(redis_url: str | None = None) -> Crawler:
    crawler = get_crawler(DemoSpider, {"REDIS_URL": redis_url})
    crawler.spider = DemoSpider.from_crawler(crawler, base_url=BASE)
    return crawler


def response_to(request: Request) -> HtmlResponse:
    return HtmlResponse(request.url, body=b"<html></html>", encoding="utf-8", request=request)


def product_request(spider: DemoSpider, sku: str, card: str | None = None) -> Request:
    meta: dict[str, Any] = {JOB_META: "job-1"}
    if card is not None:
        meta[RECRAWL_META] = RecrawlContext(key=f"demo:demo_product:{sku}", card_hash=card)
    return Request(
        f"{BASE}/product/{sku}", callback=spider.parse_product, errback=spider.on_error, meta=meta
    )


async def outputs(
    middleware: UnparsedPagesMiddleware, response: HtmlResponse, unparsed: bool
) -> list[Any]:
    """The middleware around a callback that counts its page unparsed, or yields one item."""
    crawler_stats = middleware.watch.crawler.stats
    assert crawler_stats is not None

    async def callback_output() -> AsyncIterator[Any]:
        if unparsed:
            crawler_stats.inc_value("demo/product_unparsed")
        else:
            yield {"sku": "x"}

    middleware.process_spider_input(response)
    return [o async for o in middleware.process_spider_output(response, callback_output())]


def test_item_pages_are_the_profiles_item_callbacks_and_cards_detail_pages() -> None:
    crawler = demo_crawler()
    spider = crawler.spider
    assert isinstance(spider, DemoSpider)
    watch = UnparsedWatch(crawler)
    assert watch.item_callbacks == {"parse_product"}  # crawlers/profiles/demo.toml
    assert watch.item_page(response_to(product_request(spider, "DM-1"))) == "parse_product"
    listing = Request(f"{BASE}/category/kitchen", callback=spider.parse_listing)
    assert watch.item_page(response_to(listing)) is None
    # Any callback reached from a card's detail request is one (the page a card stands for).
    carded = listing.replace(meta={RECRAWL_META: RecrawlContext(key="k", card_hash="h")})
    assert watch.item_page(response_to(carded)) == "parse_listing"


def test_an_unparsed_item_page_stops_the_jobs_skips_once(caplog: pytest.LogCaptureFixture) -> None:
    crawler = demo_crawler()  # no Redis: this worker's watch only
    spider = crawler.spider
    assert isinstance(spider, DemoSpider)
    middleware = UnparsedPagesMiddleware.from_crawler(crawler)
    watch = middleware.watch

    async def scenario() -> list[list[Any]]:
        parsed = await outputs(middleware, response_to(product_request(spider, "DM-1")), False)
        # A listing page moving a counter is no item page: nothing stops.
        listing = Request(f"{BASE}/category/kitchen", callback=spider.parse_listing)
        other = await outputs(middleware, response_to(listing), True)
        assert not watch.stopped("job-1", "parse_product")
        broken = [
            await outputs(middleware, response_to(product_request(spider, sku)), True)
            for sku in ("DM-2", "DM-3")
        ]
        return [parsed, other, *broken]

    with caplog.at_level(logging.WARNING, logger="crawlers.recrawl.unparsed"):
        parsed, other, first, second = asyncio.run(scenario())
    assert parsed == [{"sku": "x"}] and other == [] and first == [] and second == []
    assert watch.stopped("job-1", "parse_product") and not watch.stopped("job-2", "parse_product")
    assert not watch.stopped("job-1", "parse_listing")
    (line,) = [r.getMessage() for r in caplog.records]
    assert "/product/DM-2 (a parse_product page) could not be parsed" in line
    assert crawler.stats is not None
    assert crawler.stats.get_value("recrawl/unparsed/stopped") == 1


def test_the_pages_skipped_so_far_follow_the_unparsed_page(redis_server: RedisServer) -> None:
    server = redis_server.client()
    server.flushdb()
    crawler = demo_crawler(redis_server.url)
    spider = crawler.spider
    assert isinstance(spider, DemoSpider)
    middleware = UnparsedPagesMiddleware.from_crawler(crawler)
    skipped = {f"demo:demo_product:DM-{n}": product_request(spider, f"DM-{n}") for n in (4, 5)}

    async def scenario() -> list[Any]:
        client = connect_async(redis_server.url)
        try:
            pages = [(key, skipped_page(r, f"card-{key}")) for key, r in skipped.items()]
            assert await CardState(client, "demo").skip("job-1", "parse_product", pages)
            response = response_to(product_request(spider, "DM-1", card="h"))
            found = await outputs(middleware, response, True)
            again = await outputs(middleware, response_to(product_request(spider, "DM-2")), True)
            assert again == []  # handed over once
            return found
        finally:
            await client.aclose()
            await CrawlServices.of(crawler).aclose()

    requests = asyncio.run(scenario())
    by_url = {r.url: r for r in requests}
    assert set(by_url) == {r.url for r in skipped.values()}
    for key, original in skipped.items():
        request = by_url[original.url]
        assert request.callback == spider.parse_product and request.errback == spider.on_error
        assert request.dont_filter and request.meta[JOB_META] == "job-1"
        context = request.meta[RECRAWL_META]
        assert (context.key, context.card_hash, context.full) == (key, f"card-{key}", True)
    assert server.smembers("{demo}:job:job-1:unparsed") == {b"parse_product"}
    assert crawler.stats is not None
    assert crawler.stats.get_value("recrawl/unparsed/refetched") == 2
