"""When is a leased request done? Lease acks driven by Scrapy's public extension points.

A lease is acked once its callback's (or errback's) output is exhausted and every item of
it has left the item pipelines (durable), or the request failed for good: never earlier,
never left un-acked. ``LeaseAckMiddleware`` (the outermost spider middleware) tracks
responses, ``LeaseErrback`` download failures, and the item signals the items; an
``item_error`` turns the ack into a re-crawl (bounded by ``FRONTIER_ITEM_RETRY_TIMES``).
A decision is taken one reactor turn after the last event.

Reads: ``FRONTIER_ITEM_RETRY_TIMES``. Why each event and the Scrapy issue it works around:
docs/frontier.md "How acks are driven by public signals".
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from scrapy import Request
from scrapy.utils.misc import arg_to_iter
from twisted.python.failure import Failure

# request.meta key of the lease a request was popped under (set by the leasing queue).
LEASE_META = "frontier_lease"


def lease_of(source: Any) -> str | None:
    """The lease of a Response or download Failure (both carry ``.request``), if any."""
    request = getattr(source, "request", None)
    if not isinstance(request, Request):
        return None
    lease_id = request.meta.get(LEASE_META)
    return str(lease_id) if lease_id is not None else None


def not_a_continuation(output: Any) -> Any:
    """A request a callback or errback yields never continues the lease of its source.

    Only retries and redirects (from downloader middlewares) replace a lease; a request
    copied from the leased one (``response.request.replace(url=...)``) would otherwise
    release the lease when queued, before the items of its source are durable.
    """
    if isinstance(output, Request) and LEASE_META in output.meta:
        meta = {key: value for key, value in output.meta.items() if key != LEASE_META}
        return output.replace(meta=meta)
    return output


def is_item(output: Any) -> bool:
    """What the scraper sends to the item pipelines (Scrapy: not None, not a Request)."""
    return output is not None and not isinstance(output, Request)


@dataclass
class _Work:
    streams: int = 0  # outputs being iterated (callback/errback/recovered streams)
    items: int = 0  # items handed to the pipelines and not yet out of them
    response: bool = False  # a response of it entered the spider middlewares
    # The request whose items failed in the pipelines (item_error): crawl it again.
    failed: Request | None = None


class LeaseAcks:
    """Per-lease bookkeeping of outputs and items; calls ``ack(lease_id)`` when done."""

    def __init__(
        self,
        ack: Callable[[str], None],
        call_later: Callable[[float, Callable[[str], None], str], Any],
        on_failed: Callable[[Request], None] | None = None,
        on_failure: Callable[[Failure], None] | None = None,
    ) -> None:
        self._ack = ack
        self._on_failed = on_failed
        # Told of every failure before its errback runs (``crawlers.frontier.fates``).
        self._on_failure = on_failure
        self._call_later = call_later
        self._work: dict[str, _Work] = {}
        self._settling: set[str] = set()

    def __len__(self) -> int:
        return len(self._work)

    # -- responses (LeaseAckMiddleware) -----------------------------------------------
    def response_entered(self, response: Any) -> None:
        """A response reached the spider middlewares: its errback, if called, is theirs."""
        lease_id = lease_of(response)
        if lease_id is not None:
            self._work.setdefault(lease_id, _Work()).response = True

    async def track_output(self, response: Any, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Pass ``result`` through, counting its items; the stream ends in ``finally``."""
        lease_id = lease_of(response)
        if lease_id is None:
            async for output in result:
                yield not_a_continuation(output)
            return
        self._open(lease_id)
        try:
            async for output in result:
                if is_item(output):
                    self._work[lease_id].items += 1
                yield not_a_continuation(output)
        finally:
            self._close(lease_id)

    # -- download failures (LeaseErrback) -----------------------------------------------
    def failure_output(self, failure: Failure, errback: Callable[[Failure], Any] | None) -> Any:
        """Call ``errback`` (or re-raise, as Scrapy does without one), tracking its output."""
        if self._on_failure is not None:
            self._on_failure(failure)
        lease_id = lease_of(failure)
        work = self._work.get(lease_id) if lease_id is not None else None
        if lease_id is None or (work is not None and work.response):
            # No lease, or a response's errback called from the spider middlewares
            # (HttpError...): its output is tracked there.
            return errback(failure) if errback is not None else failure
        self._open(lease_id)
        try:
            output = errback(failure) if errback is not None else failure
        except BaseException:
            self._close(lease_id)
            raise
        if output is None or isinstance(output, Failure):
            self._close(lease_id)
            return output
        if inspect.isasyncgen(output) or isinstance(output, AsyncIterator):
            return self._track_async(lease_id, output)
        if inspect.iscoroutine(output):
            return self._track_coroutine(lease_id, output)
        return self._track_sync(lease_id, arg_to_iter(output))

    async def _track_async(self, lease_id: str, output: AsyncIterator[Any]) -> AsyncIterator[Any]:
        try:
            async for item in output:
                if is_item(item):
                    self._work[lease_id].items += 1
                yield not_a_continuation(item)
        finally:
            self._close(lease_id)

    async def _track_coroutine(self, lease_id: str, output: Any) -> AsyncIterator[Any]:
        try:
            for item in arg_to_iter(await output):
                if is_item(item):
                    self._work[lease_id].items += 1
                yield not_a_continuation(item)
        finally:
            self._close(lease_id)

    def _track_sync(self, lease_id: str, output: Iterable[Any]) -> Iterator[Any]:
        try:
            for item in output:
                if is_item(item):
                    self._work[lease_id].items += 1
                yield not_a_continuation(item)
        finally:
            self._close(lease_id)

    # -- signals ------------------------------------------------------------------------
    def item_done(self, response: Any = None, **_: Any) -> None:
        """item_scraped / item_dropped / item_error: the item left the pipelines."""
        lease_id = lease_of(response)
        if lease_id is None:
            return
        work = self._work.get(lease_id)
        if work is not None and work.items > 0:
            work.items -= 1
            self._settle_later(lease_id)

    def item_failed(self, response: Any = None, **kwargs: Any) -> None:
        """item_error: the item is not durable, so its request must be crawled again."""
        lease_id = lease_of(response)
        work = self._work.get(lease_id) if lease_id is not None else None
        if work is not None and work.items > 0:
            work.failed = response.request
        self.item_done(response=response, **kwargs)

    def spider_error(self, response: Any = None, **_: Any) -> None:
        """A callback/errback raised: its output ended (possibly before it began)."""
        lease_id = lease_of(response)
        if lease_id is not None and lease_id in self._work:
            self._settle_later(lease_id)

    # -- bookkeeping --------------------------------------------------------------------
    def _open(self, lease_id: str) -> None:
        self._work.setdefault(lease_id, _Work()).streams += 1

    def _close(self, lease_id: str) -> None:
        work = self._work.get(lease_id)
        if work is not None and work.streams > 0:
            work.streams -= 1
            self._settle_later(lease_id)

    def _settle_later(self, lease_id: str) -> None:
        if lease_id not in self._settling:
            self._settling.add(lease_id)
            self._call_later(0, self._settle, lease_id)

    def _settle(self, lease_id: str) -> None:
        self._settling.discard(lease_id)
        work = self._work.get(lease_id)
        if work is None or work.streams or work.items:
            return
        del self._work[lease_id]
        if work.failed is not None and self._on_failed is not None:
            self._on_failed(work.failed)
        else:
            self._ack(lease_id)


class LeaseErrback:
    """The errback the scheduler gives a request it hands out (see ``LeaseAcks``).

    ``original`` is the spider's errback (or None): requests are always queued with it,
    never with this wrapper (``unwrap_errback``).
    """

    def __init__(self, acks: LeaseAcks, original: Callable[[Failure], Any] | None) -> None:
        self.acks = acks
        self.original = original
        self.__name__ = getattr(original, "__name__", "on_error")

    def __call__(self, failure: Failure) -> Any:
        return self.acks.failure_output(failure, self.original)


def wrap_errback(request: Request, acks: LeaseAcks) -> None:
    if not isinstance(request.errback, LeaseErrback):
        request.errback = LeaseErrback(acks, request.errback)


def unwrap_errback(request: Request) -> None:
    if isinstance(request.errback, LeaseErrback):
        request.errback = request.errback.original
