"""Test helpers: a demo job's items stored as the real pipelines store them, and an
embedder wrapper that counts calls and remembers vectors across tests.

``store_job`` pushes demo products through the platform's own item pipelines
(validate -> dedup -> store, built with ``from_crawler`` as Scrapy builds them) into a
real Redis and a real Elasticsearch node: the items land in ``items-<site>`` and the job's
new/changed keys in Redis exactly as after a crawl, without the HTTP part of the crawl.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from itemadapter import ItemAdapter
from scrapy.utils.test import get_crawler

from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from demo_site.catalog import Product
from indexing.embedders import Embedder, LocalEmbedder

BASE_URL = "http://demo.example"
PLATFORM = {"crawlers.addon.ScrapingPlatform": 0}


def product_item(product: Product, job_id: str, **changes: Any) -> DemoProduct:
    fields = {**product.to_dict(BASE_URL), **changes, "job_id": job_id}
    return DemoProduct(**fields)


def store_job(
    es_url: str, redis_url: str, site: str, job_id: str, items: Iterable[DemoProduct]
) -> dict[str, Any]:
    """Run ``items`` through the real pipelines as job ``job_id`` of ``site``; the stats."""
    services = {"REDIS_URL": redis_url, "ELASTICSEARCH_URL": es_url}
    return asyncio.run(_push(site, job_id, list(items), services))


async def _push(
    site: str, job_id: str, items: list[DemoProduct], services: dict[str, str]
) -> dict[str, Any]:
    # The platform add-on (its defaults), configured by settings as a crawl is.
    settings = {"ADDONS": PLATFORM, **services, "LOG_LEVEL": "WARNING"}
    crawler = get_crawler(DemoSpider, settings)
    crawler.spider = DemoSpider.from_crawler(crawler, job_id=job_id, base_url=BASE_URL)
    crawler.spider.name = site  # the pipelines key everything by the spider's name
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    await dedup.open_spider()
    await store.open_spider()
    slots = asyncio.Semaphore(200)

    async def one(item: DemoProduct) -> None:
        async with slots:
            valid = await validate.process_item(ItemAdapter(item).item)
            await store.process_item(await dedup.process_item(valid))

    await asyncio.gather(*(one(item) for item in items))
    await store.close_spider()
    await CrawlServices.of(crawler).aclose()
    return dict(crawler.stats.get_stats())


class RecordingEmbedder:
    """Wraps a real embedder: counts the texts it is asked for, and serves repeats of a
    text from memory so the suite embeds the demo catalog once, not once per site."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls = 0
        self.texts = 0
        self._memory: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts += len(texts)
            missing = sorted({t for t in texts if t not in self._memory})
        if missing:
            vectors = self.inner.embed(missing)
            with self._lock:
                self._memory.update(zip(missing, vectors, strict=True))
        return [self._memory[t] for t in texts]


@functools.cache
def shared_local_embedder() -> RecordingEmbedder:
    """One offline model per test session, shared by tests/indexing and tests/search."""
    return RecordingEmbedder(LocalEmbedder())
