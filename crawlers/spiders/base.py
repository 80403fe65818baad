"""The base of every site spider: profile, job id, start entries.

A plain ``scrapy.Spider``: with no services, ``scrapy crawl <site>`` starts from its
profile's start paths. With the Redis frontier (``REDIS_URL``, see docs/frontier.md)
the job's start entries come from the site's start list instead (put there by the
producer, leased like any request by the scheduler's queue, turned into requests by
``make_request_from_entry``); worker ids, idle close and the rest of the frontier
belong to the scheduler and the ``FrontierWorker`` extension, which serve any spider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from core.config import ConfigurationError
from crawlers.frontier import JOB_META, frontier_enabled, new_job_id
from crawlers.profiles import ProfileError, SiteProfile


class SiteSpider(Spider):
    """Subclasses set ``name`` (= the profile's file name) and parse callbacks.

    The job id: ``-a job_id=...``, else the ``JOB_ID`` setting, else a new one.
    """

    name: ClassVar[str]
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
        # The profile's render mode, for crawlers.fetch.rendering.RenderMiddleware;
        # `-s RENDER_MODE=...` (command line priority) still wins, e.g. for debugging.
        settings.set("RENDER_MODE", profile.render, priority="spider")

    def default_base_url(self) -> str:
        return self.profile.base_url

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if not spider.job_id:
            spider.job_id = crawler.settings.get("JOB_ID") or new_job_id(spider.name)
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

    def on_error(self, failure: Failure) -> None:
        """Default errback: a request that failed for good is logged and counted."""
        request = failure.request  # type: ignore[attr-defined]
        self.logger.error("request failed: %s (%s)", request.url, failure.getErrorMessage())
        self.crawler.stats.inc_value(f"errors/request_failed/{failure.type.__name__}")
