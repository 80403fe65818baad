"""The base of every site spider: profile, job id, frontier or local start, idle close.

With ``REDIS_URL`` set the spider is a scrapy-redis ``RedisSpider`` worker: its start
entries come from the site's Redis start list (put there by the producer) through the
leasing scheduler, and it closes itself after ``FRONTIER_IDLE_CLOSE_SECONDS`` of real
idleness unless it runs always-on. Without Redis it is a plain Scrapy spider that starts
from its profile's start paths, so ``scrapy crawl <site>`` works with no services.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any, ClassVar

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.settings import BaseSettings
from scrapy_redis.spiders import RedisSpider
from twisted.python.failure import Failure

from crawlers.frontier import JOB_META
from crawlers.profiles import ProfileError, SiteProfile

TRUE_WORDS = {"1", "true", "yes", "on"}


def new_job_id(site: str) -> str:
    """A sortable, unique job id: ``<site>-<UTC timestamp>-<random>``."""
    return f"{site}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"


def frontier_enabled(settings: BaseSettings) -> bool:
    return str(settings.get("SCHEDULER") or "").endswith("LeasingScheduler")


class SiteSpider(RedisSpider):
    """Subclasses set ``name`` (= the profile's file name) and parse callbacks."""

    name: ClassVar[str]
    _profile: ClassVar[SiteProfile | None] = None

    def __init__(
        self,
        *args: Any,
        job_id: str | None = None,
        base_url: str | None = None,
        always_on: str | bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.profile = self.load_profile()
        self.job_id = job_id or os.environ.get("SCRAPE_JOB_ID") or new_job_id(self.name)
        self.base_url = (base_url or self.default_base_url()).rstrip("/")
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.always_on = str(always_on).lower() in TRUE_WORDS if always_on is not None else None
        self._idle_since: float | None = None
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
        profile = cls.load_profile()
        settings.setdict(profile.scrapy_settings(), priority="spider")
        # The profile's render mode, for crawlers.fetch.rendering.RenderMiddleware;
        # `-s RENDER_MODE=...` (command line priority) still wins, e.g. for debugging.
        settings.set("RENDER_MODE", profile.render, priority="spider")

    def default_base_url(self) -> str:
        return self.profile.base_url

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        if frontier_enabled(crawler.settings):
            spider = super().from_crawler(crawler, *args, **kwargs)  # sets up scrapy-redis
        else:
            spider = Spider.from_crawler.__func__(cls, crawler, *args, **kwargs)  # type: ignore[attr-defined]
        if spider.always_on is None:
            spider.always_on = crawler.settings.getbool("FRONTIER_ALWAYS_ON")
        spider.idle_close_after = crawler.settings.getfloat("FRONTIER_IDLE_CLOSE_SECONDS", 30.0)
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

    def start_requests(self) -> Iterable[Request]:
        # scrapy-redis' RedisMixin pops start URLs destructively here; ours are leased.
        return []

    def next_requests(self) -> Iterable[Request]:
        return []

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

    def make_request_from_data(self, data: bytes | str) -> Request:
        raw = data.decode(self.redis_encoding or "utf-8") if isinstance(data, bytes) else data
        return self.make_request_from_entry(json.loads(raw))

    # -- idleness --------------------------------------------------------------------
    def spider_idle(self) -> None:
        """Close after ``idle_close_after`` seconds of real idleness (unless always-on).

        scrapy-redis' MAX_IDLE_TIME_BEFORE_CLOSE measures from import time, so a worker
        that was busy for longer than the limit closes at its first idle moment; this
        measures from the last request this worker leased.
        """
        now = time.time()
        scheduler = self.crawler.engine._slot.scheduler  # type: ignore[union-attr]
        last_activity = getattr(scheduler, "last_activity", now)
        if self._idle_since is None or self._idle_since < last_activity:
            self._idle_since = now
        if self.always_on or now - self._idle_since < self.idle_close_after:
            raise DontCloseSpider
        self.logger.info(
            "closing: idle for %.1fs (FRONTIER_IDLE_CLOSE_SECONDS=%.1f)",
            now - self._idle_since,
            self.idle_close_after,
        )

    def on_error(self, failure: Failure) -> None:
        """Default errback: a request that failed for good is logged and counted."""
        request = failure.request  # type: ignore[attr-defined]
        self.logger.error("request failed: %s (%s)", request.url, failure.getErrorMessage())
        self.crawler.stats.inc_value(f"errors/request_failed/{failure.type.__name__}")
