"""Item pipeline throughput into Elasticsearch: bulk store vs one request per item.

    .venv/bin/python -m bench.pipelines [--items 10000] [--per-item-items 2000] [--rounds 3]

Demo products through the real validate -> dedup -> store pipelines (``from_crawler``)
into a real Redis and Elasticsearch node, ``--concurrency`` items in flight: **bulk**
(``StorePipeline`` as configured), **per-item concurrent** (one ``es.index`` per item on
the same client) and **per-item sequential** (as a sync client in ``process_item``). A
warm-up round is not counted; each round starts empty; medians and ratios of this run.
Method: docs/pipelines.md "Benchmark".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from itemadapter import ItemAdapter
from scrapy.utils.test import get_crawler

from bench import smoke
from core.items_schema import schema_for
from core.store import ensure_item_index
from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog

BASE_URL = "http://demo.example"
# The platform add-on: its defaults and pipelines, configured by settings (no environment).
PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}


class PerItemStorePipeline(StorePipeline):
    """The store step with one Elasticsearch request per item (the baseline)."""

    async def process_item(self, item: Any) -> Any:
        es = self.services.es  # the crawl's one client, as the bulk store's
        action = self._action_for(item)
        if not self._ensured:
            await ensure_item_index(es, action.site, action.item_type, _properties())
            self._ensured = True
        await es.index(
            index=action.index,
            id=action.doc_id,
            document=action.document,
            version=action.version,
            version_type="external_gte",
            require_alias=True,
        )
        return item

    _ensured = False


def _properties() -> dict[str, Any]:
    return schema_for(DemoProduct).es_properties


def make_items(n: int) -> list[DemoProduct]:
    return [DemoProduct(**p.to_dict(BASE_URL)) for p in build_catalog(n_products=n).products]


async def push(
    items: list[DemoProduct],
    store_cls: type[StorePipeline],
    concurrency: int,
    services: dict[str, str],
) -> float:
    """Items/s through validate -> dedup -> store (open/close of the pipelines excluded)."""
    # A generous timeout: with many items in flight, per-item requests queue for the
    # client's connections, and that wait counts towards the request timeout.
    settings = {**PLATFORM, **services, "LOG_LEVEL": "WARNING", "STORE_REQUEST_TIMEOUT": 300}
    crawler = get_crawler(DemoSpider, settings)
    crawler.spider = DemoSpider.from_crawler(crawler, job_id="bench", base_url=BASE_URL)
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    store = store_cls.from_crawler(crawler)
    await dedup.open_spider()
    await store.open_spider()
    slots = asyncio.Semaphore(concurrency)

    async def one(item: DemoProduct) -> None:
        async with slots:
            valid = await validate.process_item(ItemAdapter(item).item)
            await store.process_item(await dedup.process_item(valid))

    try:
        started = time.perf_counter()
        await asyncio.gather(*(one(item) for item in items))
        elapsed = time.perf_counter() - started
    finally:
        await store.close_spider()
        # What the engine's stop does in a crawl: the crawl's clients close.
        await CrawlServices.of(crawler).aclose()
    stored = crawler.stats.get_value("store/indexed", 0) if store_cls is StorePipeline else None
    if stored is not None and stored != len(items):
        raise RuntimeError(f"bulk mode stored {stored} of {len(items)} items")
    return len(items) / elapsed


def reset(es: Elasticsearch, redis_server: RedisServer) -> None:
    redis_server.client().flushdb()
    es.indices.delete(index="items-*", ignore_unavailable=True, allow_no_indices=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--per-item-items", type=int, default=2000)
    parser.add_argument("--sequential-items", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=1000)
    args = smoke.parse_args(
        parser,
        argv,
        items=300,
        per_item_items=100,
        sequential_items=30,
        rounds=1,
        concurrency=100,
    )

    items = make_items(args.items)
    modes: list[tuple[str, type[StorePipeline], int, int]] = [
        ("bulk", StorePipeline, args.concurrency, args.items),
        ("per-item concurrent", PerItemStorePipeline, args.concurrency, args.per_item_items),
        ("per-item sequential", PerItemStorePipeline, 1, args.sequential_items),
    ]
    results: dict[str, list[float]] = {mode: [] for mode, *_ in modes}
    with tempfile.TemporaryDirectory(prefix="bench-pipelines-") as tmp:
        run_dir = Path(tmp)
        settings = {"action.destructive_requires_name": "false"}
        with (
            RedisServer(run_dir=run_dir) as redis_server,
            ElasticsearchNode(run_dir=run_dir, settings=settings) as node,
        ):
            services = {"REDIS_URL": redis_server.url, "ELASTICSEARCH_URL": node.url}
            es = Elasticsearch(node.url, request_timeout=60)
            # The JVM compiles its indexing paths during the first thousands of documents:
            # a round that is not counted keeps that out of every mode's figures.
            for _, store_cls, concurrency, n in modes:
                reset(es, redis_server)
                asyncio.run(push(items[: min(n, 3000)], store_cls, concurrency, services))
            print(
                f"demo products with reviews, {args.rounds} rounds (+1 warm-up); "
                f"Redis {redis_server.url}, ES {node.url}"
            )
            for round_no in range(1, args.rounds + 1):
                for mode, store_cls, concurrency, n in modes:
                    reset(es, redis_server)
                    rate = asyncio.run(push(items[:n], store_cls, concurrency, services))
                    es.indices.refresh(index="items-demo")
                    count = es.count(index="items-demo")["count"]
                    if count != n:
                        raise RuntimeError(f"{mode}: {count} documents for {n} items")
                    results[mode].append(rate)
                    print(
                        f"  round {round_no}  {mode:<20} {n:>6} items, {concurrency:>4} in "
                        f"flight: {rate:7.0f} items/s"
                    )
            es.close()
    medians = {mode: statistics.median(rates) for mode, rates in results.items()}
    for mode, rate in medians.items():
        print(f"median {mode:<20} {rate:7.0f} items/s")
    bulk = medians["bulk"]
    for mode in ("per-item concurrent", "per-item sequential"):
        print(f"ratio bulk / {mode:<20} {bulk / medians[mode]:5.1f}x (target >= 10x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
