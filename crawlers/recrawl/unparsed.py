"""Item pages the job could not parse: no more skips of their kind, for the rest of the job.

``UnparsedPagesMiddleware`` (a spider middleware at 65) watches responses to the profile's
``[recrawl] item_callbacks`` and card detail requests: when a ``<spider>/*_unparsed``
counter moved while the callback ran, the job stops card skips and 304s for that callback
on every worker (``{site}:job:<job>:unparsed``) and fetches the pages it skipped so far.

Reads: the profile's ``[recrawl] item_callbacks``, ``REDIS_URL`` (without it the watch is
this process's). Rules and stats: docs/recrawl.md "Layouts and unparsed pages".
"""

from __future__ import annotations

import json
import logging
import uuid
import weakref
from collections.abc import AsyncIterator
from typing import Any

import redis
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from core.figures.stats import UNPARSED_SUFFIX
from core.keys import REDIS_ERRORS
from core.recrawl.cards import CardState
from crawlers.recrawl.context import RECRAWL_META, RecrawlContext
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

_ERRORS = (*REDIS_ERRORS, redis.RedisError, AttributeError, TypeError)


def callback_name(request: Request) -> str | None:
    """The name of the spider method a request's response goes to (None: the default)."""
    callback = request.callback
    if isinstance(callback, str):
        return callback
    return getattr(callback, "__name__", None)


def skipped_page(request: Request, card_hash: str) -> str:
    """What to fetch should the job stop skipping: a card's detail page, as JSON."""
    errback = request.errback
    name = errback if isinstance(errback, str) else getattr(errback, "__name__", None)
    return json.dumps({"url": request.url, "errback": name, "card": card_hash})


class UnparsedWatch:
    """The crawl's watch (``CrawlServices.of(crawler).component(UnparsedWatch)``)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        profile = getattr(crawler.spider, "profile", None)
        recrawl = getattr(profile, "recrawl", None)
        self.item_callbacks = frozenset(getattr(recrawl, "item_callbacks", ()) or ())
        self.redis_url: str | None = crawler.settings.get("REDIS_URL")
        self.token = uuid.uuid4().hex  # this worker, to the job's stop script
        self._stopped: set[tuple[str, str]] = set()
        self._state: CardState | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnparsedWatch:
        return cls(crawler)

    # -- which responses, and were they parsed ------------------------------------------
    def item_page(self, response: Response) -> str | None:
        """The callback of ``response`` when it is an item page, else None."""
        request = getattr(response, "request", None)
        if request is None:
            return None
        name = callback_name(request)
        context = request.meta.get(RECRAWL_META)
        card = isinstance(context, RecrawlContext) and context.card_hash
        return name if name and (name in self.item_callbacks or card) else None

    def unparsed_count(self) -> int:
        """The crawl's ``<spider>/<page>_unparsed`` counters, summed."""
        stats, spider = self.crawler.stats, self.crawler.spider
        if stats is None or spider is None:
            return 0
        prefix = f"{spider.name}/"
        return sum(
            int(value)
            for name, value in stats.get_stats().items()
            if name.endswith(UNPARSED_SUFFIX) and name.startswith(prefix)
        )

    def job_of(self, source: Response | Request) -> str:
        job_id = source.meta.get(JOB_META) or getattr(self.crawler.spider, "job_id", None)
        return str(job_id or "unassigned")

    # -- the job stops skipping --------------------------------------------------------------
    def stopped(self, job_id: str, callback: str | None) -> bool:
        """Whether this worker saw the job stop skipping ``callback``'s pages."""
        return callback is not None and (job_id, callback) in self._stopped

    async def stop(self, job_id: str, callback: str, url: str) -> list[Request]:
        """``url``, a page of ``callback``, could not be parsed: the job skips none of
        its kind from now on. Returns the pages it skipped so far, to fetch now."""
        if (job_id, callback) in self._stopped:
            return []  # this worker stopped it already, and took the skipped pages then
        self._stopped.add((job_id, callback))
        pages: list[tuple[str, str]] = []
        state = self._card_state()
        if state is not None:
            try:
                pages = await state.stop(job_id, callback, self.token)
            except _ERRORS as exc:
                self._count("recrawl/unparsed/errors")
                logger.warning(
                    "listing cards: Redis unreachable (%s); the job's other workers may "
                    "still skip %s pages",
                    type(exc).__name__,
                    callback,
                )
        self._count("recrawl/unparsed/stopped")
        logger.warning(
            "%s (a %s page) could not be parsed: job %s skips no %s page any more "
            "(no listing-card skip, no 304), and fetches the %d it skipped so far",
            url,
            callback,
            job_id,
            callback,
            len(pages),
        )
        requests = [r for r in (self._request(job_id, callback, k, p) for k, p in pages) if r]
        self._count("recrawl/unparsed/refetched", len(requests))
        return requests

    def _request(self, job_id: str, callback: str, key: str, page: str) -> Request | None:
        spider = self.crawler.spider
        try:
            data: dict[str, Any] = json.loads(page)
            url = str(data["url"])
        except (ValueError, KeyError, TypeError):
            logger.error("listing cards: unreadable skipped page of %s: %r", key, page)
            return None
        parse = getattr(spider, callback, None)
        errback = getattr(spider, str(data.get("errback")), None) if data.get("errback") else None
        if not callable(parse):
            logger.error("%s: no spider callback %s to fetch %s with", key, callback, url)
            return None
        context = RecrawlContext(key=key, card_hash=data.get("card"), full=True)
        return Request(
            url,
            callback=parse,
            errback=errback if callable(errback) else None,
            dont_filter=True,  # its card was read in this job; its page was not
            meta={RECRAWL_META: context, JOB_META: job_id},
        )

    def _card_state(self) -> CardState | None:
        if self._state is None and self.redis_url and self.crawler.spider is not None:
            services = CrawlServices.of(self.crawler)
            self._state = CardState(services.redis, str(self.crawler.spider.name))
        return self._state

    def _count(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None and n:
            self.crawler.stats.inc_value(name, n)


class UnparsedPagesMiddleware:
    """Spider middleware (65): an item page whose callback moved an ``*_unparsed``
    counter stops the job's skips of its kind; the pages skipped so far follow its output.
    Other responses pass untouched."""

    def __init__(self, crawler: Crawler) -> None:
        self.watch = CrawlServices.of(crawler).component(UnparsedWatch)
        self._before: weakref.WeakKeyDictionary[Response, int] = weakref.WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnparsedPagesMiddleware:
        return cls(crawler)

    def process_spider_input(self, response: Response) -> None:
        if self.watch.item_page(response) is not None:
            self._before[response] = self.watch.unparsed_count()

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in result:
            yield output
        before = self._before.pop(response, None)
        callback = self.watch.item_page(response)
        if before is None or callback is None or self.watch.unparsed_count() <= before:
            return
        for request in await self.watch.stop(self.watch.job_of(response), callback, response.url):
            yield request
