"""Local mode's scheduler (no ``REDIS_URL``): Scrapy's own, watching each request's fate.

``SCHEDULER = crawlers.frontier.local.LocalScheduler`` (the add-on's, when no frontier is
configured) is ``scrapy.core.scheduler.Scheduler`` with the frontier's one extra duty:
every request it hands out ends answered, failed, or dropped with a named reason
(``crawlers.frontier.fates``). A request gets a token (an in-process lease with nothing
to ack) and an errback wrapper when handed out, never while queued: a JOBDIR's disk
queue still serialises the spider's own errback. A redirect to another host, which
Scrapy's offsite filter drops at scheduling without calling anything, fails through the
request's errback with one WARNING naming both hosts and is counted
``requests/dropped/offsite_redirect`` and ``requests/failed``.
"""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.crawler import Crawler

from crawlers.frontier.acks import LEASE_META
from crawlers.frontier.fates import (
    FateErrback,
    RequestFates,
    new_local_token,
    unwrap_fate_errback,
)


class LocalScheduler(Scheduler):
    fates: RequestFates

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = super().from_crawler(crawler)
        scheduler.fates = RequestFates(crawler, wrap=scheduler.wrap_errback)
        return scheduler

    def wrap_errback(self, request: Request) -> None:
        if not isinstance(request.errback, FateErrback):
            request.errback = FateErrback(self.fates, request.errback)

    def enqueue_request(self, request: Request) -> bool:
        self.fates.enqueued(request)  # refused as seen: the engine sends request_dropped
        unwrap_fate_errback(request)  # queued with the spider's own errback
        return super().enqueue_request(request)

    def next_request(self) -> Request | None:
        request = super().next_request()
        if request is not None:
            request.meta[LEASE_META] = new_local_token()
            self.fates.handed_out(request)
        return request
