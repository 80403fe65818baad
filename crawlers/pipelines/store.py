"""Store: items into Elasticsearch through ``core.store.ItemStore`` (bulk, durable).

Needs ``ELASTICSEARCH_URL`` (off otherwise) and the dedup pipeline before it: the store
writes the verdict and timestamps dedup decided, and never works them out itself.
``process_item`` returns only when the item is durable: accepted by Elasticsearch or
written to the spill (Redis list ``<site>:store:spill`` with ``REDIS_URL``, else a file
under ``STORE_SPILL_DIR``, by default ``PLATFORM_RUN_DIR/spill``). That is the frontier's
contract: a request's lease is acked only after its items went through the pipelines, so
a worker killed at any moment loses nothing.

An item Elasticsearch rejects for good (mapping error) is dropped here with the error
(DropItem, logged and counted) and kept in the dead-letter list for replay.

Local mode (no leasing frontier): at spider close this pipeline also writes the job's
document into the ``jobs`` index from the crawl's Scrapy stats. With the frontier, the
orchestration flow writes it after the drain, from the counters of all workers.

    python -m crawlers.pipelines.store drain <site> [--redis-url URL] [--elasticsearch-url URL]

moves a site's spill into ES (URLs default to the project's ``REDIS_URL`` and
``ELASTICSEARCH_URL`` settings).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.settings import BaseSettings

import crawlers.items  # noqa: F401  (registers the item types: their mappings)
from core.dedup import connect_async
from core.items_schema import UnknownItemType, schema_for
from core.jobs_index import write_job_document
from core.ledger import JobLedger
from core.store import (
    DeadLettered,
    FileSpill,
    ItemStore,
    MissingSetting,
    RedisSpill,
    Spill,
    StoreAction,
    StoreSettings,
    build_action,
    drain_spill_sync,
)
from crawlers.addon import project_settings
from crawlers.frontier import frontier_enabled
from crawlers.pipelines.common import es_client_kwargs, item_notes, job_of, site_of
from crawlers.pipelines.dedup import DedupNote

logger = logging.getLogger(__name__)


def spill_dir(settings: BaseSettings) -> Path:
    """Where a worker without Redis spills: ``STORE_SPILL_DIR``, else under the run dir."""
    configured = settings.get("STORE_SPILL_DIR")
    if configured:
        return Path(configured)
    run_dir = settings.get("PLATFORM_RUN_DIR")
    if not run_dir:
        raise MissingSetting("STORE_SPILL_DIR or PLATFORM_RUN_DIR must be set (file spill)")
    return Path(run_dir) / "spill"


class StorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        s = crawler.settings
        self.es_kwargs = es_client_kwargs(s)
        self.redis_url: str | None = s.get("REDIS_URL")
        self.redis_params = s.getdict("REDIS_PARAMS")
        self.spill_dir = None if self.redis_url else spill_dir(s)
        self.settings = StoreSettings.from_settings(s)
        self.notes = item_notes(crawler)
        self.es: AsyncElasticsearch | None = None
        self.server: redis.asyncio.Redis | None = None
        self.store: ItemStore | None = None
        job_doc = s.get("STORE_JOB_DOCUMENT_AT_CLOSE")
        self.job_document_at_close = (
            not frontier_enabled(s) if job_doc is None else s.getbool("STORE_JOB_DOCUMENT_AT_CLOSE")
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        if not crawler.settings.get("ELASTICSEARCH_URL"):
            raise NotConfigured("StorePipeline needs ELASTICSEARCH_URL")
        if not item_notes(crawler).verdicts:
            # Configuration error, not an optional feature: fail the crawl loudly.
            raise RuntimeError(
                "StorePipeline stores dedup's verdicts: enable "
                "crawlers.pipelines.dedup.DedupPipeline before it in ITEM_PIPELINES"
            )
        pipeline = cls(crawler)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    async def open_spider(self) -> None:
        site = site_of(self.crawler)
        # Created here, inside the running event loop the asyncio clients bind to.
        self.es = AsyncElasticsearch(**self.es_kwargs)
        spill: Spill
        on_stored = None
        if self.redis_url:
            self.server = connect_async(self.redis_url, max_connections=4, params=self.redis_params)
            spill = RedisSpill(self.server, site, lock_timeout=self.settings.spill_lock_seconds)
            on_stored = JobLedger(self.server, site).stored
        else:
            assert self.spill_dir is not None
            spill = FileSpill(self.spill_dir / f"{site}.jsonl")
        self.store = ItemStore(
            self.es, spill, settings=self.settings, on_count=self._count, on_stored=on_stored
        )
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
        note: DedupNote | None = self.notes.pop(item)
        if note is None:
            # Dedup passes every item of a known type on with a note, or fails it.
            raise RuntimeError(f"no dedup verdict for a {schema.item_type} item")
        state = note.state
        return build_action(
            site=site_of(self.crawler),
            item_type=schema.item_type,
            key=note.key,
            fields=note.fields,
            job_id=job_of(note.fields, self.crawler),
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
    parser.add_argument("--redis-url", help="default: the project's REDIS_URL setting")
    parser.add_argument(
        "--elasticsearch-url", help="default: the project's ELASTICSEARCH_URL setting"
    )
    args = parser.parse_args(argv)
    settings = project_settings()
    if args.redis_url:
        settings.set("REDIS_URL", args.redis_url, priority="cmdline")
    if args.elasticsearch_url:
        settings.set("ELASTICSEARCH_URL", args.elasticsearch_url, priority="cmdline")
    redis_url = settings.get("REDIS_URL")
    if not redis_url or not settings.get("ELASTICSEARCH_URL"):
        parser.error("a Redis URL and an Elasticsearch URL are needed (options or settings)")
    drained, remaining = drain_spill_sync(
        args.site,
        redis_url=redis_url,
        es_kwargs=es_client_kwargs(settings),
        settings=StoreSettings.from_settings(settings),
    )
    print(f"{args.site}: drained {drained} spilled items; {remaining} remain")
    return 0 if remaining == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
