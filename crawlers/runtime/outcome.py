"""The crawl's final word: ``CrawlOutcome`` sets the close reason that says what happened.

An extension that judges the crawl as it closes (``core.jobs.outcome.judge``: items stored,
refused, nothing stored and why, store failed) and writes the verdict into Scrapy's stats
(``finish_reason``, ``outcome``, ``workers/finish_reason/<reason>``, ``item_error_count``),
which ``scrapy crawl`` logs as its last line and turns into its exit status. Without the
frontier a crawl that stored nothing closes with its reason at once; with it a worker's
items stored are its job's (the job's ledger).

Reads: the crawl's stats and the job's ledger. Reasons, statuses and their order:
docs/configuration.md "How a crawl ends: close reason, last line, exit status",
docs/pipelines.md "How a crawl ends".
"""

from __future__ import annotations

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider

from core.figures.ledger import stored_count
from core.figures.stats import JobStats
from core.frontier.budget import PAGES, TIME
from core.jobs.outcome import (
    FINISHED,
    ITEM_ERRORS,
    SCRAPED,
    STORED,
    WORKER_REASONS,
    Outcome,
    judge,
)
from core.keys import REDIS_ERRORS
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

OUTCOME_STAT = "outcome"  # the one line; ``finish_reason`` holds the reason
REFUSAL_STAT = "refusal"  # crawlers.fetch.refusal's line of a crawl refused as a whole


class CrawlOutcome:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.services = CrawlServices.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlOutcome:
        if crawler.stats is None:
            raise not_configured("CrawlOutcome", "no stats")
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(extension.item_error, signal=signals.item_error)
        # Synchronous: it runs whole before the receivers connected after it (the frontier
        # worker's last stats push, the local jobs document).
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_idle(self, spider: Spider) -> None:
        """Out of requests without the frontier: close with the reason that says what the
        crawl got (ignored by Scrapy when another component keeps the crawl open)."""
        if self.services.redis_url:
            return  # a worker's idleness is the frontier's to judge (FrontierWorker)
        outcome = self.judge(FINISHED)
        if outcome.reason != FINISHED:
            raise CloseSpider(outcome.reason)

    def item_error(self) -> None:
        """Scrapy counts items scraped and dropped, not those that failed: counted here."""
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(ITEM_ERRORS)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        stats = self.crawler.stats
        assert stats is not None
        outcome = self.judge(reason)
        stats.set_value("finish_reason", outcome.reason)
        stats.set_value(OUTCOME_STAT, outcome.line)
        stats.inc_value(WORKER_REASONS + outcome.reason)

    def judge(self, reason: str) -> Outcome:
        stats = self.crawler.stats
        assert stats is not None
        figures = stats.get_stats()
        refusal = figures.get(REFUSAL_STAT)
        return judge(
            figures,
            reason=_job_budget_reason(figures) if reason == FINISHED else reason,
            stored=self._job_stored(figures),
            spill_remaining=_int(figures.get("store/spill_remaining_at_close")),
            refusal=refusal if isinstance(refusal, str) else None,
        )

    def _job_stored(self, figures: dict[str, object]) -> int | None:
        """With the frontier: the items the worker's job has stored, by every worker (with
        the store pipeline, which counts ``items/stored``, its ledger's exact figure; else
        the items its workers passed to their feeds); None without (the crawl's own)."""
        if not self.services.redis_url:
            return None
        spider = self.crawler.spider
        job_id = getattr(spider, "job_id", None) or self.crawler.settings.get("JOB_ID")
        if spider is None or not job_id:
            return None
        try:
            server = self.services.sync_redis()
            if STORED in figures:
                job = stored_count(server, spider.name, str(job_id))
                own = _int(figures.get(STORED))
            else:
                job = JobStats(server, spider.name).value(str(job_id), SCRAPED)
                own = _int(figures.get(SCRAPED))
        except REDIS_ERRORS:
            return None  # Redis away at close: the worker's own count
        return max(job, own or 0)


def _job_budget_reason(figures: dict[str, object]) -> str:
    """``budget_<name>`` when the job's page or time budget ended it, else ``finished``: a
    frontier worker is closed by its idleness once the budget emptied the job's frontier
    (``core.frontier.budget``), but what ended the job is the budget, and its word says so."""
    for name in (PAGES, TIME):
        if figures.get(f"budget/reached/{name}"):
            return f"budget_{name}"
    return FINISHED


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
