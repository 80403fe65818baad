"""A crawl the site refuses as a whole says so, and stops early.

``RefusalCheck`` (an extension) looks at the crawl's classification counters as each
response comes in (Scrapy's ``response_downloaded`` signal): once
``REFUSAL_CLOSE_AFTER`` responses have been classified and not one was a page (every one a
block: blocked, challenge, CAPTCHA or throttled), the crawl is closed with the reason
``refused`` instead of retrying the whole site through blocks. At the close, a crawl whose
every page was refused (``core.fetch.refusal``) logs one ERROR line naming the kind of refusal,
its rules and what to change (the client's own identity, sessions, rate), keeps it in the
stat ``refusal``, and ``scrapy crawl`` exits with status 3 (``crawlers.commands.crawl``).

A job of several workers is judged the same way by the flow, from the ledger's exact
figures (``core.jobs.index.job_document``).
"""

from __future__ import annotations

import logging

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro

from core.fetch.refusal import Presented, refusal
from crawlers.fetch.proxies import configured_proxies
from crawlers.runtime.logs import not_configured

logger = logging.getLogger(__name__)

REFUSED = "refused"  # the finish reason of a crawl closed early by the check
REFUSAL_STAT = "refusal"


def presented(settings: BaseSettings) -> Presented:
    """What a crawl with these settings shows the site."""
    return Presented(
        fetch_identity=str(settings.get("FETCH_IDENTITY")),
        user_agent=str(settings.get("USER_AGENT")),
        sessions=settings.getbool("SESSIONS_ENABLED"),
        proxies=len(configured_proxies(settings)),
        pass_challenges=settings.getbool("SESSION_PASS_CHALLENGES"),
    )


class RefusalCheck:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.close_after = crawler.settings.getint("REFUSAL_CLOSE_AFTER")
        self.presented = presented(crawler.settings)
        self._watching = self.close_after > 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RefusalCheck:
        if crawler.stats is None:
            raise not_configured("RefusalCheck", "no stats")
        check = cls(crawler)
        crawler.signals.connect(check.check, signal=signals.response_downloaded)
        crawler.signals.connect(check.spider_closed, signal=signals.spider_closed)
        return check

    def check(self) -> None:
        """Close the crawl once ``close_after`` responses came and every one was a block
        (the counters lag one response: this one is classified after the signal)."""
        if not self._watching:
            return
        stats = self.crawler.stats
        assert stats is not None
        classified = int(stats.get_value("responses/classified", 0))
        classified -= int(stats.get_value("responses/robots_txt", 0))
        if classified < self.close_after:
            return
        self._watching = False  # decided either way
        if classified - int(stats.get_value("blocks/total", 0)) > 0:
            return  # the site gave pages: never a refusal as a whole
        logger.error(
            "closing the crawl: the first %d responses were all blocks (%s)",
            classified,
            refusal(stats.get_stats(), self.presented) or "refused",
        )
        engine = self.crawler.engine
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason=REFUSED)).addErrback(
                lambda failure: logger.error("closing a refused crawl failed: %s", failure.value)
            )

    def spider_closed(self) -> None:
        self._watching = False
        stats = self.crawler.stats
        assert stats is not None
        line = refusal(stats.get_stats(), self.presented)
        if line:
            stats.set_value(REFUSAL_STAT, line)
            logger.error("%s", line)
