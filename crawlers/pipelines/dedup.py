"""Dedup / change detection: each item is new, changed or unchanged (``core.dedup.detector``).

``DedupPipeline`` is the one place verdicts are made: in Redis with ``REDIS_URL``
(``core.dedup.detector.ChangeDetector``, exact per-job counts), else from the stored documents
with ``ELASTICSEARCH_URL`` (local mode), off without either. The verdict and timestamps go
to the store pipeline as an item note; an ``ItemSeen`` counts ``unchanged`` once per key
and job, or has its page fetched in full when the key is unknown. Backend unreachable: the
item is retried with backoff, then fails (``DedupUnavailable``: ``item_error``, never
dropped as handled).

Reads: ``REDIS_URL``, ``ELASTICSEARCH_URL``, ``DEDUP_RETRY_*``. Details: docs/pipelines.md
"Dedup and change detection", docs/recrawl.md "Seen items through the pipelines
(validate -> dedup -> store)".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from elasticsearch import ApiError
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from core.dedup.detector import ChangeDetector, ChangeState, ItemState
from core.es_access import is_auth_error
from core.items_schema import UnknownItemType, plain_fields, schema_for
from core.store import DocumentState
from crawlers.pipelines.common import refetch, report_auth_refused
from crawlers.recrawl.context import ItemSeen
from crawlers.runtime.item_context import DedupNote, item_context
from crawlers.runtime.jobs import job_of, site_of
from crawlers.runtime.ledger import RetriedCalls, RetryPolicy
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class DedupUnavailable(RuntimeError):
    """The dedup state stayed unreachable through every retry: the item fails."""


class _AuthRefused(Exception):
    """Elasticsearch (the dedup state of local mode) refused the crawl's credentials."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(str(error))
        self.error = error


class DedupPipeline:
    def __init__(self, crawler: Crawler, retry: RetryPolicy) -> None:
        self.crawler = crawler
        self.retry = retry
        self.services = CrawlServices.of(crawler)
        self.services.verdicts = True
        self.state: ChangeState | None = None
        self.retried = RetriedCalls(retry, prefix="dedup", count=self._count, warn=self._warn)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DedupPipeline:
        s = crawler.settings
        if not s.get("REDIS_URL") and not s.get("ELASTICSEARCH_URL"):
            raise not_configured("DedupPipeline", "it needs REDIS_URL or ELASTICSEARCH_URL")
        return cls(crawler, RetryPolicy.from_settings(s))

    async def open_spider(self) -> None:
        # The crawl's clients (CrawlServices), built in the running event loop.
        if self.services.redis_url:
            self.state = ChangeDetector(self.services.redis, site_of(self.crawler))
        else:
            self.state = DocumentState(self.services.es, on_count=self._count)
        logger.info("dedup state: %s", self.state.description)

    async def process_item(self, item: Any) -> Any:
        try:
            return await self._process(item)
        except _AuthRefused as refused:
            # Local mode (state read from Elasticsearch): no verdict can be had. One line
            # for the crawl, which closes; the item is the next run's (it crawls again).
            status = refused.error.meta.status
            report_auth_refused(
                self.crawler,
                status,
                self.services.es_kwargs,
                "items get no verdict: the next run crawls them again",
            )
            self._count("dedup/auth_refused")
            raise DropItem(
                f"no dedup verdict: Elasticsearch refused the credentials ({status})",
                log_level="DEBUG",
            ) from None

    async def _process(self, item: Any) -> Any:
        if isinstance(item, ItemSeen):
            return await self._process_seen(item)
        try:
            schema = schema_for(item)
        except UnknownItemType:
            # Only reachable with validation switched off; nothing to key it on.
            self._count("dedup/skipped_unknown_type")
            return item
        fields = plain_fields(item)
        key = schema.key(site_of(self.crawler), fields)
        job_id = job_of(fields, self.crawler) or "unassigned"
        incomplete = tuple(fields.get("incomplete") or ())
        state = await self._classify(job_id, key, schema.content_hash(fields), incomplete)
        if incomplete:
            # Local mode's figure; with Redis the job's ledger has the exact one.
            self._count("items/incomplete")
        # The store reuses the fields and key instead of extracting them again.
        item_context(item).verdict = DedupNote(state, key, fields)
        self._count(f"dedup/verdict/{state.verdict}")
        return item

    async def _process_seen(self, item: ItemSeen) -> ItemSeen:
        job_id = job_of({"job_id": item.job_id}, self.crawler) or "unassigned"
        state = await self._retried(item.key, lambda s: s.seen(job_id, item.key))
        if state is None:
            self._count("dedup/verdict/unknown")
            raise refetch(self.crawler, item, "unknown")
        item_context(item).verdict = DedupNote(
            state, item.key, {}, self._unsee_of(job_id, item.key)
        )
        self._count(f"dedup/verdict/{state.verdict}")
        return item

    def _unsee_of(self, job_id: str, key: str) -> Callable[[], Awaitable[bool]]:
        async def unsee() -> bool:
            taken = await self._retried(key, lambda s: s.unsee(job_id, key))
            if taken:
                self._count("dedup/unseen")
            return taken

        return unsee

    async def _classify(
        self, job_id: str, key: str, digest: str, incomplete: tuple[str, ...]
    ) -> ItemState:
        return await self._retried(
            key, lambda s: s.classify(job_id, key, digest, incomplete=incomplete)
        )

    async def _retried(self, key: str, call: Callable[[ChangeState], Awaitable[_T]]) -> _T:
        """``call`` on the state backend, retried while it is unreachable (see the module
        docstring)."""
        state = self.state
        assert state is not None, "open_spider() creates the state backend"

        def unavailable(exc: BaseException) -> Exception:
            return DedupUnavailable(
                f"no verdict for {key} after {self.retry.times} retries "
                f"({state.description}: {type(exc).__name__}: {exc}); "
                "its request is crawled again"
            )

        async def guarded() -> _T:
            try:
                return await call(state)
            except ApiError as exc:
                if is_auth_error(exc):
                    raise _AuthRefused(exc) from None  # no retry fixes credentials
                raise

        return await self.retried.call(guarded, state.transient_errors, unavailable)

    def _warn(self, exc: BaseException) -> None:
        description = self.state.description if self.state is not None else "?"
        logger.warning(
            "dedup state unreachable (%s: %s); items wait and are retried",
            description,
            type(exc).__name__,
        )

    def _count(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name, n)
