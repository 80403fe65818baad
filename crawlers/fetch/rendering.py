"""JavaScript rendering with scrapy-playwright that never hangs, through rotating proxies.

``ResilientPlaywrightHandler`` is the http/https download handler: plain requests go to
``ImpersonatingHandler`` (or Scrapy's HTTP/1.1 handler with ``FETCH_IDENTITY = "crawler"``),
rendered ones (``meta["playwright"]``, set by ``RenderMiddleware``) to scrapy-playwright,
with a hard wall-clock limit, crash recovery, one context per proxy and fetch session,
bounded contexts with page reuse, challenges waited out and resources aborted. It uses
only scrapy-playwright's public API.

Reads: ``RENDER_HARD_TIMEOUT``, ``RENDER_RESTART_AFTER_TIMEOUTS``,
``RENDER_ABORT_RESOURCE_TYPES``, the ``PLAYWRIGHT_*`` settings, ``render_keep_resources``
meta. Details and stats: docs/fetching.md "Rendering (scrapy-playwright, Debian's
Chromium)" and "The hard limit and crash recovery".
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from playwright.async_api import Browser, Page
from playwright.async_api import Error as PlaywrightError
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError, DownloadTimeoutError
from scrapy.http import Request, Response
from scrapy.utils.misc import load_object
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawlers.fetch.browser import abort_request
from crawlers.fetch.browser_pool import CLOSE_TIMEOUT, BrowserPool, close_quietly
from crawlers.fetch.challenge import ChallengeWatch
from crawlers.fetch.contexts import (
    CONTEXT_KWARGS_META,
    CONTEXT_META,
    DEFAULT_CONTEXT,
    SessionCookies,
    context_options,
    launch_options,
    route_through_proxy,
    route_to_session,
)
from crawlers.fetch.identity import identity_for
from crawlers.fetch.impersonate import ImpersonatingHandler, ResponseHeadersRefused
from crawlers.fetch.redact import redact
from crawlers.fetch.retry import CHALLENGE_META

logger = logging.getLogger(__name__)

KEEP_RESOURCES_META = "render_keep_resources"
# scrapy-playwright's documented request meta keys (the context's: crawlers.fetch.contexts).
PAGE_META = "playwright_page"
INCLUDE_PAGE_META = "playwright_include_page"
PAGE_INIT_META = "playwright_page_init_callback"
CHALLENGE_ABORTS = frozenset({"stylesheet", "image", "font", "media"})
SHUTDOWN_TIMEOUT = 30.0  # seconds for scrapy-playwright to close the browser at the end
PLAYWRIGHT_LOGGER = "scrapy-playwright"

PageInit = Callable[[Page, Request], Awaitable[Any]]


class RenderTimeout(DownloadTimeoutError):
    """A browser request passed the hard wall-clock limit."""


class BrowserCrashedError(DownloadFailedError):
    """The browser died while this request was in it."""


class RenderFailedError(DownloadFailedError):
    """Playwright failed the request; ``network`` when navigation hit a network error."""

    # Constructible without arguments: Scrapy's get_retry_request instantiates a reason
    # given as a class (BlockRetryMiddleware passes the class, for the stat's name).
    def __init__(self, message: str = "", *, network: bool = False) -> None:
        super().__init__(message)
        self.network = network


def quiet_playwright_logger(log_level: str | int | None) -> None:
    """scrapy-playwright attaches a logging listener to every page's request and response
    events when its logger's level lets DEBUG through, and Scrapy's LOG_LEVEL filters only
    at the handler: without a level of its own the listeners ran for every browser request,
    each asking the driver for the request's headers, for lines nobody saw. The logger
    gets INFO unless the crawl logs at DEBUG or someone set its level already."""
    playwright_logger = logging.getLogger(PLAYWRIGHT_LOGGER)
    debug = str(log_level or "").upper() in ("DEBUG", str(logging.DEBUG))
    if not debug and playwright_logger.level == logging.NOTSET:
        playwright_logger.setLevel(logging.INFO)


class ResilientPlaywrightHandler(ScrapyPlaywrightDownloadHandler):
    # One browser per crawler: http and https get a handler instance each from Scrapy;
    # the second hands its browser requests to the first.
    _primary: ClassVar[weakref.WeakKeyDictionary[Crawler, ResilientPlaywrightHandler]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        quiet_playwright_logger(settings.get("LOG_LEVEL"))
        # 0 (or unset) disables the limit rather than failing every request at once.
        self.hard_timeout = settings.getfloat("RENDER_HARD_TIMEOUT") or None
        self.restart_after_timeouts = settings.getint("RENDER_RESTART_AFTER_TIMEOUTS")
        # Pages stay open between requests of a context: a new page costs Chromium a
        # renderer process, navigating an open one does not.
        self.reuse_pages = settings.getbool("RENDER_REUSE_PAGES")
        self.abort_types = frozenset(settings.getlist("RENDER_ABORT_RESOURCE_TYPES"))
        abort_request.frameless = self.abort_types
        self.pool = BrowserPool(
            crawler.stats,
            max_contexts=settings.getint("PLAYWRIGHT_MAX_CONTEXTS"),
            # scrapy-playwright's own fallback for an unset limit
            max_pages_per_context=settings.getint("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT")
            or settings.getint("CONCURRENT_REQUESTS"),
            page_max_uses=settings.getint("RENDER_PAGE_MAX_USES"),
            close_strays=not settings.getdict("PLAYWRIGHT_CONTEXTS"),
        )
        self._inflight: dict[asyncio.Task[Response], Request] = {}
        self._crash_cancelled: set[asyncio.Task[Response]] = set()
        self._pages: dict[int, Page] = {}  # by id(request): the page it renders in
        self._browsers: weakref.WeakSet[Browser] = weakref.WeakSet()  # disconnect watched
        self.session_cookies = SessionCookies()
        self.challenges = ChallengeWatch.of(crawler)
        self._recycled: weakref.WeakSet[Browser] = weakref.WeakSet()
        self._consecutive_timeouts = 0
        self._closing = False
        self.idle_close = settings.getfloat("RENDER_BROWSER_IDLE_CLOSE")
        self._last_render = 0.0
        self._idle_watch: asyncio.Future[None] | None = None
        # Cleared while a hung browser is being closed: new requests wait for the next one.
        self._not_recycling = asyncio.Event()
        self._not_recycling.set()
        primary = self._primary.get(crawler)
        # Plain requests: curl_cffi with the browser's fingerprint, or Scrapy's HTTP/1.1
        # handler (super()) for FETCH_IDENTITY=crawler. One session pool for both schemes.
        self.plain: ImpersonatingHandler | None = None
        if primary is not None:
            self.plain = primary.plain
        elif settings.get("FETCH_IDENTITY") == "browser":
            self.plain = ImpersonatingHandler.from_crawler(crawler)
        browser = settings.get("FETCH_IDENTITY") == "browser"
        identity = identity_for(crawler) if browser else None
        self.context_options = context_options(
            identity.user_agent if identity else settings["USER_AGENT"],
            verify=settings.getbool("FETCH_TLS_VERIFY"),
        )
        self.config.launch_options = launch_options(self.config.launch_options, identity)
        # What plain requests say; checked once against what Chromium sent.
        self.accept_language = identity.accept_language if identity else None
        self._primary.setdefault(crawler, self)

    # -- the guarded download -----------------------------------------------------------
    async def download_request(self, request: Request) -> Response:
        if not request.meta.get("playwright"):
            if self.plain is not None:
                try:
                    return await self.plain.download_request(request)
                except ResponseHeadersRefused:
                    # Headers a browser reads but curl does not: Scrapy's HTTP/1.1 client
                    # reads them (crawlers.fetch.header_limit).
                    self.crawler.stats.inc_value("impersonate/headers_fallback")
            return await super().download_request(request)
        primary = self._primary.get(self.crawler, self)
        if primary is not self:
            return await primary.download_request(request)
        stats = self.crawler.stats
        stats.inc_value("render/requests")
        meta = request.meta
        own_kwargs = meta.get(CONTEXT_KWARGS_META)
        # A context is made with these on the first request naming it (the spider's own
        # options win); the proxy's are added next.
        meta[CONTEXT_KWARGS_META] = {**self.context_options, **(own_kwargs or {})}
        route_through_proxy(request)
        route_to_session(request)
        # Pool pages unless the spider manages the request's page itself, or the page only
        # passes a session's challenge (one per session: nothing to reuse it for).
        reuse = self.reuse_pages and not (
            meta.get(INCLUDE_PAGE_META) or meta.get(PAGE_META) or meta.get(CHALLENGE_META)
        )
        if reuse:
            meta[INCLUDE_PAGE_META] = True  # scrapy-playwright leaves it open
        spider_init = meta.get(PAGE_INIT_META)
        meta[PAGE_INIT_META] = self._page_init(spider_init)
        self.challenges.prepare(request)
        task = asyncio.ensure_future(self._admitted_download(request, reuse))
        self._inflight[task] = request
        self._watch_idle()
        try:
            done, _ = await asyncio.wait({task}, timeout=self.hard_timeout)
            if not done:
                await self._abandon(task, request)
            if task in self._crash_cancelled or task.cancelled():
                stats.inc_value("render/cancelled_by_crash")
                raise BrowserCrashedError(f"browser died while rendering {request.url}")
            try:
                response = task.result()
            except PlaywrightError as exc:
                raise self._failure(exc) from None
            # A challenge met on the way was waited out: the page it ended on, counted.
            response = await self.challenges.account(request, response)
            self._consecutive_timeouts = 0
            stats.inc_value("render/ok")
            self._check_languages(request)
            return response
        except asyncio.CancelledError:
            task.cancel()  # the crawl is stopping: do not leave the page behind
            raise
        finally:
            self._inflight.pop(task, None)
            self._crash_cancelled.discard(task)
            self._pages.pop(id(request), None)
            self.challenges.release(request)
            # Nothing of this attempt stays in the meta a retry (or a disk queue) gets.
            if spider_init is None:
                meta.pop(PAGE_INIT_META, None)
            else:
                meta[PAGE_INIT_META] = spider_init
            if reuse:
                meta.pop(PAGE_META, None)
                meta.pop(INCLUDE_PAGE_META, None)
            # The spider's own context options, without a proxy: the credentials were for
            # this attempt only; a retry gets its own proxy.
            if own_kwargs is None:
                meta.pop(CONTEXT_KWARGS_META, None)
            else:
                meta[CONTEXT_KWARGS_META] = {k: v for k, v in own_kwargs.items() if k != "proxy"}

    def _check_languages(self, request: Request) -> None:
        """Chromium expands its language list its own way (``es,en`` becomes
        ``es-ES,es;q=0.9``): once per crawl, the Accept-Language it sent on a navigation
        (scrapy-playwright puts the browser's headers on the request) is compared with
        what plain requests send, and a difference is said with the value to set."""
        expected, self.accept_language = self.accept_language, None
        sent = request.headers.get(b"Accept-Language")
        if expected is None or sent is None:
            self.accept_language = expected  # not known yet: the next response tells
            return
        if sent.decode("latin-1") != expected:
            self.crawler.stats.inc_value("render/accept_language_mismatch")
            logger.warning(
                "Chromium sends Accept-Language %r where plain requests send %r: set "
                "BROWSER_ACCEPT_LANGUAGE=%r so both present the same browser",
                sent.decode("latin-1"),
                expected,
                sent.decode("latin-1"),
            )

    async def _admitted_download(self, request: Request, reuse: bool) -> Response:
        name = request.meta.setdefault(CONTEXT_META, DEFAULT_CONTEXT)
        await self._not_recycling.wait()
        async with self.pool.admitted(name):
            if not reuse:
                return await super().download_request(request)
            return await self._download_in_pooled_page(request, name)

    async def _download_in_pooled_page(self, request: Request, name: str) -> Response:
        meta = request.meta
        pooled = self.pool.take_page(name)
        if pooled is not None:
            meta[PAGE_META] = pooled[0]
        done = False
        try:
            response = await super().download_request(request)
            done = True
            return response
        finally:
            page = meta.pop(PAGE_META, None)
            if page is not None:
                uses = pooled[1] + 1 if pooled is not None and pooled[0] is page else 1
                await self.pool.release_page(name, page, uses, keep=done)

    def _page_init(self, spider_init: PageInit | str | None) -> PageInit:
        """The request's page init callback: scrapy-playwright calls it with the page that
        serves the request (a new one or the pooled one), before navigating."""

        async def page_init(page: Page, request: Request) -> None:
            self._pages[id(request)] = page
            keep = request.meta.get(KEEP_RESOURCES_META)
            types = frozenset() if keep else self.abort_types
            if request.meta.get(CHALLENGE_META):
                # The page only passes a challenge (its script, its fetches, the reload):
                # what it shows is not read.
                types = types | CHALLENGE_ABORTS
            abort_request.assign(page, types)
            self.challenges.watch(page, request)
            self.pool.learn(request.meta.get(CONTEXT_META, DEFAULT_CONTEXT), page)
            self._watch(page.context.browser)
            await self.session_cookies.load(page, request)
            if spider_init is not None:
                await load_object(spider_init)(page, request)

        return page_init

    def _watch(self, browser: Browser | None) -> None:
        if browser is not None and browser not in self._browsers:
            self._browsers.add(browser)
            browser.on("disconnected", self._browser_disconnected)

    async def _abandon(self, task: asyncio.Task[Response], request: Request) -> None:
        """The hard limit passed: cancel, close the page, maybe recycle the browser; raise."""
        task.cancel()
        await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        page = self._pages.pop(id(request), None)
        if page is not None and not page.is_closed():
            await close_quietly(page)
        self.crawler.stats.inc_value("render/hard_timeouts")
        self._consecutive_timeouts += 1
        logger.warning(
            "browser request passed the hard limit of %gs: %s (context %s)",
            self.hard_timeout,
            request.url,
            request.meta.get(CONTEXT_META),
        )
        limit = self.restart_after_timeouts
        if limit and self._consecutive_timeouts >= limit:
            self._consecutive_timeouts = 0
            await self._recycle_browser("hard timeouts in a row")
        raise RenderTimeout(f"rendering {request.url} took over {self.hard_timeout:g}s")

    def _failure(self, exc: PlaywrightError) -> RenderFailedError:
        message = redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        network = "net::ERR_" in message
        name = type(exc).__name__ if not network else "network"
        self.crawler.stats.inc_value(f"render/failed/{name}")
        return RenderFailedError(message, network=network)

    # -- browser death ----------------------------------------------------------------------
    def _browser_disconnected(self, browser: Browser) -> None:
        """Playwright's ``disconnected`` event. Synchronous, so it runs before
        scrapy-playwright's own listener lets a new browser start: no request can slip
        from the dead browser into the new one's bookkeeping."""
        if self._closing:
            return  # our own shutdown
        if browser in self._recycled:
            return  # _recycle_browser closed it, and forgot it already
        self.crawler.stats.inc_value("render/browser_crashes")
        logger.warning(
            "browser disconnected: relaunching; %d browser requests in flight are retried",
            len(self._inflight),
        )
        self._forget_browser()

    def _watch_idle(self) -> None:
        """Chromium costs CPU even idle (about 3% of a core with a few contexts): a crawl
        that renders now and then (challenges, samples) closes it after
        ``RENDER_BROWSER_IDLE_CLOSE`` seconds without a browser request; the next one
        launches it again."""
        self._last_render = asyncio.get_running_loop().time()
        if self.idle_close and (self._idle_watch is None or self._idle_watch.done()):
            self._idle_watch = asyncio.ensure_future(self._close_when_idle())

    async def _close_when_idle(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closing:
            quiet = loop.time() - self._last_render
            if not self._inflight and quiet >= self.idle_close:
                browser = self.pool.browser
                if browser is not None and browser.is_connected():
                    self.crawler.stats.inc_value("render/browser_idle_closed")
                    await self._recycle_browser(f"idle for {quiet:.0f}s", quiet=True)
                return
            await asyncio.sleep(max(0.5, self.idle_close - quiet if not self._inflight else 1.0))

    async def _recycle_browser(self, reason: str, *, quiet: bool = False) -> None:
        browser = self.pool.browser
        if browser is None or not browser.is_connected():
            return
        if quiet:
            logger.info("closing the browser: %s", reason)
        else:
            self.crawler.stats.inc_value("render/browser_recycled")
            logger.warning("recycling the browser: %s", reason)
        self._recycled.add(browser)
        self._not_recycling.clear()
        try:
            self._forget_browser()
            # Its disconnected event makes scrapy-playwright launch a new one when needed.
            await close_quietly(browser)
        finally:
            self._not_recycling.set()

    def _forget_browser(self) -> None:
        """Fail the requests in the browser and start the pool afresh; scrapy-playwright
        relaunches the browser on the next request."""
        self.pool.forget()
        self._pages.clear()
        for task in list(self._inflight):
            if not task.done():
                self._crash_cancelled.add(task)
                task.cancel()

    async def close(self) -> None:
        self._closing = True
        if self._idle_watch is not None:
            self._idle_watch.cancel()
        if self.plain is not None and self._primary.get(self.crawler) is self:
            await self.plain.close()  # the other scheme's handler shares it
        for task in list(self._inflight):
            task.cancel()
        try:
            await asyncio.wait_for(super().close(), SHUTDOWN_TIMEOUT)
        except Exception:  # a dead or hung browser must not fail the crawl's shutdown
            logger.warning("the browser did not close cleanly", exc_info=True)
