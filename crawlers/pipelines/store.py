"""Store: items into Elasticsearch through ``core.store.ItemStore`` (bulk, durable).

Needs ``ELASTICSEARCH_URL`` (off otherwise). ``process_item`` returns only when the item
is durable: accepted by Elasticsearch or written to the spill (Redis list
``<site>:store:spill`` with ``REDIS_URL``, else a file under ``PLATFORM_RUN_DIR/spill``).
That is the frontier's contract: a request's lease is acked only after its items went
through the pipelines, so a worker killed at any moment loses nothing.

An item Elasticsearch rejects for good (mapping error) is dropped here with the error
(DropItem, logged and counted) and kept in the dead-letter list for replay.

Local mode (no leasing frontier): at spider close this pipeline also writes the job's
document into the ``jobs`` index from the crawl's Scrapy stats. With the frontier, the
orchestration flow writes it after the drain, from the counters of all workers.

    python -m crawlers.pipelines.store drain <site>   # move a site's spill into ES
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.project import get_project_settings

import crawlers.items  # noqa: F401  (registers the item types: their mappings)
from core.config import settings_elasticsearch_kwargs
from core.dedup import connect_async, now_ms
from core.items_schema import UnknownItemType, plain_fields, schema_for
from core.jobs_index import write_job_document
from core.store import (
    DeadLettered,
    FileSpill,
    ItemStore,
    RedisSpill,
    Spill,
    StoreAction,
    StoreSettings,
    build_action,
    drain_spill_sync,
)
from crawlers.pipelines.common import item_notes, job_of, site_of
from crawlers.pipelines.dedup import DedupNote
from crawlers.spiders.base import frontier_enabled

logger = logging.getLogger(__name__)


def store_settings(crawler: Crawler) -> StoreSettings:
    s = crawler.settings
    defaults = StoreSettings()
    return StoreSettings(
        bulk_size=s.getint("STORE_BULK_SIZE", defaults.bulk_size),
        flush_interval=s.getfloat("STORE_FLUSH_INTERVAL", defaults.flush_interval),
        max_buffer=s.getint("STORE_MAX_BUFFER", defaults.max_buffer),
        spill_after=s.getfloat("STORE_SPILL_AFTER", defaults.spill_after),
        max_item_retries=s.getint("STORE_MAX_ITEM_RETRIES", defaults.max_item_retries),
        retry_backoff=s.getfloat("STORE_RETRY_BACKOFF", defaults.retry_backoff),
        retry_backoff_max=s.getfloat("STORE_RETRY_BACKOFF_MAX", defaults.retry_backoff_max),
        close_timeout=s.getfloat("STORE_CLOSE_TIMEOUT", defaults.close_timeout),
        replicas=s.getint("STORE_INDEX_REPLICAS", defaults.replicas),
    )


class StorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        self.es_kwargs: dict[str, Any] = {
            **settings_elasticsearch_kwargs(settings),
            "request_timeout": crawler.settings.getfloat("STORE_REQUEST_TIMEOUT", 10.0),
            # One quick retry of a refused connection; a hung node is not waited on twice.
            # Longer outages are the store's job (retry per item, then spill).
            "max_retries": 1,
            "retry_on_timeout": False,
        }
        self.redis_url = settings.get("REDIS_URL")
        spill_dir = settings.get("STORE_SPILL_DIR") or Path(settings["PLATFORM_RUN_DIR"]) / "spill"
        self.spill_dir = Path(spill_dir)
        self.settings = store_settings(crawler)
        self.notes = item_notes(crawler)
        self.es: AsyncElasticsearch | None = None
        self.server: redis.asyncio.Redis | None = None
        self.store: ItemStore | None = None
        job_doc = crawler.settings.get("STORE_JOB_DOCUMENT_AT_CLOSE")
        self.job_document_at_close = (
            not frontier_enabled(crawler.settings)
            if job_doc is None
            else crawler.settings.getbool("STORE_JOB_DOCUMENT_AT_CLOSE")
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        if not crawler.settings.get("ELASTICSEARCH_URL"):
            raise NotConfigured("StorePipeline needs ELASTICSEARCH_URL")
        pipeline = cls(crawler)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    async def open_spider(self) -> None:
        site = site_of(self.crawler)
        # Created here, inside the running event loop the asyncio clients bind to.
        self.es = AsyncElasticsearch(**self.es_kwargs)
        spill: Spill
        if self.redis_url:
            self.server = connect_async(self.redis_url, max_connections=4)
            spill = RedisSpill(self.server, site)
        else:
            spill = FileSpill(self.spill_dir / f"{site}.jsonl")
        self.store = ItemStore(self.es, spill, settings=self.settings, on_count=self._count)
        await self.store.start()
        logger.info(
            "storing into Elasticsearch (bulk %d, window %.1fs, spill: %s)",
            self.settings.bulk_size,
            self.settings.flush_interval,
            spill.description,
        )

    async def process_item(self, item: Any) -> Any:
        assert self.store is not None, "open_spider() creates the store"
        action = self._action_for(item)
        try:
            await self.store.put(action)
        except DeadLettered as exc:
            raise DropItem(
                f"Elasticsearch rejected {action.key} (kept in dead letters): {exc}"
            ) from None
        return item

    def _action_for(self, item: Any) -> StoreAction:
        try:
            schema = schema_for(item)
        except UnknownItemType as exc:
            raise DropItem(f"cannot store: {exc}") from None
        site = site_of(self.crawler)
        note: DedupNote | None = self.notes.pop(item)
        fields = note.fields if note is not None else plain_fields(item)
        key = note.key if note is not None else schema.key(site, fields)
        common: dict[str, Any] = {
            "site": site,
            "item_type": schema.item_type,
            "key": key,
            "fields": fields,
            "job_id": job_of(fields, self.crawler),
        }
        if note is None:  # no dedup (no Redis): the store derives the timestamps
            return build_action(
                **common, content_hash=schema.content_hash(fields), seen_ms=now_ms()
            )
        state = note.state
        return build_action(
            **common,
            content_hash=state.content_hash,
            seen_ms=state.seen_ms,
            first_seen_ms=state.first_seen_ms,
            last_changed_ms=state.last_changed_ms,
        )

    async def close_spider(self) -> None:
        if self.store is not None:
            report = await self.store.close()
            if report.spill_remaining:
                logger.warning(
                    "%d items wait in the spill for Elasticsearch; any worker or "
                    "`python -m crawlers.pipelines.store drain %s` stores them",
                    report.spill_remaining,
                    site_of(self.crawler),
                )
            stats = self.crawler.stats
            if report.spill_remaining is not None and stats is not None:
                stats.set_value("store/spill_remaining_at_close", report.spill_remaining)
        if self.es is not None:
            await self.es.close()
        if self.server is not None:
            await self.server.aclose()

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if not self.job_document_at_close or self.crawler.stats is None:
            return
        stats = self.crawler.stats.get_stats()
        counters = {
            name: value
            for name, value in stats.items()
            if isinstance(value, int) and not isinstance(value, bool)
        }
        started = stats.get("start_time")
        # The same words as the orchestration flow's report step.
        status = "completed" if reason == "finished" else "failed"
        es = Elasticsearch(**self.es_kwargs)
        try:
            write_job_document(
                es,
                spider.name,
                str(getattr(spider, "job_id", "unassigned")),
                status,
                started if isinstance(started, dt.datetime) else None,
                dt.datetime.now(tz=dt.UTC),
                counters,
                spill_remaining=stats.get("store/spill_remaining_at_close"),
                extra={"close_reason": reason, "mode": "local"},
            )
        except Exception:
            # The crawl's items are safe either way; the history entry is best effort.
            logger.exception("could not write the job document")
        finally:
            es.close()

    def _count(self, name: str, n: int) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name, n)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Drain a site's store spill into Elasticsearch.")
    parser.add_argument("command", choices=["drain"])
    parser.add_argument("site")
    args = parser.parse_args(argv)
    # The project's settings: the environment mapped by crawlers.environment.
    settings = get_project_settings()
    redis_url = settings.get("REDIS_URL")
    if not redis_url or not settings.get("ELASTICSEARCH_URL"):
        parser.error("REDIS_URL and ELASTICSEARCH_URL must be set")
    drained, remaining = drain_spill_sync(
        args.site, redis_url=redis_url, es_kwargs=settings_elasticsearch_kwargs(settings)
    )
    print(f"{args.site}: drained {drained} spilled items; {remaining} remain")
    return 0 if remaining == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
