"""Dedup / change detection: each item is new, changed or unchanged (``core.dedup``).

Needs ``REDIS_URL`` (off otherwise). The verdict and the timestamps the stored document
must carry are handed to the store pipeline as an item note. Exact per-job counts
(``items/new|changed|unchanged``) and the job's new/changed key sets are written by the
Lua script itself; the Scrapy stats ``dedup/verdict/<verdict>`` count this worker's
classifications (re-deliveries included), for diagnostics.

Redis unreachable: the item waits and is retried with backoff (never passed on without a
verdict, never dropped). Its request stays leased meanwhile, exactly as the frontier
itself behaves during a Redis outage.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from core.dedup import ChangeDetector, ItemState, connect_async
from core.items_schema import UnknownItemType, plain_fields, schema_for
from core.keys import REDIS_ERRORS
from crawlers.pipelines.common import item_notes, job_of, site_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DedupNote:
    """What the store needs from dedup: the verdict/timestamps, the key, the fields."""

    state: ItemState
    key: str
    fields: dict[str, Any]


class DedupPipeline:
    def __init__(self, crawler: Crawler, redis_url: str) -> None:
        self.crawler = crawler
        self.redis_url = redis_url
        self.notes = item_notes(crawler)
        self.server: redis.asyncio.Redis | None = None
        self.detector: ChangeDetector | None = None
        self._last_warning = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DedupPipeline:
        redis_url = crawler.settings.get("REDIS_URL")
        if not redis_url:
            raise NotConfigured("DedupPipeline needs REDIS_URL")
        return cls(crawler, redis_url)

    async def open_spider(self) -> None:
        # Created here, inside the running event loop the asyncio client binds to.
        self.server = connect_async(self.redis_url)
        self.detector = ChangeDetector(self.server, site_of(self.crawler))

    async def close_spider(self) -> None:
        if self.server is not None:
            await self.server.aclose()

    async def process_item(self, item: Any) -> Any:
        try:
            schema = schema_for(item)
        except UnknownItemType:
            # Only reachable with validation switched off; nothing to key it on.
            self._inc("dedup/skipped_unknown_type")
            return item
        fields = plain_fields(item)
        key = schema.key(site_of(self.crawler), fields)
        job_id = job_of(fields, self.crawler) or "unassigned"
        state = await self._classify(job_id, key, schema.content_hash(fields))
        # The store reuses the fields and key instead of extracting them again.
        self.notes.attach(item, DedupNote(state, key, fields))
        self._inc(f"dedup/verdict/{state.verdict}")
        return item

    async def _classify(self, job_id: str, key: str, digest: str) -> ItemState:
        assert self.detector is not None, "open_spider() creates the detector"
        attempt = 0
        while True:
            try:
                return await self.detector.classify(job_id, key, digest)
            except REDIS_ERRORS as exc:
                attempt += 1
                self._inc("dedup/redis_errors")
                now = time.monotonic()
                if now - self._last_warning > 10:
                    self._last_warning = now
                    logger.warning(
                        "Redis unreachable for dedup (%s); items wait and are retried",
                        type(exc).__name__,
                    )
                await asyncio.sleep(min(5.0, 0.1 * 2**attempt))

    def _inc(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name)
