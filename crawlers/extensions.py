"""Scrapy extensions of the platform.

``FrontierWorker`` makes a crawl process a good citizen of the shared Redis frontier:
heartbeats in the worker registry, reclaim of dead workers' leases, per-job stats
pushed as deltas, fast pick-up of new work while idle, and re-sending of work kept
locally during a Redis outage. Disabled (NotConfigured) without the leasing scheduler.
"""

from __future__ import annotations

import logging
import time

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from core.frontier import RedisFrontier
from core.jobstats import DeltaTracker, JobStats
from core.workers import WorkerInfo, WorkerRegistry
from crawlers.frontier import REDIS_ERRORS, LeasingScheduler, worker_id_of

logger = logging.getLogger(__name__)


class FrontierWorker:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        scheduler_path = settings.get("SCHEDULER") or ""
        if not scheduler_path.endswith("LeasingScheduler"):
            raise NotConfigured("FrontierWorker needs the leasing scheduler (REDIS_URL unset?)")
        self.crawler = crawler
        self.heartbeat_interval = settings.getfloat("FRONTIER_HEARTBEAT_INTERVAL", 2.0)
        self.heartbeat_ttl = settings.getfloat("FRONTIER_HEARTBEAT_TTL", 15.0)
        self.poll_interval = settings.getfloat("FRONTIER_IDLE_POLL_INTERVAL", 0.2)
        self.stats_interval = settings.getfloat("FRONTIER_STATS_INTERVAL", 1.0)
        self._last_beat = 0.0
        self._last_stats = 0.0
        self._loop: task.LoopingCall | None = None
        self._deltas = DeltaTracker()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierWorker:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    @property
    def scheduler(self) -> LeasingScheduler:
        slot = self.crawler.engine._slot  # the engine exposes its scheduler only here
        assert slot is not None
        return slot.scheduler  # type: ignore[return-value]

    def spider_opened(self, spider: Spider) -> None:
        self.spider = spider
        server = self.scheduler.server
        self.registry = WorkerRegistry(server, spider.name, ttl=self.heartbeat_ttl)
        self.frontier = RedisFrontier(server, spider.name)
        self.job_stats = JobStats(server, spider.name)
        self.info = WorkerInfo(
            worker_id=worker_id_of(spider),
            site=spider.name,
            job_id=getattr(spider, "job_id", None),
            always_on=bool(getattr(spider, "always_on", False)),
        )
        self._loop = task.LoopingCall(self._tick)
        self._loop.start(self.poll_interval, now=True).addErrback(
            lambda failure: logger.error("frontier loop stopped: %s", failure.getTraceback())
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
        self.info.job_id = getattr(self.spider, "job_id", None)
        self.registry.heartbeat(self.info)
        self._last_beat = now
        reclaimed = self.frontier.reclaim()
        if reclaimed:
            self.crawler.stats.inc_value("frontier/reclaimed_leases", reclaimed)
            logger.warning("reclaimed %d leases of dead workers", reclaimed)

    def _push_stats(self, force: bool = False) -> None:
        job_id = getattr(self.spider, "job_id", None)
        if not job_id:
            return
        snapshot = self.crawler.stats.get_stats()
        deltas = self._deltas.deltas(snapshot)
        if deltas or force:
            self.job_stats.add(job_id, deltas)
            self._deltas.commit(snapshot)
        self._last_stats = time.time()

    def _pick_up_work(self, scheduler: LeasingScheduler) -> None:
        """An idle engine polls its scheduler only every 5 s; hand it new work sooner."""
        engine = self.crawler.engine
        if engine.downloader.active or engine.needs_backout() or scheduler._handoff:
            return
        request = scheduler.lease_for_handoff()
        if request is not None:
            engine.crawl(request)
