"""scrapy-redis glue for the leased frontier (``core.frontier``).

Wired through scrapy-redis' own extension points when ``REDIS_URL`` is set:
``SCHEDULER = LeasingScheduler``, ``SCHEDULER_QUEUE_CLASS = LeasedQueue``,
``DUPEFILTER_CLASS = JobDupeFilter``.

A request popped from Redis carries its lease id in ``meta``. The lease is acked when
the scraper has finished with the request's response or failure (callbacks and item
pipelines included), or replaced atomically when a retry/redirect of it is queued.
Acks are sent in batches (every ``FRONTIER_ACK_BATCH`` acks or poll tick) and new
requests are checked against the job's seen-set and queued in one round trip. Redis
being briefly unreachable loses nothing: pushes and acks that fail are kept locally and
re-sent, and the worker does not close while it still holds them.
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

from core.frontier import Lease, RedisFrontier
from core.keys import REDIS_ERRORS, SiteKeys

logger = logging.getLogger(__name__)

LEASE_META = "frontier_lease"
JOB_META = "job_id"
# Set on a request that this worker already leased and hands to its own engine.
HANDOFF_META = "frontier_handoff"


# Seen-sets of finished jobs are not needed for long; the jobs index keeps the history.
SEEN_TTL_SECONDS = 7 * 24 * 3600
SEEN_LOCAL_MAX = 200_000


def worker_id_of(spider: Spider) -> str:
    worker_id = getattr(spider, "worker_id", None)
    if not worker_id:
        raise RuntimeError(f"spider {spider.name!r} has no worker_id: derive it from SiteSpider")
    return str(worker_id)


class LeasedQueue(RedisQueueBase):
    """scrapy-redis queue class whose pop leases instead of deleting.

    Leases are taken in small batches (``FRONTIER_LEASE_BATCH``) into a local buffer: one
    round trip per batch instead of per request. Buffered entries are leased, so they are
    as safe as any in-flight request and go back to the queue if this worker dies.
    """

    def __init__(self, server: redis.Redis, spider: Spider, key: str, serializer: Any = None):
        super().__init__(server, spider, key, serializer)
        self.frontier = RedisFrontier(server, spider.name)
        self.worker_id = worker_id_of(spider)
        self.batch = max(1, spider.crawler.settings.getint("FRONTIER_LEASE_BATCH", 4))
        self.buffer: deque[Request] = deque()

    def __len__(self) -> int:
        return self.frontier.queued() + len(self.buffer)

    def _encode_without_lease(self, request: Request) -> tuple[bytes, str | None]:
        lease_id = request.meta.pop(LEASE_META, None)
        try:
            return self._encode_request(request), lease_id
        finally:
            if lease_id is not None:
                request.meta[LEASE_META] = lease_id

    def push(self, request: Request) -> None:
        data, lease_id = self._encode_without_lease(request)
        self.frontier.push(data, request.priority, replaces_lease=lease_id)

    def push_unseen(self, request: Request, seen_key: str, fingerprint: str) -> bool:
        """Queue ``request`` unless its fingerprint is in ``seen_key``: one atomic step."""
        data, lease_id = self._encode_without_lease(request)
        return self.frontier.push(
            data,
            request.priority,
            replaces_lease=lease_id,
            seen_key=seen_key,
            fingerprint=fingerprint,
            seen_ttl=SEEN_TTL_SECONDS,
        )

    def pop(self, timeout: int = 0) -> Request | None:
        while not self.buffer:
            leases = self.frontier.lease(self.worker_id, self.batch) or self.frontier.lease_start(
                self.worker_id, 1
            )
            if not leases:
                return None
            self.buffer.extend(
                request for lease in leases if (request := self._request_from_lease(lease))
            )
        return self.buffer.popleft()

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
    workers. Requests without a job id fall back to the spider's current job. The
    leasing scheduler checks and queues in one step (``LeasedQueue.push_unseen``) with
    ``seen_key`` and ``request_fingerprint``; ``request_seen`` serves everyone else.
    """

    spider: Spider | None = None

    @classmethod
    def from_spider(cls, spider: Spider) -> JobDupeFilter:
        instance = cls.from_settings(spider.crawler.settings)
        instance.key = SiteKeys(spider.name).seen("unassigned")
        instance.spider = spider
        return instance

    def seen_key(self, request: Request) -> str:
        job_id = request.meta.get(JOB_META) or getattr(self.spider, "job_id", None) or "unassigned"
        return SiteKeys(self.spider.name if self.spider else "default").seen(str(job_id))

    def request_seen(self, request: Request) -> bool:
        key = self.seen_key(request)
        with self.server.pipeline(transaction=True) as pipe:
            pipe.sadd(key, self.request_fingerprint(request))
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
        self._acks: set[str] = set()
        self.ack_batch = self.crawler.settings.getint("FRONTIER_ACK_BATCH", 32)
        self._handoff: deque[Request] = deque()
        # Fingerprints this worker knows to be in a job's seen-set (pagination links
        # repeat on every listing page; each repeat would otherwise cost a round trip).
        self._seen_local: dict[str, set[str]] = {}
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
        try:
            queued = self._queue_request(request)
        except REDIS_ERRORS:
            # Cannot tell whether it is new: keep it; it is checked again when re-sent.
            self._keep_unsent(request)
            return True
        if not queued:
            self.df.log(request, self.spider)
            self.stats.inc_value("dupefilter/filtered")
        return queued

    def _queue_request(self, request: Request) -> bool:
        """Dedup check + push + release of the lease it continues, in one round trip."""
        lease_id = request.meta.get(LEASE_META)
        if request.dont_filter:
            self.queue.push(request)
            queued = True
        else:
            fingerprint = self.df.request_fingerprint(request)
            seen_key = self.df.seen_key(request)
            local = self._seen_local.setdefault(seen_key, set())
            if fingerprint in local and lease_id is None:
                # Seen-sets only grow within a job: a local hit needs no round trip.
                return False
            queued = self.queue.push_unseen(request, seen_key, fingerprint)
            if len(local) >= SEEN_LOCAL_MAX:
                local.clear()
            local.add(fingerprint)
        if lease_id is not None:
            # Released in the same step (a retry/redirect, or one to a page already seen).
            self.in_flight.discard(lease_id)
        if queued:
            self.stats.inc_value("scheduler/enqueued/redis")
        return queued

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
        if self._handoff or self._unsent or self._acks or self.queue.buffer:
            return True
        try:
            return len(self.queue) > 0
        except REDIS_ERRORS:
            return True

    @property
    def held_leases(self) -> int:
        """Leases this worker holds in Redis: handed out, buffered, or awaiting their ack."""
        return len(self.in_flight) + len(self.queue.buffer) + len(self._acks)

    def close(self, reason: str) -> None:
        self.flush_pending()
        # Leases still held (a stop mid-crawl) go back to the queue for other workers.
        try:
            released = self.frontier.reclaim(release_worker=self.worker_id)
        except REDIS_ERRORS:
            logger.error("Redis unreachable at close: %d leases left to reclaim", self.held_leases)
        else:
            if released:
                logger.info("released %d held leases back to the frontier", released)
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
        """Mark the request's lease done; acks go to Redis in batches (``flush_pending``).

        A delayed ack only delays: if the worker dies first, the request is crawled again
        (at-least-once), never lost.
        """
        lease_id = request.meta.get(LEASE_META)
        if lease_id is not None and lease_id in self.in_flight:
            self.in_flight.discard(lease_id)
            self._acks.add(lease_id)
            if len(self._acks) >= self.ack_batch:
                self.flush_pending()

    def flush_pending(self) -> bool:
        """Send batched acks and re-send work kept while Redis was down; True when done."""
        try:
            while self._unsent:
                self._queue_request(self._unsent[0])
                self._unsent.popleft()
            if self._acks:
                acks = list(self._acks)
                self.frontier.ack(*acks)
                self._acks.difference_update(acks)
                self.stats.inc_value("frontier/acked", len(acks))
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
