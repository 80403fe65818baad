"""Fetch sessions in the crawl: every request goes out as one visitor of the site, and a
JavaScript challenge is passed once, in Chromium, for the whole session.

``SessionMiddleware`` (a downloader middleware, on with ``SESSIONS_ENABLED``) takes a
session from the site's pool (``core.sessions.store``) within its rate budget and puts its
identity, proxy and cookies on the request; the answer's verdict (``core.fetch.blocks``) decides
the session's fate. With ``SESSIONS_ENGAGE = "defense"`` sessions start only once the site
answered with a defense. Cookies never appear in a log line or a stat.

Reads: ``SESSIONS_ENABLED``, ``SESSIONS_ENGAGE``, the ``SESSION_*`` settings, ``REDIS_URL``
(the job's ledger records every event). Fates, settings and stats: docs/fetching.md
"Sessions: one visitor per session, shared by every worker".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError, IgnoreRequest
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings

from core.keys import REDIS_ERRORS
from core.sessions.redis_store import RedisSessionStore
from core.sessions.store import (
    MemorySessionStore,
    Outcome,
    Session,
    SessionPolicy,
    SessionStore,
    Wait,
    cookie_key,
)
from crawlers.fetch.challenge import ChallengeWatch
from crawlers.fetch.classify import ResponseClassifier, is_robots_txt_fetch
from crawlers.fetch.cookies import cookie_header, set_cookies
from crawlers.fetch.escalation import SESSION_PREFER_META, Escalation
from crawlers.fetch.identity import IDENTITY_META, SESSION_META, identity_for
from crawlers.fetch.proxies import configured_proxies
from crawlers.fetch.redact import proxy_id
from crawlers.fetch.retry import (
    CHALLENGE_META,
    COOKIE_HEADER_META,
    COOKIES_IN_META,
    PROXY_EXCLUDE_META,
    REDIRECT_COOKIES_META,
    SESSION_PROXY_META,
    SESSION_REPORT_META,
)
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.ledger import RetriedCalls, RetryPolicy
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)
T = TypeVar("T")

SESSION_OPT_OUT_META = "session"  # False: this request goes out without a session
ENGAGE_MODES = ("defense", "always")
DEFENSE_REFRESH = 2.0  # seconds between looks at whether another worker saw a defense


def session_policy(settings: BaseSettings) -> SessionPolicy:
    """The site's session budget from its ``SESSION_*`` settings."""
    rate = settings.getfloat("SESSION_MAX_RATE")
    return SessionPolicy(
        max_sessions=settings.getint("SESSION_POOL_SIZE"),
        interval=1.0 / rate if rate > 0 else 0.0,
        max_uses=settings.getint("SESSION_MAX_USES"),
        max_age=settings.getfloat("SESSION_MAX_AGE"),
        max_errors=settings.getint("SESSION_MAX_ERRORS"),
        # A held session comes back after its holder's longest possible render.
        hold=settings.getfloat("RENDER_HARD_TIMEOUT") + settings.getfloat("DOWNLOAD_TIMEOUT"),
    )


class SessionMiddleware:
    def __init__(self, crawler: Crawler, store: SessionStore) -> None:
        self.crawler = crawler
        self.store = store
        settings = crawler.settings
        self.classifier = ResponseClassifier.of(crawler)
        self.identity = identity_for(crawler)
        self.proxies = {proxy_id(url): url for url in configured_proxies(settings)}
        self.wait_cap = settings.getfloat("SESSION_WAIT_MAX")
        self.escalation = Escalation(self)
        self.browser = ChallengeWatch.of(crawler)  # what a rendered page met on the way
        engage = str(settings.get("SESSIONS_ENGAGE"))
        if engage not in ENGAGE_MODES:
            raise ValueError(f"SESSIONS_ENGAGE must be one of {ENGAGE_MODES}, got {engage!r}")
        self.engaged = engage == "always"
        self._defense_read_at = 0.0
        self._acquiring = asyncio.Lock()
        self.retried = RetriedCalls(
            RetryPolicy.from_settings(settings),
            prefix="sessions/store",
            count=lambda name: crawler.stats.inc_value(name),
            warn=lambda exc: logger.warning(
                "session pool unreachable (%s); retrying", type(exc).__name__
            ),
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SessionMiddleware:
        settings = crawler.settings
        if not settings.getbool("SESSIONS_ENABLED"):
            raise not_configured("SessionMiddleware", "SESSIONS_ENABLED is off")
        spider = crawler.spidercls.name
        policy = session_policy(settings)
        store: SessionStore
        if settings.get("REDIS_URL"):
            store = RedisSessionStore(CrawlServices.of(crawler).redis, spider, policy)
        else:
            store = MemorySessionStore(spider, policy)
        middleware = cls(crawler, store)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    async def spider_closed(self) -> None:
        await self.store.close()  # its Redis client is the crawl's (CrawlServices)

    @property
    def stats(self) -> Any:
        return self.crawler.stats

    def job_of(self, request: Request) -> str | None:
        """The job whose ledger records this request's session events (Scrapy's own
        robots.txt request carries none: the crawl's)."""
        job = request.meta.get(JOB_META)
        if not job and is_robots_txt_fetch(request):
            job = getattr(self.crawler.spider, "job_id", None)
        return str(job) if job else None

    # -- requests ----------------------------------------------------------------------------
    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get(SESSION_OPT_OUT_META) is False or meta.get(CHALLENGE_META):
            return
        if meta.get(SESSION_META):
            # A redirect this visitor follows: the cookies the 3xx set join its jar.
            await self._redirected(request)
        elif not await self._defended():
            return  # no defense seen yet: the crawl's own request, as without sessions
        else:
            session = await self._session_for(request)
            meta[SESSION_META] = session.id
            if session.probe or session.errors:
                meta[SESSION_REPORT_META] = True  # its good answer changes its record
            # A dict: the request may travel through the frontier.
            meta[IDENTITY_META] = session.identity
            meta[COOKIES_IN_META] = session.cookies
            if session.proxy:
                meta["proxy"] = self.proxies[session.proxy]
                meta["download_slot"] = session.proxy  # politeness per proxy, as rotation does
                meta[SESSION_PROXY_META] = True
        if meta.pop(COOKIE_HEADER_META, None):
            request.headers.pop(b"Cookie", None)  # the last URL's
        header = cookie_header(meta.get(COOKIES_IN_META) or [], request.url, time.time())
        if header and b"Cookie" not in request.headers:
            request.headers[b"Cookie"] = header
            meta[COOKIE_HEADER_META] = True

    async def _defended(self) -> bool:
        """Whether requests go out as sessions: always, or once the site (to this worker
        or another) has answered a block."""
        if self.engaged:
            return True
        now = time.monotonic()
        if now - self._defense_read_at >= DEFENSE_REFRESH:
            self._defense_read_at = now
            seen = await self.call(self.store.defended)
            if seen:
                self._engage(seen, "another worker")
        return self.engaged

    def _engage(self, seen: str, where: str) -> None:
        if self.engaged:
            return
        self.engaged = True
        self.stats.inc_value("sessions/engaged")
        logger.info(
            "the site defends itself (%s, seen by %s): its requests go out as sessions from now on",
            seen,
            where,
        )

    async def _redirected(self, request: Request) -> None:
        found = request.meta.pop(REDIRECT_COOKIES_META, None)
        if not found:
            return
        url, values = found
        answer = Response(url, headers={b"Set-Cookie": values})
        cookies = set_cookies(answer, Request(url))
        if cookies:
            session_id = request.meta[SESSION_META]
            await self.call(lambda: self.store.merge_cookies(session_id, cookies))
            jar = {cookie_key(c): c for c in request.meta.get(COOKIES_IN_META) or []}
            jar.update((cookie_key(c), c) for c in cookies)
            request.meta[COOKIES_IN_META] = list(jar.values())

    async def _session_for(self, request: Request) -> Session:
        # One request of this worker at a time asks the pool (the others queue here, in
        # order): waiting requests would otherwise all ask again at each wake-up.
        async with self._acquiring:
            return await self._acquire(request)

    async def _acquire(self, request: Request) -> Session:
        excluded = [p for p in request.meta.get(PROXY_EXCLUDE_META) or () if p in self.proxies]
        job = self.job_of(request)
        # The session that just cleared this request: waited for once (it rests its rate
        # interval after the pass), then any.
        prefer = request.meta.pop(SESSION_PREFER_META, None)
        asks = 0
        while True:
            ask = partial(
                self.store.acquire, list(excluded), job=job, prefer=prefer if asks < 2 else None
            )
            got = await self.call(ask)
            asks += 1
            self._report_retired()
            if isinstance(got, Session):
                if self._reachable(got.proxy):
                    break
                # Another worker's proxy (or a direct session where this worker has
                # proxies): never send it another way; look past it (its use comes back
                # with its rate interval, a probe with its hold).
                excluded.append(got.proxy)
                continue
            if got is None:
                candidates = [p for p in self.proxies if p not in excluded] or list(self.proxies)
                create = partial(self.store.create, self.identity.to_dict(), candidates, job=job)
                created = await self.call(create)
                if created is None:
                    continue  # another worker filled the pool meanwhile
                got = created
                self.stats.inc_value("sessions/created")
                break
            assert isinstance(got, Wait)
            # A proxy this request failed on is avoided only while another is free now.
            excluded = []
            delay = min(got.seconds, self.wait_cap)
            self.stats.inc_value("sessions/waits")
            self.stats.inc_value("sessions/wait_ms", int(delay * 1000))
            await asyncio.sleep(delay)
        return got

    async def call(self, call: Callable[[], Awaitable[T]]) -> T:
        """One call to the pool, ridden through a Redis outage with the policy of every
        Redis write an item waits for (``DEDUP_RETRY_*``); then SessionStoreUnavailable
        (a download failure: the retry layer tries the request again later)."""
        return await self.retried.call(call, REDIS_ERRORS, _unavailable)

    def _reachable(self, proxy: str) -> bool:
        return proxy in self.proxies if self.proxies else not proxy

    # -- answers -----------------------------------------------------------------------------
    async def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(CHALLENGE_META):
            return response  # a session's browser fetch: its escalation judges it
        session_id = request.meta.get(SESSION_META)
        try:
            if session_id:
                await self._judge(request, response, session_id)
            elif not self.engaged and request.meta.get(SESSION_OPT_OUT_META) is not False:
                await self._without_session(request, response)
        except SessionStoreUnavailable as exc:
            # The page is the page: only the session's bookkeeping is lost (a session
            # retired later, a cookie missed); counted and said, not an error of the page.
            logger.warning("session %s not updated: %s", session_id, exc)
        return response

    async def _without_session(self, request: Request, response: Response) -> None:
        """A request sent before any defense was seen: a block is one, for every worker."""
        verdict = self.classifier.verdict(request, response)
        browser = self.browser.result(response)
        if browser is not None and browser.met:
            verdict = browser.met[0]  # the browser met one on the way (and may have passed)
        elif not verdict.is_block:
            return
        self.stats.inc_value("sessions/blocks_before")
        seen = f"{verdict.kind}: {verdict.reason}"
        await self.call(lambda: self.store.mark_defended(seen))
        self._engage(seen, request.url)

    async def _judge(self, request: Request, response: Response, session_id: str) -> None:
        """The session's fate by the answer (the module docstring)."""
        verdict = self.classifier.verdict(request, response)
        cookies = set_cookies(response, request)
        if cookies:
            await self.call(lambda: self.store.merge_cookies(session_id, cookies))
        browser = self.browser.result(response)
        if browser is not None:
            # A rendered page met a challenge and waited it out: what the browser did.
            await self.escalation.browser_result(request, session_id, browser, counted=False)
        elif verdict.kind == "challenge":
            if request.meta.get("playwright"):
                await self.escalation.rendered_challenged(request, session_id)
            else:
                await self.escalation.plain_challenged(request, session_id)
        elif verdict.kind in ("blocked", "captcha"):
            await self.retire(request, session_id, verdict.kind)
        elif verdict.kind == "throttled":
            pause = _seconds(response.headers.get(b"Retry-After")) or 0.0
            await self.record(request, session_id, "throttled", pause=pause)
        elif request.meta.get(SESSION_REPORT_META):
            await self.record(request, session_id, "ok")

    async def process_exception(self, request: Request, exception: Exception) -> None:
        session_id = request.meta.get(SESSION_META)
        if not session_id or request.meta.get(CHALLENGE_META):
            return
        if isinstance(exception, IgnoreRequest | SessionStoreUnavailable):
            return  # a decision of ours (robots.txt, a dropped block page): not the session
        try:
            await self.record(request, session_id, "error")
        except SessionStoreUnavailable as exc:
            logger.warning("session %s not updated: %s", session_id, exc)

    # -- the pool's bookkeeping, with the job's ledger --------------------------------------
    async def record(
        self, request: Request, session_id: str, outcome: Outcome, *, pause: float = 0.0
    ) -> None:
        job = self.job_of(request)
        await self.call(lambda: self.store.record(session_id, outcome, pause=pause, job=job))
        self._report_retired()

    async def retire(self, request: Request, session_id: str, reason: str) -> None:
        job = self.job_of(request)
        if await self.call(lambda: self.store.retire(session_id, reason, job=job)):
            self.stats.inc_value(f"sessions/retired/{reason}")
            logger.info("session %s retired: %s (%s)", session_id, reason, request.url)

    def _report_retired(self) -> None:
        """Count the sessions the pool retired by itself (uses, age, errors); their
        ledger records were written by the same step."""
        for retired in self.store.take_retired():
            self.stats.inc_value(f"sessions/retired/{retired.reason}")


class SessionStoreUnavailable(DownloadFailedError):
    """The session pool (Redis) stayed unreachable through every retry."""


def _unavailable(exc: BaseException) -> Exception:
    return SessionStoreUnavailable(f"session pool unreachable ({type(exc).__name__})")


def _seconds(raw: bytes | None) -> float | None:
    if not raw:
        return None
    try:
        return max(0.0, float(raw.decode("latin-1").strip()))
    except ValueError:
        return None
