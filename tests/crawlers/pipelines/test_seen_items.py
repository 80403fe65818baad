"""``ItemSeen`` (an item seen unchanged without its page being parsed) through the real
pipelines of real crawls: exact figures, documents touched and nothing else, state gone
-> fetched in full, Elasticsearch down -> touches spilled and drained, local mode."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from elasticsearch import AsyncElasticsearch, Elasticsearch
from scrapy.utils.test import get_crawler

from core.dedup.detector import job_changes
from core.figures.ledger import job_figures
from core.redis_client import connect_async
from core.store import IndexLayout, drain_site_spill, epoch_ms, spill_size
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.recrawl.context import ItemSeen
from crawlers.runtime.services import CrawlServices
from harness.base import free_port
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import store_settings
from tests.crawlers.pipelines.spiders.seen_items import SITE, SeenItemsSpider, key_of
from tests.crawlers.support import REPO_ROOT, crawl_env, final_stats, settings_argv

PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}


@pytest.fixture
def clean(
    redis_server: RedisServer, es: Elasticsearch
) -> Iterator[tuple[redis.Redis, Elasticsearch]]:
    server = redis_server.client()

    def reset() -> None:
        server.flushdb()
        es.indices.delete(index=f"items-{SITE}-*", ignore_unavailable=True, allow_no_indices=True)

    reset()
    yield server, es
    reset()


def crawl(
    job_id: str,
    plan: list[dict[str, Any]],
    log: Path,
    *,
    redis_url: str | None,
    es_url: str,
    settings: dict[str, object] | None = None,
) -> dict[str, Any]:
    """``scrapy crawl seen_shop`` with the platform's pipelines; its final stats."""
    merged: dict[str, object] = {
        "SPIDER_MODULES": "tests.crawlers.pipelines.spiders",
        "ELASTICSEARCH_URL": es_url,
        "FRONTIER_IDLE_CLOSE_SECONDS": 2,
        "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
        "FRONTIER_HEARTBEAT_TTL": 3,
        "STORE_FLUSH_INTERVAL": 0.3,
        "LOG_FILE": str(log),
        "LOG_LEVEL": "INFO",
        **({"REDIS_URL": redis_url} if redis_url else {}),
        "PLATFORM_RUN_DIR": str(log.parent / "run"),
        **(settings or {}),
    }
    argv = [sys.executable, "-m", "scrapy", "crawl", SITE, "-a", f"job_id={job_id}"]
    argv += ["-a", f"plan={json.dumps(plan)}", *settings_argv(merged)]
    result = subprocess.run(argv, cwd=REPO_ROOT, env=crawl_env(), timeout=180)
    assert result.returncode == 0, log.read_text()[-3000:]
    return final_stats(log)


def docs(es: Elasticsearch) -> dict[str, dict[str, Any]]:
    alias = IndexLayout.read_alias(SITE)
    es.indices.refresh(index=alias)
    hits = es.search(index=alias, size=1000)["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


FIRST = [{"sku": sku, "price": 10.0} for sku in "ABCDEFH"]
# The second job: A, B unchanged in full; C changed; D seen; E seen twice (re-delivered);
# F seen and delivered in full unchanged; H changed and seen; G seen but unknown: fetched
# in full through its callback (new).
SECOND = [
    {"sku": "A", "price": 10.0},
    {"sku": "B", "price": 10.0},
    {"sku": "C", "price": 11.0},
    {"sku": "D", "seen": True},
    {"sku": "E", "seen": True, "times": 2, "reason": "card_unchanged"},
    {"sku": "F", "seen": True},
    {"sku": "F", "price": 10.0},
    {"sku": "H", "price": 12.0},
    {"sku": "H", "seen": True},
    {"sku": "G", "seen": True, "price": 7.5},
]


def test_a_job_of_full_and_seen_items_counts_exactly_and_touches_only_last_seen(
    clean: tuple[redis.Redis, Elasticsearch],
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    server, es = clean
    urls = {"redis_url": redis_server.url, "es_url": es_node.url}
    crawl("seen-1", FIRST, tmp_path / "first.log", **urls)
    before = docs(es)
    assert len(before) == 7
    stats = crawl("seen-2", SECOND, tmp_path / "second.log", **urls)

    changes = job_changes(server, SITE, "seen-2")
    assert changes.counts == {"new": 1, "changed": 2, "unchanged": 5}
    assert changes.new == {key_of("G")} and changes.changed == {key_of("C"), key_of("H")}
    figures = job_figures(server, SITE, "seen-2")
    # The report's figures: every verdict stored (a touch counts as stored).
    assert figures["items/scraped"] == figures["items/stored"] == 8
    assert stats["recrawl/seen/not_modified"] == 4  # D, F, H, G
    assert stats["recrawl/seen/card_unchanged"] == 2  # E twice
    assert stats["recrawl/refetch/unknown"] == 1
    # Five touches (D, E twice, F, H): each moved last_seen or found it as late already.
    assert stats["store/touched"] + stats.get("store/superseded", 0) == 5

    after = docs(es)
    assert set(after) == set(before) | {key_of("G")}
    for sku in "DE":
        old, new = before[key_of(sku)], after[key_of(sku)]
        assert new["job_id"] == "seen-2" and epoch_ms(new["last_seen"]) > epoch_ms(old["last_seen"])
        # Nothing but last_seen and job_id moved.
        assert {k: v for k, v in new.items() if k not in ("last_seen", "job_id")} == {
            k: v for k, v in old.items() if k not in ("last_seen", "job_id")
        }
    assert after[key_of("C")]["price"] == 11.0 and after[key_of("H")]["price"] == 12.0
    assert after[key_of("G")]["price"] == 7.5 and after[key_of("G")]["job_id"] == "seen-2"
    assert after[key_of("H")]["last_changed"] != before[key_of("H")]["last_changed"]
    assert {after[key_of(s)]["job_id"] for s in "ABCDEFGH"} == {"seen-2"}
    text = (tmp_path / "second.log").read_text()
    # The refetch's drop is handled: INFO, not WARNING.
    assert "INFO: Dropped: " in text and "is fetched in full instead" in text
    assert "WARNING: Dropped" not in text


def test_a_document_gone_from_elasticsearch_is_fetched_in_full_and_stored(
    clean: tuple[redis.Redis, Elasticsearch],
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    server, es = clean
    urls = {"redis_url": redis_server.url, "es_url": es_node.url}
    crawl("gone-1", [{"sku": "A", "price": 10.0}, {"sku": "B"}], tmp_path / "1.log", **urls)
    # Dedup still knows A; its document is gone (a restored snapshot, a deleted index...).
    es.delete(index=IndexLayout.write_alias(SITE, "demo_product"), id=key_of("A"), refresh=True)
    plan = [{"sku": "A", "seen": True, "price": 10.0}, {"sku": "B", "seen": True}]
    stats = crawl("gone-2", plan, tmp_path / "2.log", **urls)
    assert stats["recrawl/refetch/document_missing"] == 1
    assert stats["store/touch_missing"] == 1
    assert stats["dedup/unseen"] == 1  # A's unchanged taken back, then counted in full
    after = docs(es)
    assert after[key_of("A")]["job_id"] == "gone-2" and after[key_of("A")]["price"] == 10.0
    # The page fetched in full is the same content: unchanged once, stored once.
    assert job_changes(server, SITE, "gone-2").counts == {"new": 0, "changed": 0, "unchanged": 2}
    figures = job_figures(server, SITE, "gone-2")
    assert figures["items/scraped"] == figures["items/stored"] == 2


def test_local_mode_counts_and_touches_from_the_stored_documents(
    clean: tuple[redis.Redis, Elasticsearch], es_node: ElasticsearchNode, tmp_path: Path
) -> None:
    _, es = clean
    crawl("local-1", FIRST, tmp_path / "first.log", redis_url=None, es_url=es_node.url)
    before = docs(es)
    stats = crawl("local-2", SECOND, tmp_path / "second.log", redis_url=None, es_url=es_node.url)
    counted = {v: stats.get(f"items/{v}", 0) for v in ("new", "changed", "unchanged")}
    assert counted == {"new": 1, "changed": 2, "unchanged": 5}
    assert stats["recrawl/refetch/unknown"] == 1
    after = docs(es)
    assert set(after) == set(before) | {key_of("G")}
    for sku in "DE":
        old, new = before[key_of(sku)], after[key_of(sku)]
        assert new["job_id"] == "local-2" and new["last_seen"] > old["last_seen"]
        assert {k: v for k, v in new.items() if k not in ("last_seen", "job_id")} == {
            k: v for k, v in old.items() if k not in ("last_seen", "job_id")
        }
    assert after[key_of("G")]["price"] == 7.5


def pipelines(job_id: str, **settings: Any) -> tuple[Any, ...]:
    crawler = get_crawler(SeenItemsSpider, {**PLATFORM, "STORE_FLUSH_INTERVAL": 0.2, **settings})
    crawler.spider = SeenItemsSpider.from_crawler(crawler, job_id=job_id)
    return (
        crawler,
        ValidationPipeline.from_crawler(crawler),
        DedupPipeline.from_crawler(crawler),
        StorePipeline.from_crawler(crawler),
    )


async def through(chain: tuple[Any, ...], items: list[Any]) -> list[Any]:
    crawler, validate, dedup, store = chain
    await dedup.open_spider()
    await store.open_spider()
    try:
        out = []
        for item in items:
            out.append(
                await store.process_item(
                    await dedup.process_item(await validate.process_item(item))
                )
            )
        return out
    finally:
        await store.close_spider()
        await CrawlServices.of(crawler).aclose()


def test_elasticsearch_down_spills_the_touch_and_the_drain_applies_it(
    clean: tuple[redis.Redis, Elasticsearch],
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> None:
    server, es = clean
    services = {"REDIS_URL": redis_server.url, "ELASTICSEARCH_URL": es_node.url}
    spider = SeenItemsSpider(plan=json.dumps([{"sku": "A", "price": 10.0}]))
    (full,) = list(spider.parse(None))  # type: ignore[arg-type]
    asyncio.run(through(pipelines("down-1", **services), [full]))
    before = docs(es)[key_of("A")]

    seen = ItemSeen(key_of("A"), "demo_product", "data:,A_10.0", "not_modified", "down-2")
    down = pipelines(
        "down-2",
        REDIS_URL=redis_server.url,
        ELASTICSEARCH_URL=f"http://127.0.0.1:{free_port()}",
        STORE_SPILL_AFTER=0.2,
        STORE_RETRY_BACKOFF=0.05,
        STORE_REQUEST_TIMEOUT=2,
        STORE_CLOSE_TIMEOUT=1,
    )
    assert asyncio.run(through(down, [seen])) == [seen]  # durable: in the spill
    assert spill_size(server, SITE) == 1
    assert down[0].stats.get_value("store/spilled") == 1
    assert docs(es)[key_of("A")] == before  # not applied yet

    async def drain() -> tuple[int, int]:
        aes = AsyncElasticsearch(es_node.url, request_timeout=30)
        client = connect_async(redis_server.url)
        try:
            return await drain_site_spill(aes, client, SITE, settings=store_settings())
        finally:
            await aes.close()
            await client.aclose()

    assert asyncio.run(drain()) == (1, 0)
    after = docs(es)[key_of("A")]
    assert after["job_id"] == "down-2" and after["last_seen"] > before["last_seen"]
    assert {k: v for k, v in after.items() if k not in ("last_seen", "job_id")} == {
        k: v for k, v in before.items() if k not in ("last_seen", "job_id")
    }
    # Counted unchanged once, and stored once the drain recorded it in the job's ledger.
    figures = job_figures(server, SITE, "down-2")
    assert (figures["items/unchanged"], figures["items/stored"]) == (1, 1)
