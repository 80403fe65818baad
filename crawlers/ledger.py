"""The crawl's side of the job ledger (``core.ledger``): one client per crawler, retried.

With ``REDIS_URL`` the validation pipeline records the items it drops and the fetch retry
layer the blocked responses it sees, into the job's ledger, *before* the request they
belong to can be acked. ``CrawlLedger.of(crawler)`` is shared by those components (None
without Redis: a local crawl's figures are its own Scrapy stats). A write is retried with
the dedup pipeline's policy (``DEDUP_RETRY_*``: the same Redis, the same outage); when it
still fails, ``LedgerUnavailable`` propagates, so the request is not acked and is crawled
again rather than counted wrong.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio
from scrapy import signals
from scrapy.crawler import Crawler

from core.dedup import connect_async
from core.keys import REDIS_ERRORS
from core.ledger import JobLedger
from core.store.settings import required

logger = logging.getLogger(__name__)

_ATTR = "_platform_crawl_ledger"
_T = TypeVar("_T")


class LedgerUnavailable(RuntimeError):
    """Redis stayed unreachable through every retry: the fact is not recorded."""


@dataclass(frozen=True)
class RetryPolicy:
    times: int
    backoff: float
    backoff_max: float

    @classmethod
    def from_settings(cls, settings: Any) -> RetryPolicy:
        """``DEDUP_RETRY_*``: the policy of every Redis write an item waits for."""
        return cls(
            int(required(settings, "DEDUP_RETRY_TIMES")),
            float(required(settings, "DEDUP_RETRY_BACKOFF")),
            float(required(settings, "DEDUP_RETRY_BACKOFF_MAX")),
        )

    def delay(self, attempt: int) -> float:
        return float(min(self.backoff_max, self.backoff * 2 ** (attempt - 1)))


class RetriedCalls:
    """One pipeline's calls to a Redis state its items wait for, retried with ``policy``
    while the state is unreachable: each retry counted ``<prefix>/retries``, ``warn`` called
    at most every ``WARN_EVERY`` seconds, and after the last retry ``<prefix>/failed`` is
    counted and the error ``fail`` builds is raised (the item fails: its request is
    crawled again)."""

    WARN_EVERY = 10.0

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        prefix: str,
        count: Callable[[str], None],
        warn: Callable[[BaseException], None],
    ) -> None:
        self.policy = policy
        self.prefix = prefix
        self.count = count
        self.warn = warn
        self._last_warning = 0.0

    async def call(
        self,
        call: Callable[[], Awaitable[_T]],
        errors: tuple[type[BaseException], ...],
        fail: Callable[[BaseException], Exception],
    ) -> _T:
        attempt = 0
        while True:
            try:
                return await call()
            except errors as exc:
                attempt += 1
                self.count(f"{self.prefix}/retries")
                if attempt > self.policy.times:
                    self.count(f"{self.prefix}/failed")
                    raise fail(exc) from exc
                now = time.monotonic()
                if now - self._last_warning > self.WARN_EVERY:
                    self._last_warning = now
                    self.warn(exc)
                await asyncio.sleep(self.policy.delay(attempt))


class CrawlLedger:
    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.url = str(s.get("REDIS_URL"))
        self.params = s.getdict("REDIS_PARAMS")
        self.cluster = s.getbool("REDIS_CLUSTER")
        self.retry = RetryPolicy.from_settings(s)
        self._server: redis.asyncio.Redis | None = None
        self._ledger: JobLedger | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlLedger | None:
        """The crawler's ledger (created on first use), None without ``REDIS_URL``."""
        if not crawler.settings.get("REDIS_URL"):
            return None
        ledger: CrawlLedger | None = getattr(crawler, _ATTR, None)
        if ledger is None:
            ledger = cls(crawler)
            setattr(crawler, _ATTR, ledger)
            crawler.signals.connect(ledger.close, signal=signals.spider_closed)
        return ledger

    async def invalid(self, job_id: str, ref: str, reason: str) -> None:
        await self._write(lambda ledger: ledger.invalid(job_id, ref, reason))

    async def blocked(self, job_id: str, response_ref: str, kind: str) -> None:
        await self._write(lambda ledger: ledger.blocked(job_id, response_ref, kind))

    async def redis_time(self) -> float:
        """The site's Redis clock (``TIME``), in epoch seconds: the clock every worker shares."""
        return await self._site_ledger().redis_time()

    async def close(self) -> None:
        if self._server is not None:
            await self._server.aclose()
            self._server = self._ledger = None

    def _site_ledger(self) -> JobLedger:
        # Created on first use, inside the running event loop the client binds to.
        if self._ledger is None:
            spider = self.crawler.spider
            assert spider is not None, "the ledger is written while a spider runs"
            self._server = connect_async(
                self.url, max_connections=4, params=self.params, cluster=self.cluster
            )
            self._ledger = JobLedger(self._server, spider.name)
        return self._ledger

    async def _write(self, write: Callable[[JobLedger], Awaitable[None]]) -> None:
        attempt = 0
        while True:
            try:
                return await write(self._site_ledger())
            except REDIS_ERRORS as exc:
                attempt += 1
                if attempt > self.retry.times:
                    raise LedgerUnavailable(
                        f"job ledger unreachable after {self.retry.times} retries "
                        f"({type(exc).__name__}); the request is crawled again"
                    ) from None
                if attempt == 1:
                    logger.warning("job ledger unreachable (%s); retrying", type(exc).__name__)
                await asyncio.sleep(self.retry.delay(attempt))
