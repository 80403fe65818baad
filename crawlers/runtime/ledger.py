"""The crawl's side of the job ledger (``core.figures.ledger``): one client per crawler, retried.

With ``REDIS_URL`` the validation pipeline records the items it drops, the fetch retry
layer every response it classifies (its verdict kind, and whether a browser rendered it)
and the session layer what became of its sessions, into the job's ledger, *before* the
request they belong to can be acked. ``CrawlServices.of(crawler).ledger`` is shared by
those components, on the crawl's Redis client (None without Redis: a local crawl's
figures are its own Scrapy stats). A write is retried with the dedup pipeline's policy
(``DEDUP_RETRY_*``: the same Redis, the same outage); when it still fails,
``LedgerUnavailable`` propagates, so the request is not acked and is crawled again
rather than counted wrong.

Response records are written for every page, so the ones made in the same turn of the
event loop share one round trip (``response``): each caller still waits for its own
record to be written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scrapy.crawler import Crawler

from core.figures.ledger import JobLedger
from core.keys import REDIS_ERRORS
from core.redis_client import AsyncClient
from core.store.settings import required

logger = logging.getLogger(__name__)

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


@dataclass
class _Batch:
    done: asyncio.Future[None]
    records: dict[str, dict[str, str]] = field(default_factory=dict)


class CrawlLedger:
    def __init__(self, crawler: Crawler, server: Callable[[], AsyncClient]) -> None:
        """``server``: the crawl's shared asyncio client (``CrawlServices.redis``), asked
        on first write, inside the running event loop."""
        self.crawler = crawler
        self.server = server
        self.retry = RetryPolicy.from_settings(crawler.settings)
        self._ledger: JobLedger | None = None
        self._batch: _Batch | None = None
        self._flushing: set[asyncio.Future[None]] = set()

    async def invalid(self, job_id: str, ref: str, reason: str) -> None:
        await self._write(lambda ledger: ledger.invalid(job_id, ref, reason))

    async def response(self, job_id: str, ref: str, value: str) -> None:
        """Record one classified response (``core.figures.ledger.JobLedger.responses``), in the
        batch of this turn of the event loop; returns once the batch is written."""
        batch = self._batch
        if batch is None:
            batch = self._batch = _Batch(asyncio.get_running_loop().create_future())
            asyncio.get_running_loop().call_soon(self._flush_soon, batch)
        batch.records.setdefault(job_id, {})[ref] = value
        # Shielded: a caller cancelled meanwhile must not cancel the others' write.
        await asyncio.shield(batch.done)

    async def session_event(self, job_id: str, event: str, value: str = "1") -> None:
        await self._write(lambda ledger: ledger.session_events(job_id, [(event, value)]))

    def _flush_soon(self, batch: _Batch) -> None:
        if self._batch is batch:
            self._batch = None
        self._flushing.add(asyncio.ensure_future(self._flush(batch)))

    async def _flush(self, batch: _Batch) -> None:
        try:
            for job_id, records in batch.records.items():
                await self._write(_responses(job_id, records))
        except BaseException as exc:  # LedgerUnavailable, or cancelled at shutdown
            if not batch.done.done():
                batch.done.set_exception(
                    exc if isinstance(exc, Exception) else LedgerUnavailable(str(exc))
                )
            if not isinstance(exc, Exception):
                raise
        else:
            batch.done.set_result(None)
        finally:
            self._flushing.discard(asyncio.current_task())

    async def redis_time(self) -> float:
        """The site's Redis clock (``TIME``), in epoch seconds: the clock every worker shares."""
        return await self._site_ledger().redis_time()

    async def close(self) -> None:
        """Wait for the writes in flight (the client is the crawl's: closed by it)."""
        if self._flushing:
            await asyncio.gather(*self._flushing, return_exceptions=True)

    def _site_ledger(self) -> JobLedger:
        # Created on first use, inside the running event loop the client binds to.
        if self._ledger is None:
            spider = self.crawler.spider
            assert spider is not None, "the ledger is written while a spider runs"
            self._ledger = JobLedger(self.server(), spider.name)
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


def _responses(job_id: str, records: dict[str, str]) -> Callable[[JobLedger], Awaitable[None]]:
    """The write of one job's batched response records (bound now, not at call time)."""
    return lambda ledger: ledger.responses(job_id, records.items())
