"""Re-crawl records: what the next crawl of an item's page may skip, written once the item
is durable (priority 400, after the store: an item reaching it is stored or spilled).

``RecrawlRecordPipeline`` records, per item page URL, the validators of its 200 answer
under the job's layout; an incomplete item, or an answer without validators, deletes the
record (a 304 would otherwise count a partial item unchanged forever). Writes are
coalesced per flush; Redis unreachable: retried, then a lost SET is only counted while a
lost DELETE fails the item (``item_error``: the page is crawled again).

Reads: ``REDIS_URL`` (off without it), ``DEDUP_RETRY_*``. Stats: docs/recrawl.md
"Conditional requests (ETag / Last-Modified / 304)".
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from scrapy.crawler import Crawler

from core.items_schema import ItemSchema, UnknownItemType, plain_fields, schema_for
from core.keys import REDIS_ERRORS
from core.recrawl.layouts import NO_BASELINE, baseline_id
from crawlers.fetch.conditional import PageValidators, ValidatorStore, validator_store
from crawlers.recrawl.context import ItemSeen, RecrawlContext, context_of
from crawlers.runtime.item_context import noted_fields
from crawlers.runtime.jobs import job_of, site_of
from crawlers.runtime.ledger import RetryPolicy
from crawlers.runtime.logs import not_configured

logger = logging.getLogger(__name__)


class RecordUnavailable(RuntimeError):
    """A record that must be cleared could not be: the item fails, its page is crawled again."""


@dataclass
class PendingRecord:
    """One item's records, waiting for the next flush."""

    context: RecrawlContext
    key: str
    item_type: str
    complete: bool
    job_id: str
    future: asyncio.Future[None]

    @property
    def keeps_record(self) -> bool:
        """A complete item whose page gave validators (else its record is deleted)."""
        return self.complete and bool(self.context.etag or self.context.last_modified)

    def validators(self, layout: str) -> PageValidators | None:
        """The page's record under ``layout`` (the job's), None: delete it."""
        if not self.keeps_record:
            return None
        c = self.context
        return PageValidators(c.etag, c.last_modified, self.key, self.item_type, layout)


class RecrawlRecordPipeline:
    max_batch = 500

    def __init__(self, crawler: Crawler, retry: RetryPolicy) -> None:
        self.crawler = crawler
        self.retry = retry
        self.store: ValidatorStore | None = None
        self.layout = NO_BASELINE
        self._queue: list[PendingRecord] = []
        self._sender: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RecrawlRecordPipeline:
        if not crawler.settings.get("REDIS_URL"):
            raise not_configured("RecrawlRecordPipeline", "re-crawl records are kept in Redis")
        return cls(crawler, RetryPolicy.from_settings(crawler.settings))

    async def open_spider(self) -> None:
        site = site_of(self.crawler)
        self.store = validator_store(self.crawler, site)
        self.layout = baseline_id(site)  # for a job the producer recorded no layout for

    async def close_spider(self) -> None:
        if self._sender is not None and not self._sender.done():
            await asyncio.shield(self._sender)

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, ItemSeen):
            return item
        context = context_of(item)
        if context is None or context.url is None:
            return item  # not an item page's item (or its page gave nothing to record)
        try:
            schema = schema_for(item)
        except UnknownItemType:
            return item
        fields, key = noted_fields(item) or self._fields_and_key(schema, item)
        pending = PendingRecord(
            context,
            key,
            schema.item_type,
            not fields.get("incomplete"),
            job_of(fields, self.crawler) or "unassigned",
            asyncio.get_running_loop().create_future(),
        )
        self._queue.append(pending)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_queued())
        await pending.future
        return item

    def _fields_and_key(self, schema: ItemSchema, item: Any) -> tuple[dict[str, Any], str]:
        fields = plain_fields(item)
        return fields, schema.key(site_of(self.crawler), fields)

    async def _send_queued(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            error = await self._with_retries(batch)
            for pending in batch:
                if pending.future.done():
                    continue
                if error is not None and not pending.keeps_record:
                    pending.future.set_exception(
                        RecordUnavailable(
                            f"{pending.key}: the page record of {pending.context.url} could "
                            f"not be cleared ({type(error).__name__}); its page is crawled again"
                        )
                    )
                else:
                    pending.future.set_result(None)

    async def _with_retries(self, batch: list[PendingRecord]) -> BaseException | None:
        attempt = 0
        while True:
            try:
                await self._record(batch)
                return None
            except REDIS_ERRORS as exc:
                attempt += 1
                if attempt > self.retry.times:
                    self._count("recrawl/record/failed", len(batch))
                    logger.warning(
                        "re-crawl records of %d items not written (%s): their pages are "
                        "fetched in full next time",
                        len(batch),
                        type(exc).__name__,
                    )
                    return exc
                await asyncio.sleep(self.retry.delay(attempt))

    async def _record(self, batch: list[PendingRecord]) -> None:
        """Every record of ``batch`` in one Redis pipeline: the page validators (set, or
        deleted for an incomplete item). Idempotent: a re-delivered item writes the same."""
        assert self.store is not None, "open_spider() creates the store"
        # Each record under its job's layout (core.recrawl.layouts): read once per job.
        layouts = {
            job_id: await self.store.job_layout(job_id, self.layout)
            for job_id in {p.job_id for p in batch}
        }
        validators = {
            p.context.url: p.validators(layouts[p.job_id])
            for p in batch
            if p.context.url is not None
        }
        await self.store.write(validators)
        kept = sum(1 for record in validators.values() if record is not None)
        self._count("recrawl/record/validators", kept)
        self._count("recrawl/record/cleared", len(validators) - kept)

    def _count(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None and n:
            self.crawler.stats.inc_value(name, n)
