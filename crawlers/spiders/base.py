"""The base of every site spider: profile, job id, start entries.

A plain ``scrapy.Spider``: with no services, ``scrapy crawl <site>`` starts from its
profile's start paths. With the Redis frontier (``REDIS_URL``, see docs/frontier.md)
the job's start entries come from the site's start list instead (put there by the
producer, leased like any request by the scheduler's queue, turned into requests by
``make_request_from_entry``); worker ids, idle close and the rest of the frontier
belong to the scheduler and the ``FrontierWorker`` extension, which serve any spider.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.settings import BaseSettings
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from core.config import ConfigurationError
from crawlers.fetch.retry import NOT_BEFORE_META, PART_RETRY_META, backoff_delay
from crawlers.frontier.scheduler import frontier_enabled
from crawlers.profiles import PageSelectors, ProfileError, SiteProfile
from crawlers.recrawl.cards import Card, CardGate
from crawlers.recrawl.context import ItemSeen
from crawlers.runtime.jobs import JOB_META, new_job_id
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.fallbacks import Picked, report


class SiteSpider(Spider):
    """Subclasses set ``name`` (= the profile's file name) and parse callbacks.

    The job id: ``-a job_id=...``, else the ``JOB_ID`` setting, else a new one.
    """

    name: str
    _profile: ClassVar[SiteProfile | None] = None

    def __init__(
        self,
        *args: Any,
        job_id: str | None = None,
        base_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.profile = self.load_profile()
        self.job_id: str | None = job_id
        self.base_url = (base_url or self.default_base_url()).rstrip("/")
        if self.profile.sitemaps and not hasattr(self, "parse_sitemap"):
            raise ProfileError(
                f"{self.name}: profile lists sitemaps but the spider has no parse_sitemap"
            )

    # -- configuration ---------------------------------------------------------------
    @classmethod
    def load_profile(cls) -> SiteProfile:
        if cls._profile is None or cls._profile.site != cls.name:
            cls._profile = SiteProfile.load(cls.name)
        return cls._profile

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        try:
            profile = cls.load_profile()
        except ProfileError as exc:  # an operator's mistake: one line, no traceback
            raise ConfigurationError(str(exc)) from None
        settings.setdict(profile.scrapy_settings(), priority="spider")
        # The profile's render mode, for crawlers.fetch.render_mode.RenderMiddleware;
        # `-s RENDER_MODE=...` (command line priority) still wins, e.g. for debugging.
        settings.set("RENDER_MODE", profile.render, priority="spider")

    def default_base_url(self) -> str:
        return self.profile.base_url

    def selectors(self, page_type: str) -> PageSelectors:
        """The gate's selectors of ``page_type`` in this spider's profile, which the
        callbacks hand to their extract functions: one home per selector."""
        return self.profile.selectors(page_type)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if not spider.job_id:
            spider.job_id = crawler.settings.get("JOB_ID") or new_job_id(spider.name)
        # Built now: it takes the crawl's Redis client when the spider opens.
        CrawlServices.of(crawler).component(CardGate)
        return spider

    # -- start -----------------------------------------------------------------------
    def start_entries(self) -> list[dict[str, Any]]:
        """The job's start requests as JSON-able entries (what the producer enqueues)."""
        entries = [
            {"url": self.base_url + path, "callback": "parse"} for path in self.profile.start_paths
        ]
        entries += [
            {"url": self.base_url + path, "callback": "parse_sitemap"}
            for path in self.profile.sitemaps
        ]
        return entries

    async def start(self) -> AsyncIterator[Any]:
        if frontier_enabled(self.settings):
            # Start entries arrive through the frontier's start list (leased like any
            # request by the scheduler's queue), not from here.
            return
        for entry in self.start_entries():
            yield self.make_request_from_entry(entry)

    def make_request_from_entry(self, entry: dict[str, Any]) -> Request:
        meta = dict(entry.get("meta") or {})
        meta.setdefault(JOB_META, entry.get("job_id") or self.job_id)
        if "render" in entry:  # per_request rendering: the entry asks for a browser (or not)
            meta.setdefault("render", bool(entry["render"]))
        errback = entry.get("errback")
        return Request(
            entry["url"],
            callback=getattr(self, entry.get("callback") or "parse"),
            errback=getattr(self, errback) if errback else None,
            meta=meta,
            priority=int(entry.get("priority", 0)),
            dont_filter=bool(entry.get("dont_filter", False)),
        )

    async def cards_to_fetch(
        self, response: Response, cards: Sequence[Card], item_type: type
    ) -> list[Request | ItemSeen]:
        """Per listing card, its detail request to yield, or the ``ItemSeen`` standing
        for its item when the card is as at the item's last full fetch (the profile's
        ``[recrawl] card_fields``; ``crawlers.recrawl.cards``). ``item_type``: the item class
        the detail callback yields, whose schema keys it."""
        gate = CrawlServices.of(self.crawler).component(CardGate)
        return await gate.outputs(
            response, cards, item_type, self.profile.recrawl, self.name, self.job_id
        )

    def picked(self, url: str, picked: Picked) -> dict[str, Any]:
        """The fields of an item read from several sources (``crawlers.spiders.fallbacks``),
        each source's refused values counted and said in one line."""
        report(picked, url, self.crawler.stats, self.logger)
        return dict(picked.fields)

    def on_error(self, failure: Failure) -> None:
        """Default errback: a request that failed for good is logged and counted."""
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
        self.logger.error("request failed: %s (%s)", request.url, failure.getErrorMessage())
        self.crawler.stats.inc_value(f"errors/request_failed/{failure.type.__name__}")

    def retry_part(
        self, request: Request, part: str, failure: Failure | None = None
    ) -> Request | None:
        """``request`` fetches a part of an item (a reviews API, the detail page behind a
        listing card) and failed through the fetch layer's retries: the copy to yield,
        queued again in the frontier and sent ``PART_RETRY_BACKOFF`` (doubling, jittered)
        later, so a burst of errors is outlasted across the job rather than inside a few
        seconds. None once ``PART_RETRY_TIMES`` rounds are spent: the caller then yields
        the item with ``incomplete=[part]``, which the report counts and the next run
        fetches again. ``failure``: an HTTP answer that is not worth retrying (a 404, or
        any status outside ``RETRY_HTTP_CODES``) is final at once."""
        settings = self.crawler.settings
        rounds = int(request.meta.get(PART_RETRY_META, 0))
        stats = self.crawler.stats
        if failure is not None and failure.check(HttpError):
            status = failure.value.response.status
            if status not in {int(code) for code in settings.getlist("RETRY_HTTP_CODES")}:
                stats.inc_value(f"parts/missing/{part}")
                self.logger.error(
                    "%s answered %d: storing its item without %s", request.url, status, part
                )
                return None
        if rounds >= settings.getint("PART_RETRY_TIMES"):
            stats.inc_value(f"parts/gave_up/{part}")
            self.logger.error(
                "%s failed %d times in this job: storing its item without %s",
                request.url,
                rounds + 1,
                part,
            )
            return None
        delay = backoff_delay(
            rounds + 1,
            settings.getfloat("PART_RETRY_BACKOFF"),
            settings.getfloat("PART_RETRY_BACKOFF_MAX"),
        )
        retry = request.replace(dont_filter=True)
        retry.meta[PART_RETRY_META] = rounds + 1
        retry.meta[NOT_BEFORE_META] = CrawlServices.of(self.crawler).clock.now() + delay
        retry.meta.pop("retry_times", None)  # a new round of the fetch layer's retries
        stats.inc_value(f"parts/requeued/{part}")
        self.logger.warning(
            "%s failed; queued again in %.0fs (round %d of %d)",
            request.url,
            delay,
            rounds + 1,
            settings.getint("PART_RETRY_TIMES"),
        )
        return retry


def page_selectors(site: str, page_type: str, given: PageSelectors | None = None) -> PageSelectors:
    """``given`` (a spider's, from its profile), else the selectors of the site's shipped
    profile: what a pure extract function reads when called alone (tests, the scaffold)."""
    return given if given is not None else _shipped_selectors(site, page_type)


@functools.cache
def _shipped_selectors(site: str, page_type: str) -> PageSelectors:
    return SiteProfile.load(site).selectors(page_type)
