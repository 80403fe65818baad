"""The frontier worker extension: ``FrontierWorker`` makes a crawl process a good citizen
of the shared Redis frontier: heartbeats in the worker registry, reclaim of dead workers'
leases and of its own orphaned ones (granted by a lease call whose reply was lost),
per-job stats pushed as deltas, fast pick-up of new work while idle, re-sending of work
kept locally during a Redis outage, and closing after real idleness (unless always-on).
It works with any spider. Disabled (NotConfigured) without the leasing scheduler.
"""

from __future__ import annotations

import logging
import time
from typing import cast

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import task

from core.figures.stats import DeltaTracker, JobStats
from core.frontier.workers import WorkerInfo, WorkerRegistry
from core.keys import REDIS_ERRORS
from crawlers.frontier.connect import always_on
from crawlers.frontier.scheduler import LeasingScheduler, frontier_enabled, is_leasing_scheduler
from crawlers.runtime.logs import not_configured

logger = logging.getLogger(__name__)


class FrontierWorker:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not frontier_enabled(settings):
            raise not_configured("FrontierWorker", "it needs the leasing scheduler (REDIS_URL)")
        self.crawler = crawler
        self.heartbeat_interval = settings.getfloat("FRONTIER_HEARTBEAT_INTERVAL")
        self.heartbeat_ttl = settings.getfloat("FRONTIER_HEARTBEAT_TTL")
        self.poll_interval = settings.getfloat("FRONTIER_IDLE_POLL_INTERVAL")
        self.stats_interval = settings.getfloat("FRONTIER_STATS_INTERVAL")
        self.idle_close_after = settings.getfloat("FRONTIER_IDLE_CLOSE_SECONDS")
        self.always_on = settings.getbool("FRONTIER_ALWAYS_ON")
        self._idle_since: float | None = None
        self._closing = False
        self._last_beat = 0.0
        self._last_stats = 0.0
        self._loop: task.LoopingCall | None = None
        self._deltas = DeltaTracker()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierWorker:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        scheduler = self.crawler.engine.scheduler if self.crawler.engine else None
        if not is_leasing_scheduler(scheduler):
            raise RuntimeError(f"FrontierWorker needs the leasing scheduler, got {scheduler!r}")
        # is_leasing_scheduler checked its class (Scrapy's isinstance is duck-typed).
        self.scheduler = scheduler = cast(LeasingScheduler, scheduler)
        self.spider = spider
        self.always_on = always_on(spider, self.always_on)
        self.frontier = scheduler.frontier  # one view of the partitions per worker
        server = self.frontier.server  # the scheduler's client: its open connected it
        self.registry = WorkerRegistry(server, spider.name, ttl=self.heartbeat_ttl)
        self.job_stats = JobStats(server, spider.name)
        self.info = WorkerInfo(
            worker_id=scheduler.worker_id,
            site=spider.name,
            job_id=scheduler.job_id,
            always_on=self.always_on,
        )
        self._loop = task.LoopingCall(self._tick)
        self._loop.start(self.poll_interval, now=True).addErrback(
            lambda failure: logger.error("frontier loop stopped: %s", failure.getTraceback())
        )

    def spider_idle(self, spider: Spider) -> None:
        """Keep the spider open until it has been idle for ``FRONTIER_IDLE_CLOSE_SECONDS``
        (forever when always-on); ``_close_when_idle`` closes it then.

        scrapy-redis' MAX_IDLE_TIME_BEFORE_CLOSE measures from import time, so a worker
        that was busy for longer than the limit closes at its first idle moment; this
        measures from the last request this worker leased.
        """
        now = time.time()
        if self._closing:
            return  # already closing (the poll tick saw the idleness first)
        try:
            if self.always_on or not self._idle_for_long(now):
                raise DontCloseSpider
        except REDIS_ERRORS as exc:
            # Cannot tell whether the frontier is empty: stay, ride out the outage.
            raise DontCloseSpider from exc
        self._log_closing(now)

    def _idle_for_long(self, now: float) -> bool:
        """Idle since the last lease for the limit, with the site's frontier empty: while
        any request is queued, or leased by another worker (its follow-ups would come
        here; a dead worker's leases are reclaimed into the queue), the worker stays."""
        last_activity = self.scheduler.last_activity
        if self._idle_since is None or self._idle_since < last_activity:
            self._idle_since = now
        if now - self._idle_since < self.idle_close_after:
            return False
        if self.frontier.queued() or self.frontier.leased():
            self._idle_since = now
            return False
        return True

    def _close_when_idle(self, now: float) -> None:
        """Close once idle long enough, checked every poll tick: the engine itself looks
        at idleness only on its 5 s heartbeat, which would keep every worker up to 5 s
        longer than FRONTIER_IDLE_CLOSE_SECONDS."""
        engine = self.crawler.engine
        if self.always_on or self._closing or engine is None:
            return
        if not engine.spider_is_idle():
            self._idle_since = None
            return
        if self._idle_for_long(now):
            self._log_closing(now)
            deferred_from_coro(engine.close_spider_async(reason="finished")).addErrback(
                lambda failure: logger.error("closing when idle failed: %s", failure.value)
            )

    def _log_closing(self, now: float) -> None:
        self._closing = True
        logger.info(
            "closing: idle for %.1fs (FRONTIER_IDLE_CLOSE_SECONDS=%.1f)",
            now - (self._idle_since or now),
            self.idle_close_after,
        )

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        try:
            self._push_stats(force=True)
            self.registry.unregister(self.info.worker_id)
        except REDIS_ERRORS:
            logger.error("Redis unreachable at close: final stats of this worker not pushed")

    # -- the loop ----------------------------------------------------------------------
    def _tick(self) -> None:
        """Every poll interval; never raises (a raising LoopingCall stops for good)."""
        try:
            scheduler = self.scheduler
            scheduler.flush_pending()
            now = time.time()
            if now - self._last_beat >= self.heartbeat_interval:
                self._heartbeat(scheduler, now)
            if now - self._last_stats >= self.stats_interval:
                self._push_stats()
            self._pick_up_work(scheduler)
            self._close_when_idle(now)
        except REDIS_ERRORS as exc:
            self.crawler.stats.inc_value("frontier/redis_errors")
            logger.warning("frontier loop: Redis unreachable (%s)", type(exc).__name__)
        except Exception:
            logger.exception("frontier loop error")

    def _heartbeat(self, scheduler: LeasingScheduler, now: float) -> None:
        engine = self.crawler.engine
        self.info.in_flight = scheduler.held_leases
        self.info.idle = not scheduler.held_leases and engine.spider_is_idle()
        self.info.last_activity = scheduler.last_activity
        self.registry.heartbeat(self.info)
        self._last_beat = now
        reclaimed = self.frontier.reclaim()
        if reclaimed:
            self.crawler.stats.inc_value("frontier/reclaimed_leases", reclaimed)
            logger.warning("reclaimed %d leases of dead workers", reclaimed)
        scheduler.release_orphans()

    def _push_stats(self, force: bool = False) -> None:
        job_id = self.scheduler.job_id
        snapshot = self.crawler.stats.get_stats()
        deltas = self._deltas.deltas(snapshot)
        if deltas or force:
            self.job_stats.add(job_id, deltas)
            self._deltas.commit(snapshot)
        self._last_stats = time.time()

    def _pick_up_work(self, scheduler: LeasingScheduler) -> None:
        """An idle engine polls its scheduler only every 5 s; hand it new work sooner."""
        engine = self.crawler.engine
        if engine.downloader.active or engine.needs_backout():
            return
        request = scheduler.lease_for_handoff()
        if request is not None:
            engine.crawl(request)
