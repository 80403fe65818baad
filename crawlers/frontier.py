"""scrapy-redis glue for the leased frontier (``core.frontier``).

Wired through scrapy-redis' own extension points when ``REDIS_URL`` is set:
``SCHEDULER = LeasingScheduler``, ``SCHEDULER_QUEUE_CLASS = LeasedQueue``,
``DUPEFILTER_CLASS = JobDupeFilter``.

A request popped from Redis carries its lease id in ``meta``. The lease is acked when
the scraper has finished with the request's response or failure (callbacks and item
pipelines included), or replaced atomically when a retry/redirect of it is queued.
Redis being briefly unreachable loses nothing: pushes and acks that fail are kept
locally and re-sent, and the worker does not close while it still holds them.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import redis
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.utils.misc import load_object
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import Base as RedisQueueBase
from scrapy_redis.scheduler import Scheduler as RedisScheduler
from twisted.internet.defer import Deferred

from core.frontier import FrontierKeys, Lease, RedisFrontier

logger = logging.getLogger(__name__)

LEASE_META = "frontier_lease"
JOB_META = "job_id"
# Set on a request that this worker already leased and hands to its own engine.
HANDOFF_META = "frontier_handoff"

REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)

# Seen-sets of finished jobs are not needed for long; the jobs index keeps the history.
SEEN_TTL_SECONDS = 7 * 24 * 3600


def worker_id_of(spider: Spider) -> str:
    worker_id = getattr(spider, "worker_id", None)
    if not worker_id:
        raise RuntimeError(f"spider {spider.name!r} has no worker_id: derive it from SiteSpider")
    return str(worker_id)


class LeasedQueue(RedisQueueBase):
    """scrapy-redis queue class whose pop leases instead of deleting."""

    def __init__(self, server: redis.Redis, spider: Spider, key: str, serializer: Any = None):
        super().__init__(server, spider, key, serializer)
        self.frontier = RedisFrontier(server, spider.name)
        self.worker_id = worker_id_of(spider)

    def __len__(self) -> int:
        return self.frontier.queued()

    def push(self, request: Request) -> None:
        lease_id = request.meta.pop(LEASE_META, None)
        try:
            data = self._encode_request(request)
        finally:
            if lease_id is not None:
                request.meta[LEASE_META] = lease_id
        self.frontier.push(data, request.priority, replaces_lease=lease_id)

    def pop(self, timeout: int = 0) -> Request | None:
        while True:
            leases = self.frontier.lease(self.worker_id, 1) or self.frontier.lease_start(
                self.worker_id, 1
            )
            if not leases:
                return None
            request = self._request_from_lease(leases[0])
            if request is not None:
                return request

    def _request_from_lease(self, lease: Lease) -> Request | None:
        try:
            if lease.is_start:
                request = self.spider.make_request_from_data(lease.data)
            else:
                request = self._decode_request(lease.data)
        except Exception:
            # A corrupt entry would be re-leased forever; drop it loudly and counted.
            logger.exception("dropping undecodable frontier entry (lease %s)", lease.lease_id)
            self.spider.crawler.stats.inc_value("frontier/undecodable_entries")
            self.frontier.ack(lease.lease_id)
            return None
        if not isinstance(request, Request):
            logger.error("start entry made no request (lease %s): %r", lease.lease_id, lease.data)
            self.spider.crawler.stats.inc_value("frontier/undecodable_entries")
            self.frontier.ack(lease.lease_id)
            return None
        request.meta[LEASE_META] = lease.lease_id
        return request


class JobDupeFilter(RFPDupeFilter):
    """scrapy-redis' dupefilter with one seen-set per job (``<site>:job:<job>:seen``).

    A new job recrawls the site; within a job, every URL is fetched once across all
    workers. Requests without a job id fall back to the spider's current job.
    """

    spider: Spider | None = None

    @classmethod
    def from_spider(cls, spider: Spider) -> JobDupeFilter:
        instance = cls.from_settings(spider.crawler.settings)
        instance.key = FrontierKeys(spider.name).seen("unassigned")
        instance.spider = spider
        return instance

    def request_seen(self, request: Request) -> bool:
        job_id = request.meta.get(JOB_META) or getattr(self.spider, "job_id", None) or "unassigned"
        key = FrontierKeys(self.spider.name if self.spider else "default").seen(str(job_id))
        fingerprint = self.request_fingerprint(request)
        with self.server.pipeline(transaction=True) as pipe:
            pipe.sadd(key, fingerprint)
            pipe.expire(key, SEEN_TTL_SECONDS)
            added, _ = pipe.execute()
        return added == 0

    def close(self, reason: str = "") -> None:
        """Keep the seen-set: it belongs to the job, not to this worker (base deletes it)."""


class LeasingScheduler(RedisScheduler):
    """scrapy-redis' scheduler with lease -> ack around every request."""

    crawler: Crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LeasingScheduler:
        instance = super().from_crawler(crawler)
        instance.crawler = crawler
        return instance

    def open(self, spider: Spider) -> None:
        # scrapy-redis' open() without its flush_on_start and deprecated spider.log().
        self.spider = spider
        self.queue = load_object(self.queue_cls)(
            server=self.server,
            spider=spider,
            key=self.queue_key % {"spider": spider.name},
            serializer=self.serializer,
        )
        if not self.df:
            self.df = load_object(self.dupefilter_cls).from_spider(spider)
        self.frontier = RedisFrontier(self.server, spider.name)
        self.worker_id = worker_id_of(spider)
        self.in_flight: set[str] = set()
        self.last_activity = time.time()
        # Work kept locally while Redis is unreachable; re-sent by ``flush_pending``.
        self._unsent: deque[Request] = deque()
        self._unacked: set[str] = set()
        self._handoff: deque[Request] = deque()
        self._hook_scraper()

    def _hook_scraper(self) -> None:
        """Ack a request's lease once the scraper is done with its response or failure.

        Scrapy has no signal for "this response's callbacks and items are finished";
        ``Scraper.enqueue_scrape`` returns a Deferred that fires exactly then, so we
        chain the ack onto it.
        """
        scraper = self.crawler.engine.scraper
        original = scraper.enqueue_scrape

        def enqueue_scrape(result: Any, request: Request) -> Deferred[Any]:
            deferred = original(result, request)
            deferred.addBoth(self._ack_passthrough, request)
            return deferred

        scraper.enqueue_scrape = enqueue_scrape  # type: ignore[method-assign]

    def _ack_passthrough(self, result: Any, request: Request) -> Any:
        self.ack(request)
        return result

    # -- scheduler interface -----------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        if request.meta.pop(HANDOFF_META, False):
            self._handoff.append(request)
            return True
        lease_id = request.meta.get(LEASE_META)
        try:
            seen = not request.dont_filter and self.df.request_seen(request)
        except REDIS_ERRORS:
            # Cannot tell: keep it; the dupefilter is asked again when it is re-sent.
            self._keep_unsent(request)
            return True
        if seen:
            self.df.log(request, self.spider)
            if lease_id is not None:
                self._ack_lease(lease_id)  # e.g. a redirect to a page already crawled
            return False
        try:
            self.queue.push(request)
        except REDIS_ERRORS:
            self._keep_unsent(request)
            return True
        if lease_id is not None:
            self.in_flight.discard(lease_id)
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def next_request(self) -> Request | None:
        if self._handoff:
            return self._handoff.popleft()
        try:
            request = self.queue.pop()
        except REDIS_ERRORS as exc:
            self._warn_unavailable(exc)
            return None
        if request is None:
            return None
        self.in_flight.add(request.meta[LEASE_META])
        self.last_activity = time.time()
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def has_pending_requests(self) -> bool:
        if self._handoff or self._unsent or self._unacked:
            return True
        try:
            return len(self.queue) > 0
        except REDIS_ERRORS:
            return True

    def close(self, reason: str) -> None:
        self.flush_pending()
        # Leases still held (a stop mid-crawl) go back to the queue for other workers.
        try:
            released = self.frontier.reclaim(release_worker=self.worker_id)
        except REDIS_ERRORS:
            logger.error(
                "Redis unreachable at close: %d leases left to reclaim", len(self.in_flight)
            )
        else:
            if released:
                logger.info("released %d in-flight leases back to the frontier", released)
        if self._unsent:
            logger.error(
                "closing with %d requests that could not be queued (Redis unreachable)",
                len(self._unsent),
            )
        super().close(reason)

    # -- leases ----------------------------------------------------------------------
    def lease_for_handoff(self) -> Request | None:
        """Lease one request for this worker's own engine (see FrontierWorker's poll)."""
        request = self.next_request()
        if request is not None:
            request.meta[HANDOFF_META] = True
        return request

    def ack(self, request: Request) -> None:
        lease_id = request.meta.get(LEASE_META)
        if lease_id is not None and lease_id in self.in_flight:
            self._ack_lease(lease_id)

    def _ack_lease(self, lease_id: str) -> None:
        self.in_flight.discard(lease_id)
        try:
            self.frontier.ack(lease_id)
        except REDIS_ERRORS as exc:
            self._warn_unavailable(exc)
            self._unacked.add(lease_id)
        else:
            self.stats.inc_value("frontier/acked")

    def flush_pending(self) -> bool:
        """Re-send pushes and acks kept while Redis was down; True when none remain."""
        try:
            while self._unsent:
                request = self._unsent[0]
                lease_id = request.meta.get(LEASE_META)
                if request.dont_filter or not self.df.request_seen(request):
                    self.queue.push(request)
                elif lease_id is not None:
                    self.frontier.ack(lease_id)
                if lease_id is not None:
                    self.in_flight.discard(lease_id)
                self._unsent.popleft()
            if self._unacked:
                self.frontier.ack(*self._unacked)
                self._unacked.clear()
        except REDIS_ERRORS as exc:
            self._warn_unavailable(exc)
            return False
        return True

    def _keep_unsent(self, request: Request) -> None:
        self._unsent.append(request)
        self.stats.inc_value("frontier/redis_unavailable_pushes")

    def _warn_unavailable(self, exc: Exception) -> None:
        self.stats.inc_value("frontier/redis_errors")
        logger.warning("Redis frontier unreachable (%s); keeping work locally", type(exc).__name__)
