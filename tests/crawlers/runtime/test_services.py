"""One set of clients per crawl: every component asks ``CrawlServices`` for them."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from elasticsearch import Elasticsearch
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from core.store import RedisSpill
from crawlers.frontier.queue import JobDupeFilter
from crawlers.limits.budget import BudgetState, JobBudgetCheck
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.history import HistoryPipeline
from crawlers.pipelines.recrawl import RecrawlRecordPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.recrawl.cards import CardGate, CardsPipeline
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.crawlers.support import REPO_ROOT

PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}


def crawler_for(**settings: Any) -> Crawler:
    crawler = get_crawler(DemoSpider, {**PLATFORM, **settings})
    crawler.spider = DemoSpider.from_crawler(crawler, job_id="job-1", base_url="http://x")
    return crawler


def test_the_components_of_a_crawl_share_one_client_of_each_kind(
    redis_server: RedisServer, es_node: ElasticsearchNode, es: Elasticsearch
) -> None:
    crawler = crawler_for(
        REDIS_URL=redis_server.url, ELASTICSEARCH_URL=es_node.url, CRAWL_MAX_PAGES=10
    )
    services = CrawlServices.of(crawler)
    assert CrawlServices.of(crawler) is services  # one per crawler
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    history = HistoryPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    cards = CardsPipeline.from_crawler(crawler)
    record = RecrawlRecordPipeline.from_crawler(crawler)
    budget = JobBudgetCheck.from_crawler(crawler)
    dupefilter = JobDupeFilter.from_crawler(crawler)

    async def main() -> None:
        for pipeline in (dedup, history, store, cards, record):
            await pipeline.open_spider()
        try:
            redis_client, es_client = services.redis, services.es
            # The asyncio Redis client: dedup's state, history's, the store's spill and
            # ledger, the card records, the page validators, the ledger, the job budget.
            assert dedup.state.server is redis_client  # type: ignore[union-attr]
            assert history.state.server is redis_client  # type: ignore[union-attr]
            assert cards.state.server is redis_client  # type: ignore[union-attr]
            assert record.store.server is redis_client  # type: ignore[union-attr]
            assert budget._job_budget().server is redis_client
            assert validate.ledger is services.ledger
            assert services.ledger is not None
            assert services.ledger.server() is redis_client
            spill = store.store.spill  # type: ignore[union-attr]
            assert isinstance(spill, RedisSpill) and spill.server is redis_client
            # One Elasticsearch client per worker: the store's and history's.
            assert store.store.es is es_client  # type: ignore[union-attr]
            assert history.es is es_client
            # The shared components: one each.
            gate = services.component(CardGate)
            assert services.component(CardGate) is gate
            assert budget.state is services.component(BudgetState)
            # The frontier's sync client: the dupefilter's is the crawl's.
            assert dupefilter.server is services.sync_redis()
            for pipeline in (store, cards, record):
                await pipeline.close_spider()
            # The pipelines' close leaves the shared clients open (closed once, below).
            assert await redis_client.ping()
            assert (await es_client.ping()) is True
        finally:
            await services.aclose()
        # Closed once: the next use (another event loop) builds new ones.
        assert services.redis is not redis_client
        assert services.es is not es_client
        await services.aclose()

    asyncio.run(main())


def test_clients_are_closed_when_the_engine_stops(redis_server: RedisServer) -> None:
    crawler = crawler_for(REDIS_URL=redis_server.url, ELASTICSEARCH_URL=None)
    services = CrawlServices.of(crawler)

    async def main() -> None:
        client = services.redis
        assert await client.ping()
        await crawler.signals.send_catch_log_async(signal=signals.engine_stopped)
        assert services.redis is not client
        await services.aclose()

    asyncio.run(main())


def test_clients_are_built_in_one_place() -> None:
    """``connect_async`` and ``AsyncElasticsearch(...)`` are called by the services module
    only: no crawl component builds a client of its own, synchronous ones included (a
    local crawl's job document at close goes through the crawl's client)."""
    builders = re.compile(r"\bconnect_async\(|\b(Async)?Elasticsearch\(")
    found = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "crawlers").rglob("*.py"))
        if builders.search(path.read_text())
    ]
    assert found == ["crawlers/runtime/services.py"]
    core = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "core").rglob("*.py"))
        if re.search(r"\bconnect_async\(|BlockingConnectionPool", path.read_text())
    ]
    assert core == ["core/redis_client.py"]
