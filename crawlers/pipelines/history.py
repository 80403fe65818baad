"""History: change documents for the history fields of new and changed items.

Runs between dedup (200) and the store (300). For an item whose verdict is new or
changed and whose type names history fields (``@item_schema(..., history=...)``), it
stores their values in Redis and gets back the values they replace
(``core.recrawl.history.HistoryState``: exact, the same for every delivery within a job); each
field that changed becomes a change document (``core.store.changes.change_action``).

The documents are not written here: they are handed to the store as the item's note
``store_extra`` (``ItemContext.store_extra``: a list of ``StoreAction``), and
the store puts them through its durable ``ItemStore`` before the item itself, so an
item acked as stored has its changes stored or spilled too. Dedup's note is read and left
in place for the store.

Needs ``REDIS_URL`` and ``ELASTICSEARCH_URL`` (off otherwise). Redis unreachable: the
item waits and is retried like dedup's (``DEDUP_RETRY_*``), then fails (``item_error``:
its request is crawled again). The ``changes-<site>`` index is declared at open and, if
Elasticsearch was away, again before the next change (its documents wait in the store's
buffer or spill meanwhile). Stats: ``history/changes`` and ``history/changes/<kind>``
(this worker's, re-deliveries included).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch
from scrapy.crawler import Crawler

from core.dedup.detector import CHANGED, NEW
from core.items_schema import UnknownItemType, schema_for
from core.recrawl.history import Change, HistoryState, diff, values_of
from core.store import StoreAction, StoreSettings
from core.store.changes import change_action, ensure_changes_index
from crawlers.runtime.item_context import DedupNote, find_context
from crawlers.runtime.jobs import job_of, site_of
from crawlers.runtime.ledger import RetriedCalls, RetryPolicy
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

ENSURE_RETRY_SECONDS = 5.0  # between attempts to declare the changes index while ES is away


class HistoryUnavailable(RuntimeError):
    """The history state stayed unreachable through every retry: the item fails."""


class HistoryPipeline:
    def __init__(self, crawler: Crawler, retry: RetryPolicy) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.retry = retry
        self.services = CrawlServices.of(crawler)
        self.replicas = StoreSettings.from_settings(s).replicas
        self.es: AsyncElasticsearch | None = None
        self.state: HistoryState | None = None
        self._index_ready = False
        self._last_ensure: float | None = None
        self.retried = RetriedCalls(retry, prefix="history", count=self._count, warn=self._warn)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HistoryPipeline:
        s = crawler.settings
        if not s.get("REDIS_URL") or not s.get("ELASTICSEARCH_URL"):
            raise not_configured("HistoryPipeline", "it needs REDIS_URL and ELASTICSEARCH_URL")
        return cls(crawler, RetryPolicy.from_settings(s))

    async def open_spider(self) -> None:
        # The crawl's clients (CrawlServices), built in the running event loop.
        self.state = HistoryState(self.services.redis, site_of(self.crawler))
        self.es = self.services.es
        await self._ensure_index()

    async def process_item(self, item: Any) -> Any:
        context = find_context(item)
        note = context.verdict if context is not None else None
        if context is None or note is None:
            return item  # dedup did not classify it (unknown type, dedup off)
        if note.state.verdict not in (NEW, CHANGED):
            return item
        try:
            schema = schema_for(item)
        except UnknownItemType:
            return item
        if not schema.history:
            return item
        job_id = job_of(note.fields, self.crawler) or "unassigned"
        values = values_of(note.fields, schema.history)
        old = await self._record(job_id, note.key, values)
        changes = diff(old, values, schema.history)
        if not changes:
            return item
        if not self._index_ready:
            await self._ensure_index()
        actions = self.actions(schema.item_type, note, job_id, changes)
        context.store_extra.extend(actions)
        for change in changes:
            self._count("history/changes")
            self._count(f"history/changes/{change.kind}")
        return item

    def actions(
        self, item_type: str, note: DedupNote, job_id: str, changes: list[Change]
    ) -> list[StoreAction]:
        """The change documents' writes. Their time is when dedup saw the content change
        (Redis' clock): the first delivery's, so a re-delivery rewrites the same document."""
        return [
            change_action(
                site=site_of(self.crawler),
                item_type=item_type,
                key=note.key,
                job_id=job_id,
                seen_ms=note.state.last_changed_ms,
                field=change.field,
                old=change.old,
                new=change.new,
                kind=change.kind,
            )
            for change in changes
        ]

    async def _record(self, job_id: str, key: str, values: dict[str, Any]) -> dict[str, Any] | None:
        state = self.state
        assert state is not None, "open_spider() creates the state"

        def unavailable(exc: BaseException) -> Exception:
            return HistoryUnavailable(
                f"no history for {key} after {self.retry.times} retries "
                f"({type(exc).__name__}: {exc}); its request is crawled again"
            )

        return await self.retried.call(
            lambda: state.record(job_id, key, values), state.transient_errors, unavailable
        )

    @staticmethod
    def _warn(exc: BaseException) -> None:
        logger.warning(
            "history state unreachable (%s); items wait and are retried", type(exc).__name__
        )

    async def _ensure_index(self) -> None:
        now = time.monotonic()
        if self.es is None or (
            self._last_ensure is not None and now - self._last_ensure < ENSURE_RETRY_SECONDS
        ):
            return
        self._last_ensure = now
        site = site_of(self.crawler)
        try:
            await ensure_changes_index(self.es, site, replicas=self.replicas)
        except (TransportError, ApiError, OSError) as exc:
            # The documents wait in the store (buffer, then spill) until it exists.
            logger.warning(
                "cannot declare changes-%s yet (%s: %s); retried before the next change",
                site,
                type(exc).__name__,
                exc,
            )
            return
        self._index_ready = True

    def _count(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name, n)
