"""The Scrapy side of the leased Redis frontier (``core.frontier.queue``), docs/frontier.md.

Installed when ``REDIS_URL`` is set: ``SCHEDULER = LeasingScheduler`` (a
``scrapy.core.scheduler.BaseScheduler``), ``SCHEDULER_QUEUE_CLASS = LeasedQueue``,
``DUPEFILTER_CLASS = JobDupeFilter``, the spider middleware ``LeaseAckMiddleware`` (the
outermost) and the ``crawlers.frontier.worker.FrontierWorker`` extension; from scrapy-redis
the Redis connection factory and the pickle serializer. A popped request carries its lease
id in ``meta``; the lease is acked when the scraper is done with its response or failure,
items included (``crawlers.frontier.acks``), replaced atomically when a retry/redirect of
it is queued, or ended by ``crawlers.frontier.fates`` whatever else dropped it. Pushes and
acks go in batches; while Redis is unreachable they are kept locally and re-sent. A worker
started while Redis is down waits in ``open`` (``crawlers.frontier.connect``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from itertools import islice
from typing import Any, Self, cast

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.settings import BaseSettings
from scrapy.utils.asyncio import call_later, run_in_thread
from scrapy.utils.conf import build_component_list
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred

from core.config import OperatorError
from core.frontier.queue import FrontierLayoutError, RedisFrontier
from core.keys import REDIS_ERRORS
from core.redis_client import Client
from crawlers.compat import check_private_api
from crawlers.frontier.acks import LEASE_META, LeaseAcks, unwrap_errback, wrap_errback
from crawlers.frontier.connect import (
    ConnectPolicy,
    always_on,
    redis_address,
    wait_for_redis,
)
from crawlers.frontier.fates import DropRecords, RequestFates
from crawlers.frontier.meta import HANDOFF_META, ITEM_RETRY_META, FrontierConfigError, new_worker_id
from crawlers.frontier.queue import PUSH_BATCH, SEEN_LOCAL_MAX, JobDupeFilter, LeasedQueue
from crawlers.runtime.jobs import JOB_META, new_job_id
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)


# A request to queue, the job whose seen-set it is checked in (None: dont_filter) and
# its fingerprint (the raw digest: it also picks the request's partition).
_Queued = tuple[Request, str | None, bytes]


def frontier_enabled(settings: BaseSettings) -> bool:
    """Whether the crawl runs on the leasing scheduler (set up by the add-on)."""
    scheduler = settings.get("SCHEDULER")
    if not scheduler:
        return False
    return is_leasing_scheduler(load_object(scheduler))


def is_leasing_scheduler(obj: object) -> bool:
    """Whether ``obj`` is the leasing scheduler (class or instance).

    Not ``isinstance``/``issubclass``: Scrapy's ``BaseSchedulerMeta`` makes them
    duck-typed, true for any class with the scheduler methods.
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return LeasingScheduler in cls.__mro__


class LeasingScheduler(BaseScheduler):
    """The frontier's scheduler: lease -> process -> ack around every request.

    It owns this worker's id (its leases and heartbeat) and the job id of requests that
    carry none: the spider's ``job_id``, else the ``JOB_ID`` setting, else a new one.
    """

    def __init__(self, crawler: Crawler, server: Client | None) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        # None: a Redis Cluster client, built in ``open`` once a node answers.
        self.server = server
        self.worker_id = new_worker_id()
        self.lease_batch = settings.getint("FRONTIER_LEASE_BATCH")
        self.partitions = settings.getint("FRONTIER_PARTITIONS")
        self.ack_batch = settings.getint("FRONTIER_ACK_BATCH")
        self.queue_cls: type[LeasedQueue] = load_object(settings["SCHEDULER_QUEUE_CLASS"])
        dupefilter_cls = load_object(settings["DUPEFILTER_CLASS"])
        for cls, base in ((self.queue_cls, LeasedQueue), (dupefilter_cls, JobDupeFilter)):
            if not issubclass(cls, base):
                raise FrontierConfigError(
                    f"the leasing scheduler needs a {base.__name__}, got {cls}"
                )
        spider_mws = build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES"))
        if not spider_mws or load_object(spider_mws[0]) is not LeaseAckMiddleware:
            # Without it no response's lease would ever be acked: the job would not drain.
            raise FrontierConfigError(
                "the leasing scheduler needs crawlers.frontier.scheduler.LeaseAckMiddleware as "
                "the outermost spider middleware (lowest SPIDER_MIDDLEWARES order), "
                f"got {spider_mws}"
            )
        self.df: JobDupeFilter = build_from_crawler(dupefilter_cls, crawler)
        # Every lease ends, whatever drops its request (crawlers.frontier.fates); a drop
        # goes to the job's ledger before its ack.
        self.drops = DropRecords(crawler)
        self.fates = RequestFates(
            crawler, wrap=lambda request: wrap_errback(request, self.acks), record=self.drops.add
        )
        self.acks = LeaseAcks(
            self.ack_lease, call_later, on_failed=self.recrawl_failed, on_failure=self.fates.failed
        )
        self.item_retry_times = settings.getint("FRONTIER_ITEM_RETRY_TIMES")
        self.in_flight: set[str] = set()
        self.last_activity = time.time()
        # Requests to queue, sent in batches (``flush_pushes``): new ones, and those kept
        # while Redis was unreachable (re-sent first by ``flush_pending``).
        self._pending: deque[_Queued] = deque()
        self._unsent: deque[_Queued] = deque()
        self._flush_scheduled = False
        self._acks: set[str] = set()
        self._handoff: deque[Request] = deque()
        # Fingerprints this worker knows to be in a job's seen-set (pagination links
        # repeat on every listing page; each repeat would otherwise cost a round trip).
        self._seen_local: dict[str, set[bytes]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        check_private_api()
        services = CrawlServices.of(crawler)
        # A Redis Cluster's client is built by the wait in ``open``, once a node answers.
        scheduler = cls(crawler, None if services.cluster else services.sync_redis())
        for signal in (signals.item_scraped, signals.item_dropped):
            crawler.signals.connect(scheduler.acks.item_done, signal=signal)
        crawler.signals.connect(scheduler.acks.item_failed, signal=signals.item_error)
        crawler.signals.connect(scheduler.acks.spider_error, signal=signals.spider_error)
        return scheduler

    def open(self, spider: Spider) -> Deferred[None]:
        """Set up, then wait for Redis (``crawlers.frontier.connect``): the engine awaits this
        before the pipelines, the worker extension or anything else touches Redis."""
        settings = self.crawler.settings
        self.spider = spider
        self.job_id = str(
            getattr(spider, "job_id", None) or settings.get("JOB_ID") or new_job_id(spider.name)
        )
        self.df.open()
        policy = ConnectPolicy.from_settings(
            settings, always_on=always_on(spider, settings.getbool("FRONTIER_ALWAYS_ON"))
        )
        if self.server is not None:  # one Redis: its client connects on first use
            self._use(self.server)
        # A Redis Cluster: the crawl's client is built by the wait, once a node answers.
        return deferred_from_coro(
            self._connect(
                CrawlServices.of(self.crawler).sync_redis,
                redis_address(settings["REDIS_URL"]),
                policy,
            )
        )

    async def _connect(
        self, connect: Callable[[], Client], address: str, policy: ConnectPolicy
    ) -> None:
        server = await wait_for_redis(connect, address, policy)
        if self.server is None:
            self._use(server)
        try:
            await run_in_thread(self.frontier.join, self.partitions)
        except FrontierLayoutError as exc:
            logger.error("%s", exc.message)
            raise OperatorError(exc.message, reported=True) from None

    def _use(self, server: Client) -> None:
        self.server = server
        self.frontier = RedisFrontier(server, self.spider.name)
        self.queue = self.queue_cls(
            server,
            self.spider,
            worker_id=self.worker_id,
            batch=self.lease_batch,
            frontier=self.frontier,
        )

    def close(self, reason: str) -> None:
        if self.server is None:  # never connected (the cluster stayed unreachable)
            self.df.close(reason)
            return
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
        self.df.close(reason)

    # -- scheduler interface -----------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        """Queue ``request`` unless its job has seen it: checked and pushed in Redis in one
        atomic step, batched with the other requests queued in the same reactor turn (one
        round trip per batch, ``flush_pushes``). A request Redis finds seen is counted
        and logged as a duplicate, and ``request_dropped`` is sent, when its batch is sent.
        """
        if request.meta.pop(HANDOFF_META, False):
            self._handoff.append(request)
            return True
        self.fates.enqueued(request)
        request.meta.setdefault(JOB_META, self.job_id)
        seen_job = None
        fingerprint = self.df.digest(request)
        if not request.dont_filter:
            seen_job = self.df.seen_job(request)
            local = self._seen_local.setdefault(seen_job, set())
            if fingerprint in local and LEASE_META not in request.meta:
                # Seen-sets only grow within a job: a local hit needs no round trip.
                self._filtered(request)
                return False
            if len(local) >= SEEN_LOCAL_MAX:
                local.clear()
            local.add(fingerprint)
        self._pending.append((request, seen_job, fingerprint))
        if len(self._pending) >= PUSH_BATCH:
            self._flush_pushes_now()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            call_later(0, self._flush_pushes_now)
        return True

    def _flush_pushes_now(self) -> None:
        self._flush_scheduled = False
        try:
            self.flush_pushes()
        except REDIS_ERRORS as exc:
            self._warn_unavailable(exc)

    def flush_pushes(self) -> None:
        """Send the pending pushes, ``PUSH_BATCH`` per round trip; raises REDIS_ERRORS.

        Pushes that could not be sent are kept (``_unsent``) and re-sent first by
        ``flush_pending``: whether they reached Redis is unknown, and the seen-set check
        keeps a re-sent one from being queued twice.
        """
        while self._unsent:
            self._send(self._unsent)
        try:
            while self._pending:
                self._send(self._pending)
        except REDIS_ERRORS:
            self.stats.inc_value("frontier/redis_unavailable_pushes", len(self._pending))
            self._unsent.extend(self._pending)
            self._pending.clear()
            raise

    def _send(self, queue: deque[_Queued]) -> None:
        batch = list(islice(queue, PUSH_BATCH))
        entries = [self.queue.entry(*queued) for queued in batch]
        results = self.queue.push_many(entries)
        for _ in batch:
            queue.popleft()
        for (request, _, _), entry, queued in zip(batch, entries, results, strict=True):
            if entry.replaces_lease is not None:
                # Released in the same step (a retry/redirect, or one to a page already seen).
                self.in_flight.discard(entry.replaces_lease)
            if queued:
                self.stats.inc_value("scheduler/enqueued/redis")
            else:
                self._filtered(request)
                self.crawler.signals.send_catch_log(
                    signals.request_dropped, request=request, spider=self.spider
                )

    def _filtered(self, request: Request) -> None:
        self.df.log(request, self.spider)
        self.stats.inc_value("dupefilter/filtered")

    def next_request(self) -> Request | None:
        if self._handoff:
            return self._handoff.popleft()
        try:
            if not self.queue.buffer and (self._pending or self._unsent):
                self.flush_pushes()  # what this worker just found may be next
            request = self.queue.pop()
        except REDIS_ERRORS as exc:
            self._warn_unavailable(exc)
            return None
        if request is None:
            return None
        self.in_flight.add(request.meta[LEASE_META])
        # Download failures reach the errback without passing any spider middleware.
        self.fates.handed_out(request)
        self.last_activity = time.time()
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def has_pending_requests(self) -> bool:
        held = self._handoff or self._pending or self._unsent or self._acks or self.drops
        if held or self.queue.buffer:
            return True
        try:
            return len(self.queue) > 0
        except REDIS_ERRORS:
            return True

    @property
    def held_leases(self) -> int:
        """Leases this worker holds in Redis: handed out, buffered, or awaiting their ack."""
        return len(self.in_flight) + len(self.queue.buffer) + len(self._acks)

    # -- leases ----------------------------------------------------------------------
    def release_orphans(self) -> int:
        """Re-queue leases Redis granted this worker by a lease call whose reply never
        arrived (the connection broke or timed out mid-call): held in Redis, unknown here,
        they would never be acked, and the site's frontier would never drain. Raises
        REDIS_ERRORS.

        Exact: lease calls run on this thread only, so between two of them the leases
        this worker knows are all it legitimately holds.
        """
        known = self.in_flight | self._acks
        known.update(request.meta[LEASE_META] for request in self.queue.buffer)
        orphans = self.frontier.leases_of(self.worker_id) - known
        if not orphans:
            return 0
        released = self.frontier.release(self.worker_id, *sorted(orphans))
        if released:
            self.stats.inc_value("frontier/orphan_leases_released", released)
            logger.warning(
                "re-queued %d leases Redis granted this worker by calls whose reply was "
                "lost (the connection broke mid-call)",
                released,
            )
        return released

    def lease_for_handoff(self) -> Request | None:
        """Lease one request for this worker's own engine (see FrontierWorker's poll).

        None while an earlier hand-off is still waiting for the engine to take it.
        """
        if self._handoff:
            return None
        request = self.next_request()
        if request is not None:
            request.meta[HANDOFF_META] = True
        return request

    def holds(self, lease_id: str) -> bool:
        """Whether the lease is handed out and not acked yet (nor replaced)."""
        return lease_id in self.in_flight

    def ack_lease(self, lease_id: str) -> None:
        """Mark the lease done; acks go to Redis in batches (``flush_pending``).

        A delayed ack only delays: if the worker dies first, the request is crawled again
        (at-least-once), never lost.
        """
        if lease_id in self.in_flight:
            self.in_flight.discard(lease_id)
            self._acks.add(lease_id)
            if len(self._acks) >= self.ack_batch:
                self.flush_pending()

    def recrawl_failed(self, request: Request) -> None:
        """An item of ``request`` failed in the pipelines (not durable): queue the request
        again in place of its lease, at most FRONTIER_ITEM_RETRY_TIMES times, then ack it
        with the failure counted and logged (the items stay counted in item_error)."""
        lease_id = request.meta.get(LEASE_META)
        attempts = int(request.meta.get(ITEM_RETRY_META, 0))
        if lease_id is None or lease_id not in self.in_flight:
            return
        if attempts >= self.item_retry_times:
            self.stats.inc_value("frontier/item_error_gave_up")
            logger.error(
                "items of %s failed in the pipelines %d times: giving up on the request",
                request.url,
                attempts + 1,
            )
            self.ack_lease(lease_id)
            return
        retry = request.replace(dont_filter=True)
        unwrap_errback(retry)
        retry.meta[ITEM_RETRY_META] = attempts + 1
        retry.meta.pop(HANDOFF_META, None)
        self.stats.inc_value("frontier/item_error_recrawled")
        logger.warning("items of %s failed in the pipelines: crawling it again", request.url)
        self.enqueue_request(retry)

    def flush_pending(self) -> bool:
        """Send batched acks and re-send work kept while Redis was down; True when done."""
        try:
            # Pushes first: a lease is acked only after the requests its response found.
            self.flush_pushes()
            self.drops.flush(self.frontier)  # recorded before their leases' acks
            if self._acks:
                acks = list(self._acks)
                self.frontier.ack(*acks)
                self._acks.difference_update(acks)
                self.stats.inc_value("frontier/acked", len(acks))
        except REDIS_ERRORS as exc:
            self._warn_unavailable(exc)
            return False
        return True

    def _warn_unavailable(self, exc: Exception) -> None:
        self.stats.inc_value("frontier/redis_errors")
        logger.warning("Redis frontier unreachable (%s); keeping work locally", type(exc).__name__)


class LeaseAckMiddleware:
    """Tells the leasing scheduler when a response's output is done (``crawlers.frontier.acks``).

    It must be the outermost spider middleware (the lowest order; the scheduler checks):
    its ``process_spider_input`` then runs first for every response, and its
    ``process_spider_output`` sees exactly what reaches the scraper, after every other
    middleware added, dropped or recovered output. Off without the leasing scheduler.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not frontier_enabled(crawler.settings):
            raise not_configured("LeaseAckMiddleware", "it serves the leasing scheduler only")
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def acks(self) -> LeaseAcks:
        scheduler = self.crawler.engine.scheduler if self.crawler.engine else None
        if not is_leasing_scheduler(scheduler):
            raise FrontierConfigError(
                f"LeaseAckMiddleware needs the leasing scheduler: {scheduler}"
            )
        # is_leasing_scheduler checked its class (Scrapy's isinstance is duck-typed).
        return cast(LeasingScheduler, scheduler).acks

    def process_spider_input(self, response: Response) -> None:
        self.acks.response_entered(response)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in self.acks.track_output(response, result):
            yield output
