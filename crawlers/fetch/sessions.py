"""Fetch sessions in the crawl: every request goes out as one visitor of the site, and a
JavaScript challenge is passed once, in Chromium, for the whole session.

``SessionMiddleware`` (a downloader middleware, on with ``SESSIONS_ENABLED``) takes a
session from the site's pool (``core.sessions``: Redis, shared by every worker, or memory
without ``REDIS_URL``) for each request, within the session's rate budget, and puts on
the request what makes it that visitor: its browser identity (``IDENTITY_META``, the
headers ``crawlers.fetch.identity.IdentityMiddleware`` sends and the TLS fingerprint of
the plain handler), its proxy and its cookies. A request waits while every session is
resting or busy and the pool is full.

The answer decides the session's fate, by the response's verdict (``core.blocks``):

- ok, or an error of the site (404, 5xx): a good visit; a new session is proven by it;
  cookies the answer sets join the session's jar;
- throttled (429): the session rests (``Retry-After``) and its error score rises;
- blocked or CAPTCHA: the session is retired at once (a CAPTCHA needs a person: never
  solved); the retry layer sends the request again, on another session;
- challenge: the request is fetched again in Chromium with the session's identity, proxy
  and cookies (context ``session:<id>``); the browser runs the challenge, and its cookie
  jar becomes the session's. Only one request holds a challenged session meanwhile
  (``begin_challenge``); others go to another session. The challenged answer goes on to
  the retry layer marked ``challenge_passed``: retried at once, as plain HTTP, with the
  cleared session. A browser that does not get past it retires the session.
- a network error counts against the session's error score.

With the frontier every event is recorded in the job's ledger (``crawlers.runtime.ledger``:
sessions created, challenges passed, sessions retired and why), so the report's figures
are exact after worker kills. Stats: ``sessions/created``, ``sessions/retired/<reason>``,
``sessions/challenges``, ``sessions/challenges_passed``, ``sessions/challenge_failed``,
``sessions/waits``, ``sessions/wait_ms``.

Cookies never appear in a log line or a stat.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError, IgnoreRequest
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings
from scrapy_playwright.page import PageMethod

from core.blocks import BlockRules, classify
from core.keys import REDIS_ERRORS
from core.sessions import (
    MemorySessionStore,
    Session,
    SessionPolicy,
    SessionStore,
    Wait,
    cookie_key,
)
from core.sessions_redis import RedisSessionStore
from crawlers.fetch.classify import ResponseClassifier, is_robots_txt_fetch
from crawlers.fetch.cookies import cookie_header, set_cookies
from crawlers.fetch.identity import IDENTITY_META, SESSION_META, identity_for
from crawlers.fetch.proxies import configured_proxies
from crawlers.fetch.redact import proxy_id
from crawlers.fetch.retry import (
    CHALLENGE_META,
    CHALLENGE_PASSED_META,
    COOKIE_HEADER_META,
    COOKIES_IN_META,
    LEDGER_SUFFIX_META,
    PROXY_EXCLUDE_META,
    REDIRECT_COOKIES_META,
    ROUND_METAS,
    SESSION_PROXY_META,
    SESSION_REPORT_META,
)
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.ledger import RetriedCalls, RetryPolicy
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Request meta the session layer sets and reads (with retry's CHALLENGE_META: this request
# passes its session's challenge; CHALLENGE_PASSED_META: the answer was a challenge, now
# passed).
COOKIES_OUT_META = "session_cookies_out"  # the browser's jar after a challenge pass
CHALLENGE_OUTCOME_META = "session_challenge_outcome"
SESSION_OPT_OUT_META = "session"  # False: this request goes out without a session
CHALLENGE_POLL = 0.25  # seconds between looks at a page running a challenge


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


# -- the browser's side of a challenge -----------------------------------------------------


async def wait_out_challenge(page: Page, rules: BlockRules, timeout: float, meta: dict) -> None:
    """A ``PageMethod``: let the page's challenge run (it navigates or reloads itself when
    done) until the page is no longer a challenge, or ``timeout`` seconds. The outcome (the
    verdict kind of the last page seen) goes to ``meta[CHALLENGE_OUTCOME_META]``, the
    context's cookies to ``meta[COOKIES_OUT_META]``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    kind = "challenge"
    while True:
        try:
            await page.wait_for_load_state("load", timeout=max(1.0, deadline - loop.time()) * 1000)
            content = await page.content()
        except PlaywrightError:  # the challenge navigated meanwhile: look again
            content = None
        if content is not None:
            kind = classify(200, {}, content, rules=rules).kind
            if kind != "challenge":
                break
        if loop.time() >= deadline:
            break
        await asyncio.sleep(CHALLENGE_POLL)
    meta[CHALLENGE_OUTCOME_META] = kind
    # The browser's jar (the challenge's clearance among it), for the session.
    meta[COOKIES_OUT_META] = await page.context.cookies()


class SessionMiddleware:
    def __init__(self, crawler: Crawler, store: SessionStore) -> None:
        self.crawler = crawler
        self.store = store
        settings = crawler.settings
        self.classifier = ResponseClassifier.of(crawler)
        self.ledger = CrawlServices.of(crawler).ledger
        self.identity = identity_for(crawler)
        self.proxies = {proxy_id(url): url for url in configured_proxies(settings)}
        self.wait_cap = settings.getfloat("SESSION_WAIT_MAX")
        self.challenge_timeout = settings.getfloat("SESSION_CHALLENGE_TIMEOUT")
        # Challenges are passed in Chromium; a site that renders nothing still may.
        self.challenges = settings.getbool("SESSION_PASS_CHALLENGES")
        self._acquiring = asyncio.Lock()
        self.retried = RetriedCalls(
            RetryPolicy.from_settings(settings),
            prefix="sessions/store",
            count=lambda name: crawler.stats.inc_value(name),  # type: ignore[union-attr]
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

    # -- requests ----------------------------------------------------------------------------
    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get(SESSION_OPT_OUT_META) is False or meta.get(CHALLENGE_META):
            return
        if meta.get(SESSION_META):
            # A redirect this visitor follows: the cookies the 3xx set join its jar.
            await self._redirected(request)
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

    async def _redirected(self, request: Request) -> None:
        found = request.meta.pop(REDIRECT_COOKIES_META, None)
        if not found:
            return
        url, values = found
        answer = Response(url, headers={b"Set-Cookie": values})
        cookies = set_cookies(answer, Request(url))
        if cookies:
            session_id = request.meta[SESSION_META]
            await self._store(lambda: self.store.merge_cookies(session_id, cookies))
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
        while True:
            got = await self._store(partial(self.store.acquire, list(excluded)))
            await self._report_retired(request)
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
                create = partial(self.store.create, self.identity.to_dict(), candidates)
                created = await self._store(create)
                if created is None:
                    continue  # another worker filled the pool meanwhile
                got = created
                self.stats.inc_value("sessions/created")
                await self._event(request, f"created:{created.id}")
                break
            assert isinstance(got, Wait)
            # A proxy this request failed on is avoided only while another is free now.
            excluded = []
            delay = min(got.seconds, self.wait_cap)
            self.stats.inc_value("sessions/waits")
            self.stats.inc_value("sessions/wait_ms", int(delay * 1000))
            await asyncio.sleep(delay)
        return got

    async def _store(self, call: Callable[[], Awaitable[T]]) -> T:
        """One call to the pool, ridden through a Redis outage with the policy of every
        Redis write an item waits for (``DEDUP_RETRY_*``); then SessionStoreUnavailable
        (a download failure: the retry layer tries the request again later)."""
        return await self.retried.call(call, REDIS_ERRORS, _unavailable)

    def _reachable(self, proxy: str) -> bool:
        return proxy in self.proxies if self.proxies else not proxy

    # -- answers -----------------------------------------------------------------------------
    async def process_response(self, request: Request, response: Response) -> Response:
        session_id = request.meta.get(SESSION_META)
        if not session_id or request.meta.get(CHALLENGE_META):
            return response
        try:
            await self._judge(request, response, session_id)
        except SessionStoreUnavailable as exc:
            # The page is the page: only the session's bookkeeping is lost (a session
            # retired later, a cookie missed); counted and said, not an error of the page.
            logger.warning("session %s not updated: %s", session_id, exc)
        return response

    async def _judge(self, request: Request, response: Response, session_id: str) -> None:
        """The session's fate by the answer (the module docstring)."""
        verdict = self.classifier.verdict(request, response)
        cookies = set_cookies(response, request)
        if cookies:
            await self._store(lambda: self.store.merge_cookies(session_id, cookies))
        if verdict.kind == "challenge":
            await self._challenged(request, session_id)
        elif verdict.kind in ("blocked", "captcha"):
            await self._retire(request, session_id, verdict.kind)
        elif verdict.kind == "throttled":
            pause = _seconds(response.headers.get(b"Retry-After")) or 0.0
            await self._store(lambda: self.store.record(session_id, "throttled", pause=pause))
            await self._report_retired(request)
        elif request.meta.get(SESSION_REPORT_META):
            await self._store(lambda: self.store.record(session_id, "ok"))

    async def process_exception(self, request: Request, exception: Exception) -> None:
        session_id = request.meta.get(SESSION_META)
        if not session_id or request.meta.get(CHALLENGE_META):
            return
        if isinstance(exception, IgnoreRequest | SessionStoreUnavailable):
            return  # a decision of ours (robots.txt, a dropped block page): not the session
        try:
            await self._store(lambda: self.store.record(session_id, "error"))
            await self._report_retired(request)
        except SessionStoreUnavailable as exc:
            logger.warning("session %s not updated: %s", session_id, exc)

    async def _challenged(self, request: Request, session_id: str) -> None:
        """Pass the session's challenge in the browser, or retire the session."""
        self.stats.inc_value("sessions/challenges")
        if request.meta.get("playwright") or not self.challenges or is_robots_txt_fetch(request):
            # The browser itself was challenged (it did not get past), or no browser may try.
            await self._retire(request, session_id, "challenge")
            return
        if not await self._store(lambda: self.store.begin_challenge(session_id)):
            # Another request is passing it: this one is retried on another session.
            request.meta[CHALLENGE_PASSED_META] = True
            return
        probe = self._challenge_request(request, session_id)
        try:
            await self.crawler.engine.download_async(probe)  # type: ignore[union-attr]
        except Exception as exc:  # a crash or timeout of the browser: the session may live
            logger.warning(
                "passing the challenge of %s failed: %s", request.url, type(exc).__name__
            )
        outcome = probe.meta.get(CHALLENGE_OUTCOME_META, "error")
        cookies = probe.meta.get(COOKIES_OUT_META) or []
        if outcome not in ("challenge", "blocked", "captcha", "error") and cookies:
            generation = await self._store(lambda: self.store.challenge_passed(session_id, cookies))
            if generation:
                self.stats.inc_value("sessions/challenges_passed")
                await self._event(request, f"passed:{session_id}:{generation}")
                request.meta[CHALLENGE_PASSED_META] = True
            return
        self.stats.inc_value("sessions/challenge_failed")
        if outcome == "error":
            await self._store(lambda: self.store.record(session_id, "error"))
            await self._report_retired(request)
        else:
            await self._retire(request, session_id, f"challenge_{outcome}")

    def _challenge_request(self, request: Request, session_id: str) -> Request:
        """The request again, rendered in the session's browser context, never retried
        (the session layer judges it) and recorded in the ledger apart from the original."""
        meta = {
            key: value
            for key, value in request.meta.items()
            # the job, the visitor, and the attempt's rounds (its ledger record's name)
            if key in (JOB_META, SESSION_META, IDENTITY_META, COOKIES_IN_META, "proxy")
            or key in ROUND_METAS
        }
        meta.update(
            {
                "playwright": True,
                CHALLENGE_META: True,
                "dont_retry": True,
                LEDGER_SUFFIX_META: ":b",
                "handle_httpstatus_all": True,
            }
        )
        probe = Request(request.url, meta=meta, dont_filter=True, priority=request.priority)
        # The page method writes the outcome into the probe's own meta.
        probe.meta["playwright_page_methods"] = [
            PageMethod(
                wait_out_challenge, self.classifier.rules, self.challenge_timeout, probe.meta
            )
        ]
        return probe

    async def _retire(self, request: Request, session_id: str, reason: str) -> None:
        if await self._store(lambda: self.store.retire(session_id, reason)):
            self.stats.inc_value(f"sessions/retired/{reason}")
            await self._event(request, f"retired:{session_id}", reason)
            logger.info("session %s retired: %s (%s)", session_id, reason, request.url)

    async def _report_retired(self, request: Request) -> None:
        for retired in self.store.take_retired():
            self.stats.inc_value(f"sessions/retired/{retired.reason}")
            await self._event(request, f"retired:{retired.id}", retired.reason)

    async def _event(self, request: Request, event: str, value: str = "1") -> None:
        job_id = request.meta.get(JOB_META)
        if self.ledger is not None and job_id:
            await self.ledger.session_event(str(job_id), event, value)


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
