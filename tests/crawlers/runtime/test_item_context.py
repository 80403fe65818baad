"""An item's context travels on the item: through validation's copy to the store, and is
gone once the item left the pipelines."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from scrapy import Request, signals
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from core.store import StoreAction
from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.recrawl.context import RECRAWL_META, RecrawlContext, RecrawlContextMiddleware
from crawlers.runtime.item_context import find_context, item_context
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer

PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}
BASE = "http://shop.example"
INDEX = "context-test-extra"


def test_a_dict_item_carries_no_context() -> None:
    with pytest.raises(TypeError, match="dict"):
        item_context({"sku": "A"})
    assert find_context({"sku": "A"}) is None


def test_the_context_survives_the_validation_copy_and_reaches_the_store(
    redis_server: RedisServer, es_node: ElasticsearchNode, es: Elasticsearch
) -> None:
    redis_server.client().flushdb()
    es.indices.delete(index=f"items-demo-*,{INDEX}", ignore_unavailable=True)
    crawler = get_crawler(
        DemoSpider,
        {
            **PLATFORM,
            "REDIS_URL": redis_server.url,
            "ELASTICSEARCH_URL": es_node.url,
            "STORE_FLUSH_INTERVAL": 0.2,
        },
    )
    crawler.spider = DemoSpider.from_crawler(crawler, job_id="job-ctx", base_url=BASE)
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    # Ints in float fields: validation passes on a normalised copy, not the yielded item.
    items = [
        DemoProduct(sku=f"C-{n}", url=f"{BASE}/p/{n}", name="Kettle", price=10, currency="EUR")
        for n in range(3)
    ]
    recrawl = RecrawlContext(key="demo:demo_product:C-0", card_hash="h")
    page = Response(f"{BASE}/p/0", request=Request(f"{BASE}/p/0", meta={RECRAWL_META: recrawl}))
    yielded = list(RecrawlContextMiddleware(crawler).process_spider_output(page, items))
    extra = StoreAction(
        key="demo:demo_product:C-0",
        site="demo",
        item_type="change",
        doc_id="C-0:job-ctx",
        index=INDEX,
        version=1,
        document={"sku": "C-0"},
    )
    item_context(yielded[0]).store_extra.append(extra)
    contexts = [find_context(item) for item in yielded]

    async def main() -> list[Any]:
        await dedup.open_spider()
        await store.open_spider()
        try:
            passed = []
            for item in yielded:
                copy = await validate.process_item(item)
                passed.append(await store.process_item(await dedup.process_item(copy)))
            return passed
        finally:
            await store.close_spider()
            await CrawlServices.of(crawler).aclose()

    passed = asyncio.run(main())
    for item, copy, context in zip(yielded, passed, contexts, strict=True):
        assert copy is not item and copy.price == 10.0  # the normalised copy went on
        assert find_context(item) is None  # moved to the copy, not duplicated
        assert find_context(copy) is context and context is not None
        assert context.recrawl is recrawl
        assert context.verdict is not None and context.verdict.state.verdict == "new"
        assert context.store_extra == []  # taken, and written, by the store
    es.indices.refresh(index=f"items-demo,{INDEX}")
    assert es.get(index=INDEX, id="C-0:job-ctx")["_source"] == {"sku": "C-0"}
    assert es.count(index="items-demo")["count"] == 3

    # Scrapy's signals as each item leaves the pipelines: nothing stays on the items.
    for copy, signal in zip(
        passed, (signals.item_scraped, signals.item_dropped, signals.item_error), strict=True
    ):
        crawler.signals.send_catch_log(
            signal=signal, item=copy, response=None, spider=crawler.spider, exception=None
        )
    assert [find_context(copy) for copy in passed] == [None, None, None]
    es.indices.delete(index=INDEX, ignore_unavailable=True)
