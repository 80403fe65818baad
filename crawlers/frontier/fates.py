"""What became of each request a scheduler handed out: answered, failed, or dropped with a
named reason, whatever dropped it.

``RequestFates`` serves both schedulers (``LeasingScheduler`` and ``LocalScheduler``): it
gives each request a token (``meta[LEASE_META]``) and an errback wrapper, and ends it on
the response, the failure, or a drop Scrapy makes silently (a ``request_scheduled``
handler's ``IgnoreRequest`` is turned into a ``RequestDropped`` failure, so the lease ends).
Every drop is counted ``requests/dropped/<reason>`` (and ``requests/failed`` when a page is
lost) and, on the frontier, recorded in the job's ledger before its lease is acked.

Reads: signals only. The reasons and why: docs/frontier.md "Every lease ends, whatever
drops its request".
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest, NotSupported
from scrapy.http import Response
from scrapy.utils.asyncio import call_later
from twisted.python.failure import Failure

from core.figures.ledger import POLICY_DROPS
from core.frontier.queue import RedisFrontier
from crawlers.frontier.acks import LEASE_META
from crawlers.frontier.meta import HANDOFF_META
from crawlers.runtime.jobs import JOB_META

logger = logging.getLogger(__name__)

DROPPED = "requests/dropped/"
FAILED = "requests/failed"

# Reasons of a drop. A policy drop loses no page: robots.txt forbids it, or the page is
# crawled by another request of the job (a redirect to a page already seen).
ROBOTS = "robots"
DUPLICATE = "duplicate"
POLICY = POLICY_DROPS  # {ROBOTS, DUPLICATE}: the ledger's figures need them too
OFFSITE = "offsite"
OFFSITE_REDIRECT = "offsite_redirect"
REDIRECT_LOOP = "redirect_loop"
REDIRECT_LIMIT = "redirect_limit"
UNSUPPORTED = "unsupported"  # no download handler takes the request (its URL scheme)
IGNORED = "ignored"  # an IgnoreRequest nobody named
IGNORED_AT_SCHEDULING = "ignored_at_scheduling"
# Scrapy's own IgnoreRequest messages (and the fetch layer's loop message), by prefix.
_MESSAGES = (
    ("Forbidden by robots.txt", ROBOTS),
    ("Filtered offsite request", OFFSITE),
    ("max redirections reached", REDIRECT_LIMIT),
    ("redirect loop", REDIRECT_LOOP),
)
# Local mode's tokens (in-process: nothing to ack).
_LOCAL_TOKENS = itertools.count(1)
# Drops whose source logs them itself (a WARNING, or DEBUG for a policy): no second line.
_LOGGED_AT_SOURCE = frozenset({ROBOTS, OFFSITE, REDIRECT_LOOP, REDIRECT_LIMIT})


class RequestDropped(IgnoreRequest):
    """A request some component dropped without failing it: failed here, named."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def drop_reason(exc: BaseException) -> str | None:
    """The named reason of a failure that is a drop; None for any other failure (a
    network error, an HTTP error: the fetch layer and the spider count those)."""
    if isinstance(exc, RequestDropped):
        return exc.reason
    if isinstance(exc, NotSupported):
        return UNSUPPORTED
    if not isinstance(exc, IgnoreRequest) or getattr(exc, "response", None) is not None:
        # Not a drop: the site answered (an HTTP error, a block page given up on), which
        # the fetch layer and the job's ledger count (fetch/gave_up, pages/refused).
        return None
    if type(exc) is not IgnoreRequest:
        return _snake(type(exc).__name__)  # a subclass names itself: MyFilterDrop -> my_filter_drop
    message = str(exc)
    for prefix, reason in _MESSAGES:
        if message.startswith(prefix):
            return reason
    return IGNORED


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def host_of(url: str) -> str:
    """``host[:port]`` of a URL, as an operator reads it in a log line."""
    return urlsplit(url).netloc or url


def new_local_token() -> str:
    return f"local-{next(_LOCAL_TOKENS)}"


def token_of(request: Request) -> str | None:
    token = request.meta.get(LEASE_META)
    return str(token) if token is not None else None


class RequestFates:
    """One crawl's watch over the requests its scheduler handed out (module docstring).

    ``wrap``: gives a request the scheduler's errback wrapper (which calls ``failed``);
    ``record``: keeps a drop for the job's ledger (the frontier), called before the drop
    ends its lease.
    """

    def __init__(
        self,
        crawler: Crawler,
        *,
        wrap: Callable[[Request], None],
        record: Callable[[Request, str], None] | None = None,
    ) -> None:
        self.crawler = crawler
        self.wrap = wrap
        self.record = record
        self._open: set[str] = set()
        self._scheduling: dict[int, Request] = {}
        self._check_scheduled = False
        # Continuations the scheduler took: a request_dropped for one is a duplicate.
        self._continued: weakref.WeakSet[Request] = weakref.WeakSet()
        crawler.signals.connect(self.scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(self.answered, signal=signals.response_received)
        crawler.signals.connect(self.refused, signal=signals.request_dropped)

    # -- the events ----------------------------------------------------------------------
    def handed_out(self, request: Request) -> None:
        token = token_of(request)
        if token is not None:
            self._open.add(token)
        self.wrap(request)

    def answered(self, response: Response, request: Request, **_: Any) -> None:
        token = token_of(request)
        if token is not None:
            self._open.discard(token)

    def scheduled(self, request: Request, **_: Any) -> None:
        """``request_scheduled``: a request with a live token continues it."""
        if request.meta.get(HANDOFF_META):
            return  # the frontier handing its own lease to its engine: not a new hop
        token = token_of(request)
        if token is None or token not in self._open:
            return
        self._open.discard(token)
        self._scheduling[id(request)] = request
        if not self._check_scheduled:
            self._check_scheduled = True
            call_later(0, self._fail_unqueued)

    def enqueued(self, request: Request) -> None:
        """The scheduler got ``request`` (to queue, or to refuse as seen)."""
        if self._scheduling.pop(id(request), None) is not None:
            self._continued.add(request)

    def failed(self, failure: Failure) -> None:
        """A failure reached the errback wrapper: the token ends; a drop is counted."""
        request = getattr(failure, "request", None)
        if not isinstance(request, Request):
            return
        token = token_of(request)
        if token is not None:
            self._open.discard(token)
        reason = drop_reason(failure.value)
        if reason is None:
            return
        if reason not in _LOGGED_AT_SOURCE and not isinstance(failure.value, RequestDropped):
            logger.warning(
                "dropped %s: %s (%s%s)", request.url, failure.getErrorMessage(), DROPPED, reason
            )
        self.count(request, reason)

    def refused(self, request: Request, **_: Any) -> None:
        """``request_dropped``: the scheduler's dupefilter refused ``request``. A
        continuation's page is crawled by another request of the job, unless it is one of
        its own redirect chain (a loop: the page is lost)."""
        if request not in self._continued:
            return  # a callback's link the job has seen: Scrapy's own business
        self._continued.discard(request)
        chain: list[str] = request.meta.get("redirect_urls") or []
        if request.url not in chain:
            self.count(request, DUPLICATE)
            return
        line = f"dropped {chain[0]}: redirected back to {request.url}, a page of its own chain"
        self._fail(request, REDIRECT_LOOP, line)

    # -- drops at scheduling ---------------------------------------------------------------
    def _fail_unqueued(self) -> None:
        self._check_scheduled = False
        dropped, self._scheduling = list(self._scheduling.values()), {}
        for request in dropped:
            self._fail(request, *self._scheduling_drop(request))

    def _scheduling_drop(self, request: Request) -> tuple[str, str]:
        """The reason and the one line of a continuation a scheduling handler dropped."""
        hops = [*request.meta.get("redirect_urls", ()), request.url]
        source, origin = hops[-2] if len(hops) > 1 else request.url, hops[0]
        offsite = self.crawler.get_downloader_middleware(OffsiteMiddleware)
        spider = self.crawler.spider
        if offsite and spider and not offsite.should_follow(request, spider):
            redirected = len(hops) > 1
            reason = OFFSITE_REDIRECT if redirected else OFFSITE
            what = "redirected" if redirected else "continued"
            line = (
                f"dropped {origin}: {what} to another host, {host_of(source)} -> "
                f"{host_of(request.url)} ({request.url}), outside the spider's allowed_domains"
            )
        else:
            reason = IGNORED_AT_SCHEDULING
            line = f"dropped {origin}: its next request {request.url} was ignored at scheduling"
        return reason, line

    def _fail(self, request: Request, reason: str, line: str) -> None:
        logger.warning("%s (%s%s)", line, DROPPED, reason)
        engine = self.crawler.engine
        self.wrap(request)  # the errback that ends its lease and counts the drop
        failure = Failure(RequestDropped(reason, line))
        try:
            # The failure takes the path of a downloader middleware's IgnoreRequest: the
            # spider's errback runs, its output is scraped, the lease ends after it.
            assert engine is not None and engine.scraper is not None
            engine.scraper.enqueue_scrape(failure, request).addErrback(
                lambda f: logger.error("failing %s: %s", request.url, f.getErrorMessage())
            )
        except (AssertionError, RuntimeError):  # the engine is closing: count it at least
            logger.error("%s: the engine is closing; counted without its errback", request.url)
            # Scrapy's errbacks read failure.request, an attribute Failure does not declare.
            failure.request = request  # type: ignore[attr-defined]  # set the Scrapy way
            self.failed(failure)

    # -- figures ---------------------------------------------------------------------------
    def count(self, request: Request, reason: str) -> None:
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(DROPPED + reason)
            if reason not in POLICY:
                stats.inc_value(FAILED)
        if self.record is not None:
            self.record(request, reason)


class FateErrback:
    """The errback local mode's scheduler gives a request it hands out: every download
    failure is reported to ``RequestFates.failed``, then the spider's errback runs (or the
    failure goes back to Scrapy, as without one)."""

    def __init__(self, fates: RequestFates, original: Callable[[Failure], Any] | None) -> None:
        self.fates = fates
        self.original = original
        self.__name__ = getattr(original, "__name__", "on_error")

    def __call__(self, failure: Failure) -> Any:
        self.fates.failed(failure)
        return self.original(failure) if self.original is not None else failure


def unwrap_fate_errback(request: Request) -> None:
    if isinstance(request.errback, FateErrback):
        request.errback = request.errback.original


class DropRecords:
    """The frontier's drops waiting for the job's ledger: ``(job, request fingerprint,
    reason)``, sent by the scheduler's flush before the acks of their leases (a worker
    killed in between crawls the request again, which records the same field)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._pending: list[tuple[str, str, str]] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, request: Request, reason: str) -> None:
        fingerprint = self.crawler.request_fingerprinter.fingerprint(request).hex()
        job_id = str(request.meta.get(JOB_META) or "unassigned")
        self._pending.append((job_id, fingerprint, reason))

    def flush(self, frontier: RedisFrontier) -> None:
        """Send them (raises REDIS_ERRORS: kept, and sent again with the next flush)."""
        if self._pending:
            frontier.record_drops(self._pending)
            self._pending = []
