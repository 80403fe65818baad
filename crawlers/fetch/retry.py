"""Block handling and retries: classify, back off, change proxy, give up with a reason.

``BlockRetryMiddleware`` replaces Scrapy's ``RetryMiddleware`` (same settings and ``retry/*``
stats): it classifies every response, retries blocks, 5xx and network errors after an
exponential backoff through another proxy, never retries a failure no retry changes, drops
a block page it gives up on (``PageBlocked``), and honours ``meta["not_before"]``. With
``REDIS_URL`` every classified response is recorded in the job's ledger (``core.figures.ledger``).
``CountingRedirectMiddleware`` ends and counts redirect loops.

Reads: ``BLOCK_RETRY_TIMES``, ``RETRY_*`` (``RETRY_BACKOFF_BASE``, ``RETRY_BACKOFF_MAX``).
Details and stats: docs/fetching.md "Block classification and retries".
"""

from __future__ import annotations

import logging
import random
import re
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.downloadermiddlewares.retry import RetryMiddleware, get_retry_request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.utils.asyncio import sleep

from core.fetch.blocks import Verdict
from core.figures.ledger import RENDERED, ROBOTS_SUFFIX
from crawlers.fetch.classify import ResponseClassifier, is_robots_txt_fetch
from crawlers.fetch.header_limit import TOO_LARGE
from crawlers.fetch.identity import IDENTITY_META, SESSION_META
from crawlers.fetch.redact import proxy_id, redact
from crawlers.frontier.meta import ITEM_RETRY_META
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

PROXY_EXCLUDE_META = "proxy_exclude"
# The request's proxy was picked by the rotation (crawlers.fetch.proxies), not the spider:
# the rotation may mark it and a retry may drop it.
ROTATED_PROXY_META = "rotated_proxy"
LEDGER_SUFFIX_META = "ledger_suffix"  # tells a side fetch's record from its request's
# An answer the session layer judged (crawlers.fetch.sessions): a challenge its browser
# passed is retried at once; the browser's own fetch is not retried here at all.
CHALLENGE_PASSED_META = "challenge_passed"
CHALLENGE_META = "session_challenge"
# What a session put on an attempt (crawlers.fetch.sessions), dropped from its retry.
COOKIE_HEADER_META = "session_cookie_header"  # the Cookie header is the session's
SESSION_PROXY_META = "session_proxy"  # meta["proxy"] is the session's
COOKIES_IN_META = "session_cookies"  # the session's jar, for a rendered request
REDIRECT_COOKIES_META = "session_redirect_cookies"  # (URL, Set-Cookie values) of a 3xx
SESSION_REPORT_META = "session_report"  # a good answer is news to the pool (probe, errors)
SESSION_ATTEMPT_METAS = (
    IDENTITY_META,
    COOKIES_IN_META,
    REDIRECT_COOKIES_META,
    SESSION_REPORT_META,
)
NOT_BEFORE_META = "not_before"
LAST_FAILURE_META = "last_failure"  # the previous attempt's cause, to tell a repeat
# Failures no retry changes, by their text: a header block over the HTTP/1.1 client's
# limit, or over curl's when the HTTP/1.1 client does not take the response over.
DETERMINISTIC = (TOO_LARGE, "Too many response headers", "grew larger than allowed")
_TLS = re.compile(r"\b(?:SSL|TLS)\b|certificate|handshake", re.IGNORECASE)
CAUSE_MAX_CHARS = 300
PART_RETRY_META = "part_retries"
# The rounds a request can be in: each restarts Scrapy's retry_times.
ROUND_METAS = (ITEM_RETRY_META, PART_RETRY_META, "retry_times")


class PageBlocked(IgnoreRequest):
    """Retries ran out on a block page. Carries the response (for the structure gate's
    sampler, which reports *why*), never passes it to a callback."""

    def __init__(self, verdict: Verdict, response: Response) -> None:
        super().__init__(f"{verdict.kind}: {verdict.reason} ({response.url})")
        self.verdict = verdict
        self.response = response


def response_ref(crawler: Crawler, request: Request) -> str:
    """``<request fingerprint>:<rounds>``: one ledger record per attempt of a request
    (each round of retries restarts Scrapy's retry count, so all of them are in it); a
    side fetch of the same request (a browser passing a challenge) adds its suffix."""
    fingerprint = crawler.request_fingerprinter.fingerprint(request).hex()
    rounds = ".".join(str(int(request.meta.get(name, 0))) for name in ROUND_METAS)
    return f"{fingerprint}:{rounds}{request.meta.get(LEDGER_SUFFIX_META, '')}"


def forget_rotated_proxy(request: Request, *, keep_session: bool = False) -> None:
    """Drop the rotating proxy and the session of a previous attempt from a retry/redirect
    copy.

    The next pass picks a proxy (or a session) afresh anyway; meanwhile the copy may be
    stored (in the Redis frontier) and must not carry the old proxy's credentials header
    or the old session's cookies with it. ``keep_session``: a redirect, which the same
    visitor follows (its session, proxy and cookies stay; the session layer sets the
    Cookie header for the new URL).
    """
    meta = request.meta
    if keep_session and meta.get(SESSION_META):
        return
    if meta.pop(SESSION_META, None) is not None:
        for key in SESSION_ATTEMPT_METAS:
            meta.pop(key, None)
        if meta.pop(COOKIE_HEADER_META, None):
            request.headers.pop(b"Cookie", None)
        if meta.pop(SESSION_PROXY_META, None):
            meta[ROTATED_PROXY_META] = True  # the session's proxy goes like a rotated one
    if not meta.get(ROTATED_PROXY_META):
        return  # a proxy the spider chose itself stays
    # Scrapy's HttpProxyMiddleware drops its own record of the credentials' proxy by
    # itself when the next pass sets another proxy (that record holds no credentials).
    meta.pop("proxy", None)
    meta.pop("download_slot", None)
    request.headers.pop(b"Proxy-Authorization", None)


def cause_text(exception: BaseException) -> str:
    """What failed, in words, on one line: the exception's class and message, the reason
    Twisted wrapped (``ResponseFailed([...])``) unwrapped, proxies' credentials redacted."""
    reasons = getattr(exception.__cause__, "reasons", None)
    error: BaseException | Any = exception
    if reasons:
        error = getattr(reasons[0], "value", reasons[0])
    message = " ".join(str(error).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return redact(text)[:CAUSE_MAX_CHARS]


def not_worth_retrying(cause: str, previous: str | None) -> str | None:
    """Why a failure with ``cause`` is not retried (None: it is): a failure no retry
    changes, or a TLS failure the same as the previous attempt's."""
    if any(marker in cause for marker in DETERMINISTIC):
        return "the same on every attempt"
    if cause == previous and _TLS.search(cause):
        return "the same TLS failure twice"
    return None


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Equal-jitter exponential backoff: half of ``min(cap, base * 2**(attempt-1))`` fixed,
    half random, so delays grow with the attempt but retries of a burst spread out."""
    if base <= 0:
        return 0.0
    ceiling = min(cap, base * 2 ** max(0, attempt - 1))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def retry_after_seconds(response: Response) -> float | None:
    raw = response.headers.get(b"Retry-After")
    if not raw:
        return None
    try:
        return max(0.0, float(raw.decode("latin-1").strip()))
    except ValueError:
        return None  # an HTTP date: rare from throttling sites; the backoff applies


class BlockRetryMiddleware(RetryMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler.settings)
        self.crawler = crawler
        settings = crawler.settings
        self.classifier = ResponseClassifier.of(crawler)
        self.block_retry_times = settings.getint("BLOCK_RETRY_TIMES")
        self.backoff_base = settings.getfloat("RETRY_BACKOFF_BASE")
        self.backoff_max = settings.getfloat("RETRY_BACKOFF_MAX")
        self.not_before_max = settings.getfloat("PART_RETRY_BACKOFF_MAX")
        services = CrawlServices.of(crawler)
        self.ledger = services.ledger
        self.clock = services.clock

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BlockRetryMiddleware:
        middleware = cls(crawler)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_closed(self) -> None:
        """One line an operator can read: the job's block rate and what became of blocks."""
        stats = self.stats
        classified = stats.get_value("responses/classified", 0)
        blocks = stats.get_value("blocks/total", 0)
        kinds = ("blocked", "challenge", "captcha", "throttled")
        logger.info(
            "fetch summary: %d responses classified, %d blocks (%s), block rate %.2f%%; "
            "%d errors; gave up on %d block pages, %d errors, %d network failures, "
            "%d failures no retry changes",
            classified,
            blocks,
            ", ".join(f"{kind} {stats.get_value(f'blocks/{kind}', 0)}" for kind in kinds),
            100.0 * blocks / classified if classified else 0.0,
            stats.get_value("responses/error", 0),
            sum(stats.get_value(f"fetch/gave_up/{kind}", 0) for kind in kinds),
            stats.get_value("fetch/gave_up/error", 0),
            stats.get_value("fetch/gave_up/network", 0),
            stats.get_value("fetch/gave_up/deterministic", 0),
        )

    @property
    def stats(self) -> Any:
        return self.crawler.stats

    async def process_request(self, request: Request) -> None:
        not_before = request.meta.get(NOT_BEFORE_META)
        if not_before:
            await self.clock.refresh()
            # Capped as well: a request set by an older worker never waits longer.
            delay = min(float(not_before) - self.clock.now(), self.not_before_max)
            if delay > 0:
                await sleep(delay)

    # Async, and without the spider Scrapy no longer passes: both as Scrapy >= 2.13 calls
    # downloader middlewares (its RetryMiddleware keeps the old synchronous signature).
    async def process_response(  # type: ignore[override]  # a coroutine (see above)
        self, request: Request, response: Response
    ) -> Request | Response:
        verdict = self.classifier.verdict(request, response)
        await self._record(request, response, verdict)
        if verdict.ok or request.meta.get(CHALLENGE_META):
            return response
        if verdict.is_block:
            if request.meta.get(CHALLENGE_PASSED_META):
                # Cleared in the browser (or held by the request clearing it): again at once.
                retry = self._retry_request(request, "challenge passed", self.block_retry_times)
                if retry is not None:
                    retry.meta.pop(CHALLENGE_PASSED_META, None)
                    self.stats.inc_value("fetch/retry/challenge_passed")
                    return retry
            if request.meta.get("dont_retry"):
                return self._give_up(request, response, verdict)
            retry = self._retry_request(
                request, f"{verdict.kind}: {verdict.reason}", self.block_retry_times
            )
            if retry is None:
                return self._give_up(request, response, verdict)
            return await self._after_backoff(retry, verdict.kind, response)
        # An error: 5xx and the other RETRY_HTTP_CODES are retried; a 404 is an answer.
        if request.meta.get("dont_retry") or response.status not in self.retry_http_codes:
            return response
        retry = self._retry_request(request, f"HTTP {response.status}", None)
        if retry is None:
            self.stats.inc_value("fetch/gave_up/error")
            return response  # HttpErrorMiddleware hands it to the errback, as Scrapy does
        return await self._after_backoff(retry, "error", response)

    async def process_exception(  # type: ignore[override]  # a coroutine (as process_response)
        self, request: Request, exception: Exception
    ) -> Request | None:
        if not isinstance(exception, self.exceptions_to_retry) or request.meta.get("dont_retry"):
            return None
        cause = cause_text(exception)
        why = not_worth_retrying(cause, request.meta.get(LAST_FAILURE_META))
        if why is not None:
            self.stats.inc_value("fetch/gave_up/deterministic")
            logger.warning("not retrying %s: %s (%s)", request.url, cause, why)
            return None
        retry = self._retry_request(request, exception, None)
        if retry is None:
            self.stats.inc_value("fetch/gave_up/network")
            return None
        retry.meta[LAST_FAILURE_META] = cause
        return await self._after_backoff(retry, "network", None)

    # -- helpers ----------------------------------------------------------------------
    async def _record(self, request: Request, response: Response, verdict: Verdict) -> None:
        job_id = request.meta.get(JOB_META)
        ref = response_ref(self.crawler, request)
        if not job_id and is_robots_txt_fetch(request):
            # Scrapy's own robots.txt request carries no job: the crawl's. A block there is
            # a block the site served (counted), the file no page of the job (apart).
            job_id = getattr(self.crawler.spider, "job_id", None)
            ref += ROBOTS_SUFFIX
        if self.ledger is None or not job_id:
            return
        value = verdict.kind + (RENDERED if "playwright" in response.flags else "")
        await self.ledger.response(str(job_id), ref, value)

    def _retry_request(
        self, request: Request, reason: str | Exception, max_times: int | None
    ) -> Request | None:
        if max_times is None:
            max_times = request.meta.get("max_retry_times", self.max_retry_times)
        stat_reason: str | type[Exception]
        if isinstance(reason, Exception):
            if int(request.meta.get("retry_times", 0)) >= max_times:
                self._gave_up(request, cause_text(reason))
                return None
            # Scrapy's stat name is the class (the give-up line, ours, names the cause).
            stat_reason = type(reason)
        else:
            stat_reason = redact(reason)
        assert self.crawler.spider is not None, "requests are retried while a spider runs"
        retry = get_retry_request(
            request,
            spider=self.crawler.spider,
            reason=stat_reason,
            max_retry_times=max_times,
            priority_adjust=request.meta.get("priority_adjust", self.priority_adjust),
            give_up_log_level=request.meta.get("give_up_log_level", self.give_up_log_level),
        )
        if retry is not None:
            proxy = request.meta.get("proxy")
            if proxy:
                excluded = [*retry.meta.get(PROXY_EXCLUDE_META, ()), proxy_id(proxy)]
                retry.meta[PROXY_EXCLUDE_META] = list(dict.fromkeys(excluded))
            forget_rotated_proxy(retry)
        return retry

    def _gave_up(self, request: Request, cause: str) -> None:
        """Scrapy's give-up line and stat, with the cause's text (Scrapy's names the class)."""
        self.stats.inc_value("retry/max_reached")
        level = request.meta.get("give_up_log_level", self.give_up_log_level)
        logger.log(
            logging.getLevelName(level) if isinstance(level, str) else level,
            "Gave up retrying %s (failed %d times): %s",
            request,
            int(request.meta.get("retry_times", 0)) + 1,
            cause,
        )

    async def _after_backoff(self, retry: Request, kind: str, response: Response | None) -> Request:
        attempt = int(retry.meta.get("retry_times", 1))
        delay = backoff_delay(attempt, self.backoff_base, self.backoff_max)
        if response is not None and response.status in (429, 503):
            hinted = retry_after_seconds(response)
            if hinted is not None:
                delay = max(delay, min(hinted, self.backoff_max))
        self.stats.inc_value(f"fetch/retry/{kind}")
        self.stats.inc_value("fetch/backoff_ms", int(delay * 1000))
        if delay > 0:
            await sleep(delay)
        return retry

    def _give_up(self, request: Request, response: Response, verdict: Verdict) -> Response:
        self.stats.inc_value(f"fetch/gave_up/{verdict.kind}")
        logger.warning(
            "dropped %s after %d retries: %s (%s), via %s",
            request.url,
            int(request.meta.get("retry_times", 0)),
            verdict.kind,
            verdict.reason,
            proxy_id(request.meta.get("proxy")),
        )
        raise PageBlocked(verdict, response)


class CountingRedirectMiddleware(RedirectMiddleware):
    """Scrapy's RedirectMiddleware, which also ends redirect loops at once, counted.

    A redirect back to a URL already visited in the same chain is a loop (with cookies
    on, one revisit is allowed: "set a cookie and come back" is a common pattern). A
    loop would otherwise run to REDIRECT_MAX_TIMES, or vanish silently in the dupefilter.
    """

    def process_response(
        self,
        request: Request,
        response: Response,
        spider: Spider | None = None,  # Scrapy's signature: it passes none since 2.13
    ) -> Request | Response:
        # Public hook only: Scrapy decides whether and where to redirect; we judge the result.
        try:
            result = super().process_response(request, response)
        except IgnoreRequest:
            self._count_loop(request, f"more than {self.max_redirect_times} redirects")
        if isinstance(result, Request):
            chain = [*request.meta.get("redirect_urls", ()), request.url]
            allowed = 1 if self.crawler.settings.getbool("COOKIES_ENABLED") else 0
            if chain.count(result.url) > allowed:
                self._count_loop(request, f"redirect loop back to {result.url}")
            forget_rotated_proxy(result, keep_session=True)
            if result.meta.get(SESSION_META):
                # The session never sees this answer (the redirect is followed first):
                # the cookies it set travel with the redirect, for the session's jar.
                set_cookies = response.headers.getlist(b"Set-Cookie")
                if set_cookies:
                    result.meta[REDIRECT_COOKIES_META] = (
                        request.url,
                        [value.decode("latin-1") for value in set_cookies],
                    )
        return result

    def _count_loop(self, request: Request, why: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("fetch/redirect_loop")
        logger.warning("dropped %s: %s", request.url, why)
        raise IgnoreRequest(f"redirect loop: {why}")
