"""Crawl budgets: every spider's crawl stops, whatever the site links to.

Four budgets, each a setting a profile's ``[budget]`` table overrides, each named in one
WARNING line when first reached and counted (``budget/reached/<name>``: 1 per worker
that reached it, ``budget/refused/<name>``: the requests it refused), so the job's report
says which one ended or trimmed the crawl:

* ``depth`` (``DEPTH_LIMIT``): links followed from a start page, Scrapy's own
  ``DepthMiddleware``, here counting what it refuses (``DepthBudget``);
* ``chain`` (``CRAWL_MAX_CHAIN``): pages in a row reached from a page of the same URL
  shape (digits of its path and query normalised), so ``?page=N+1`` and ``/day/N ->
  /day/N+1`` stop however the spider paginates (``ChainBudget``);
* ``pages`` (``CRAWL_MAX_PAGES``): pages per job, over all workers (``JobBudgetCheck``);
* ``time`` (``CRAWL_MAX_SECONDS``): wall time of the job (``JobBudgetCheck``).

A local crawl reaching ``pages`` or ``time`` closes with the reason ``budget_<name>``.
With the frontier the count is the job's, in Redis (``core.frontier.budget``): the first worker
past the budget empties the frontier, every worker refuses the requests its pages still
yield, and the job drains like any other (the flow's drain poll does not wait on it).
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.utils.defer import deferred_from_coro

from core.frontier.budget import PAGES, TIME, JobBudget
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

CHAIN_META = "budget_chain"  # pages in a row of the request's URL shape before it
_DIGITS = re.compile(r"\d+")
# Links past the cap that a page's callback left unread (crawlers.limits.links): counted with
# the requests LinkCap refuses once the callback's output ends.
_UNREAD: weakref.WeakKeyDictionary[Response, int] = weakref.WeakKeyDictionary()


class BudgetState:
    """What one crawler's budget components share: the budgets reached (named once in
    the log) and, once the job's page or time budget ended it, the reason. One per crawl:
    ``CrawlServices.of(crawler).component(BudgetState)``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.reached: set[str] = set()
        self.job_ended: str | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BudgetState:
        return cls(crawler)

    def reach(self, name: str, setting: str, value: object, what: str) -> None:
        """The budget ``name`` reached: counted, and named in one line per crawl."""
        stats = self.crawler.stats
        if name in self.reached:
            return
        self.reached.add(name)
        if stats is not None:
            stats.set_value(f"budget/reached/{name}", 1)
        logger.warning(
            "crawl budget reached: %s (%s=%s): %s; counted in budget/refused/%s",
            name,
            setting,
            value,
            what,
            name,
        )

    def refuse(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"budget/refused/{name}", n)


def url_shape(url: str) -> str:
    """The URL with its numbers normalised: ``/day/12?page=3`` -> ``/day/N?page=N``."""
    parts = urlsplit(url)
    query = "&".join(
        f"{key}={_DIGITS.sub('N', value)}" for key, value in sorted(parse_qsl(parts.query))
    )
    return f"{parts.netloc}{_DIGITS.sub('N', parts.path)}?{query}"


class DepthBudget(DepthMiddleware):
    """Scrapy's ``DepthMiddleware`` (``DEPTH_LIMIT``), naming and counting what it refuses."""

    budget: BudgetState

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DepthBudget:
        middleware = super().from_crawler(crawler)
        middleware.budget = CrawlServices.of(crawler).component(BudgetState)
        return middleware

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        processed = super().get_processed_request(request, response)
        if processed is None:
            budget = self.budget
            budget.refuse("depth")
            budget.reach("depth", "DEPTH_LIMIT", self.maxdepth, "deeper links are not followed")
        return processed


class ChainBudget(BaseSpiderMiddleware):
    """Caps chains of pages of one URL shape (``CRAWL_MAX_CHAIN``), and refuses every
    request once the job's page or time budget ended it (``JobBudgetCheck``)."""

    def __init__(self, crawler: Crawler, max_chain: int) -> None:
        super().__init__(crawler)
        self.max_chain = max_chain
        self.budget = CrawlServices.of(crawler).component(BudgetState)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChainBudget:
        return cls(crawler, crawler.settings.getint("CRAWL_MAX_CHAIN"))

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if self.budget.job_ended is not None:
            self.budget.refuse(self.budget.job_ended)
            return None
        if response is None or not self.max_chain:
            return request
        chain = 0
        if url_shape(request.url) == url_shape(response.url):
            chain = int(response.meta.get(CHAIN_META, 0)) + 1
        if chain > self.max_chain:
            self.budget.refuse("chain")
            self.budget.reach(
                "chain",
                "CRAWL_MAX_CHAIN",
                self.max_chain,
                f"pages like {url_shape(response.url)} follow each other without end",
            )
            return None
        if chain:
            request.meta[CHAIN_META] = chain
        return request


def links_unread(response: Response, count: int) -> None:
    """``count`` links of ``response`` that its callback did not read, being past the
    cap (``crawlers.limits.links``): in ``links/capped`` and the page's one line, with the
    requests ``LinkCap`` refuses."""
    if count > 0:
        _UNREAD[response] = _UNREAD.get(response, 0) + count


class LinkCap:
    """At most ``CRAWL_MAX_LINKS_PER_PAGE`` requests followed from one page (the rest
    counted in ``links/capped``, one line per page, with the links a callback left
    unread past the cap: ``links_unread``), handed on in batches of ``CRAWL_LINK_BATCH``
    with the event loop let through between them, so the scheduler and the downloader
    take each batch before the next is built."""

    def __init__(self, crawler: Crawler, cap: int, batch: int) -> None:
        self.crawler = crawler
        self.cap = cap
        self.batch = max(1, batch)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinkCap:
        cap = crawler.settings.getint("CRAWL_MAX_LINKS_PER_PAGE")
        if cap <= 0:
            raise not_configured("LinkCap", "CRAWL_MAX_LINKS_PER_PAGE=0: links not capped")
        return cls(crawler, cap, crawler.settings.getint("CRAWL_LINK_BATCH"))

    def _capped(self, response: Response | None, capped: int) -> None:
        if response is None:
            return
        capped += _UNREAD.pop(response, 0)
        if not capped:
            return
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("links/capped", capped)
            self.crawler.stats.inc_value("links/capped_pages")
        logger.warning(
            "%s: %d links not followed (CRAWL_MAX_LINKS_PER_PAGE=%d, counted in links/capped)",
            response.url,
            capped,
            self.cap,
        )

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any]
    ) -> Iterable[Any]:
        followed = capped = 0
        for output in result:
            if isinstance(output, Request) and response is not None:
                if followed >= self.cap:
                    capped += 1
                    continue
                followed += 1
            yield output
        self._capped(response, capped)

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        followed = capped = 0
        async for output in result:
            if isinstance(output, Request) and response is not None:
                if followed >= self.cap:
                    capped += 1
                    continue
                followed += 1
                if followed % self.batch == 0:
                    await asyncio.sleep(0)  # the scheduler takes this batch first
            yield output
        self._capped(response, capped)


class JobBudgetCheck:
    """The job's page (``CRAWL_MAX_PAGES``) and wall-time (``CRAWL_MAX_SECONDS``) budgets;
    off when both are 0."""

    def __init__(self, crawler: Crawler, max_pages: int, max_seconds: float) -> None:
        self.crawler = crawler
        self.max_pages = max_pages
        self.max_seconds = max_seconds
        self.state = CrawlServices.of(crawler).component(BudgetState)
        self.pages = 0
        self.redis_url = crawler.settings.get("REDIS_URL")
        self._budget: JobBudget | None = None
        self._pending = 0  # pages not yet added to the job's counter
        self._sending = False
        self._clock: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JobBudgetCheck:
        s = crawler.settings
        max_pages, max_seconds = s.getint("CRAWL_MAX_PAGES"), s.getfloat("CRAWL_MAX_SECONDS")
        if max_pages <= 0 and max_seconds <= 0:
            raise not_configured("JobBudgetCheck", "no page or time budget (CRAWL_MAX_PAGES=0)")
        check = cls(crawler, max_pages, max_seconds)
        crawler.signals.connect(check.response_received, signal=signals.response_received)
        crawler.signals.connect(check.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(check.spider_closed, signal=signals.spider_closed)
        return check

    # -- signals ---------------------------------------------------------------------------
    def spider_opened(self) -> None:
        if self.max_seconds > 0:
            self._clock = asyncio.ensure_future(self._watch_clock())

    async def spider_closed(self) -> None:
        if self._clock is not None:
            self._clock.cancel()

    def response_received(self, response: Response, request: Request) -> None:
        if self.max_pages <= 0 or request.url.endswith("/robots.txt"):
            return
        self.pages += 1
        if not self.redis_url:
            if self.pages >= self.max_pages:
                self._end(PAGES, f"{self.pages} pages fetched")
            return
        self._pending += 1
        job_id = request.meta.get(JOB_META) or getattr(self.crawler.spider, "job_id", None)
        if job_id and not self._sending:
            deferred_from_coro(self._send(str(job_id))).addErrback(self._failed)

    # -- the job's budget in Redis ----------------------------------------------------------
    def _job_budget(self) -> JobBudget:
        if self._budget is None:
            assert self.crawler.spider is not None
            server = CrawlServices.of(self.crawler).redis
            self._budget = JobBudget(server, self.crawler.spider.name)
        return self._budget

    async def _send(self, job_id: str) -> None:
        # One call in flight at a time; pages that arrive meanwhile go with the next one.
        self._sending = True
        try:
            while self._pending:
                n, self._pending = self._pending, 0
                pages, _first, reason = await self._job_budget().count_pages(
                    job_id, n, self.max_pages
                )
                if reason:
                    self._end(reason, f"the job's workers fetched {pages} pages")
        finally:
            self._sending = False

    async def _watch_clock(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            await asyncio.sleep(min(1.0, self.max_seconds))
            if not self.redis_url:
                elapsed = loop.time() - started
                if elapsed >= self.max_seconds:
                    self._end(TIME, f"the crawl ran {elapsed:.0f} s")
                    return
                continue
            job_id = getattr(self.crawler.spider, "job_id", None)
            if not job_id:
                continue
            try:
                elapsed, _first, reason = await self._job_budget().check_clock(
                    str(job_id), self.max_seconds
                )
            except Exception as exc:  # Redis down: the frontier's own lines say so
                logger.debug("job budget clock not read: %s", exc)
                continue
            if reason:
                self._end(reason, f"the job ran {elapsed:.0f} s")

    def _failed(self, failure: Any) -> None:
        logger.warning("job page budget not counted: %s", failure.getErrorMessage())

    # -- reached -----------------------------------------------------------------------------
    def _end(self, reason: str, what: str) -> None:
        if self.state.job_ended is not None:
            return
        self.state.job_ended = reason
        setting, value = (
            ("CRAWL_MAX_PAGES", self.max_pages)
            if reason == PAGES
            else ("CRAWL_MAX_SECONDS", self.max_seconds)
        )
        self.state.reach(reason, setting, value, f"{what}; the job ends")
        if self.redis_url:
            return  # the frontier is emptied (core.frontier.budget): the job drains like any other
        engine = self.crawler.engine
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason=f"budget_{reason}")).addErrback(
                lambda failure: logger.error("closing at the budget failed: %s", failure.value)
            )
