"""The frontier's queue and dupefilter: ``SCHEDULER_QUEUE_CLASS = LeasedQueue`` (a pop
leases instead of deleting) and ``DUPEFILTER_CLASS = JobDupeFilter`` (one seen-set per job)."""

from __future__ import annotations

import json
import logging
from collections import deque
from typing import Any, Self

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.request import request_from_dict

from core.frontier.queue import SEEN_TTL_SECONDS, Lease, Push, RedisFrontier
from core.redis_client import Client
from crawlers.frontier import codec
from crawlers.frontier.acks import LEASE_META, unwrap_errback
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

# Seen-sets of finished jobs are not needed for long (SEEN_TTL_SECONDS, core.frontier.queue);
# the jobs index keeps the history.
SEEN_LOCAL_MAX = 200_000
# Requests queued per round trip: those found in one reactor turn go together.
PUSH_BATCH = 64


def request_from_entry(spider: Spider, entry: dict[str, Any]) -> Request:
    """A producer's start entry (JSON) as a request of ``spider``.

    Spiders that know entries (``SiteSpider.make_request_from_entry``: callbacks,
    rendering, priorities) build it; any other spider gets a plain request to its
    default callback, tagged with the entry's job.
    """
    maker = getattr(spider, "make_request_from_entry", None)
    if maker is not None:
        return maker(entry)
    meta = dict(entry.get("meta") or {})
    if entry.get("job_id"):
        meta.setdefault(JOB_META, entry["job_id"])
    return Request(entry["url"], meta=meta, dont_filter=bool(entry.get("dont_filter", False)))


class LeasedQueue:
    """The site's Redis queue (``core.frontier.queue``) whose pop leases instead of deleting.

    Leases are taken in small batches (``FRONTIER_LEASE_BATCH``) into a local buffer: one
    round trip per batch instead of per request. Buffered entries are leased, so they are
    as safe as any in-flight request and go back to the queue if this worker dies.
    Requests are stored compactly (``crawlers.frontier.codec``): their ``Request.to_dict``
    without what equals a fresh request's.
    """

    def __init__(
        self,
        server: Client,
        spider: Spider,
        *,
        worker_id: str,
        batch: int,
        frontier: RedisFrontier | None = None,
    ) -> None:
        self.spider = spider
        self.frontier = frontier or RedisFrontier(server, spider.name)
        self.worker_id = worker_id
        self.batch = max(1, batch)
        self.buffer: deque[Request] = deque()

    def __len__(self) -> int:
        return self.frontier.queued() + len(self.buffer)

    def encode(self, request: Request) -> tuple[bytes, str | None]:
        """The request as queued (without its lease and lease-aware errback), and its lease."""
        unwrap_errback(request)
        lease_id = request.meta.pop(LEASE_META, None)
        try:
            return codec.encode(self.request_dict(request)), lease_id
        finally:
            if lease_id is not None:
                request.meta[LEASE_META] = lease_id

    def request_dict(self, request: Request) -> dict[str, Any]:
        """``request.to_dict(spider=...)``, the same dict, without its per-request scan of
        every spider method (``inspect.getmembers``) for the callback and errback names."""
        callback = self._method_name(request.callback)
        errback = self._method_name(request.errback)
        if callback is False or errback is False:
            return request.to_dict(spider=self.spider)  # not the spider's: Scrapy decides
        d: dict[str, Any] = {
            "url": request.url,
            "callback": callback,
            "errback": errback,
            "headers": dict(request.headers),
        }
        for attr in request.attributes:
            d.setdefault(attr, getattr(request, attr))
        if type(request) is not Request:
            d["_class"] = f"{type(request).__module__}.{type(request).__name__}"
        return d

    def _method_name(self, func: Any) -> str | bool | None:
        """The name of the spider method ``func`` (None: no callable); False when ``func``
        is no method bound to the spider under its own name."""
        if func is None or isinstance(func, str):
            return func
        name = getattr(func, "__name__", None)
        if getattr(func, "__self__", None) is not self.spider or name is None:
            return False
        own = getattr(self.spider, name, None)
        if getattr(own, "__func__", None) is not getattr(func, "__func__", False):
            return False
        return str(name)

    def decode(self, data: bytes) -> Request:
        return request_from_dict(codec.decode(data), spider=self.spider)

    def entry(
        self, request: Request, seen_job: str | None = None, fingerprint: bytes | None = None
    ) -> Push:
        """``request`` as one entry of ``push_many``: queued unless ``seen_job`` has seen
        its ``fingerprint`` (which also picks its partition)."""
        data, lease_id = self.encode(request)
        return Push(data, request.priority, lease_id, seen_job, fingerprint)

    def push_many(self, entries: list[Push]) -> list[bool]:
        """Queue the entries in order, in one round trip; True for each queued."""
        return self.frontier.push_many(entries, seen_ttl=SEEN_TTL_SECONDS)

    def pop(self) -> Request | None:
        while not self.buffer:
            leases = self.frontier.lease(self.worker_id, self.batch) or self.frontier.lease_start(
                self.worker_id, 1
            )
            if not leases:
                self.frontier.refresh()  # idle: a new job may have re-partitioned it
                return None
            self.buffer.extend(
                request for lease in leases if (request := self._request_from_lease(lease))
            )
        return self.buffer.popleft()

    def _request_from_lease(self, lease: Lease) -> Request | None:
        stats = self.spider.crawler.stats
        try:
            if lease.is_start:
                request = request_from_entry(self.spider, json.loads(lease.data))
            else:
                request = self.decode(lease.data)
        except Exception:
            # A corrupt entry would be re-leased forever; drop it loudly and counted.
            logger.exception("dropping undecodable frontier entry (lease %s)", lease.lease_id)
            stats.inc_value("frontier/undecodable_entries")
            self.frontier.ack(lease.lease_id)
            return None
        if not isinstance(request, Request):
            logger.error("start entry made no request (lease %s): %r", lease.lease_id, lease.data)
            stats.inc_value("frontier/undecodable_entries")
            self.frontier.ack(lease.lease_id)
            return None
        request.meta[LEASE_META] = lease.lease_id
        return request


class JobDupeFilter(BaseDupeFilter):
    """One seen-set per job of Scrapy request fingerprints (raw digests, in the partition
    each picks: ``core.frontier.queue.RedisFrontier.seen``).

    A new job recrawls the site; within a job, every URL is fetched once across all
    workers. The seen-set belongs to the job, not to a worker: closing a worker keeps
    it (it expires ``SEEN_TTL_SECONDS`` after the job's last write). The leasing
    scheduler checks and queues in one step (``LeasedQueue.push_many``) with
    ``seen_job`` and ``digest``; ``request_seen`` serves everyone else.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.services = CrawlServices.of(crawler)
        self.debug = crawler.settings.getbool("DUPEFILTER_DEBUG")
        self._frontier: RedisFrontier | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def server(self) -> Client:
        """The crawl's sync client (a Redis Cluster's is built by the scheduler's wait for
        Redis, before the first request is checked)."""
        return self.services.sync_redis()

    def digest(self, request: Request) -> bytes:
        """The request's fingerprint as stored: the raw digest (20 bytes)."""
        return self.crawler.request_fingerprinter.fingerprint(request)

    def fingerprint(self, request: Request) -> str:
        """The fingerprint as the job's ledger names requests (hex)."""
        return self.digest(request).hex()

    def seen_job(self, request: Request) -> str:
        """The job whose seen-set ``request`` belongs to."""
        spider = self.crawler.spider
        job_id = request.meta.get(JOB_META) or getattr(spider, "job_id", None) or "unassigned"
        return str(job_id)

    def request_seen(self, request: Request) -> bool:
        if self._frontier is None:
            spider = self.crawler.spider
            self._frontier = RedisFrontier(self.server, spider.name if spider else "default")
        return self._frontier.seen(self.seen_job(request), self.digest(request))

    def log(self, request: Request, spider: Spider) -> None:
        if self.debug:
            logger.debug("Filtered duplicate request: %(request)s", {"request": request})
