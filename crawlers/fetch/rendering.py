"""JavaScript rendering with scrapy-playwright that never hangs, through rotating proxies.

``RenderMiddleware`` decides which requests a browser renders, from ``RENDER_MODE`` (the
site profile's ``render``: ``never`` | ``always`` | ``per_request``) and a request's
``render`` meta (True/False). ``ResilientPlaywrightHandler`` is scrapy-playwright's
download handler with what production needs on top:

- **a hard wall-clock limit** (``RENDER_HARD_TIMEOUT`` seconds) on every browser request,
  from waiting for a context to the page's content: past it the request fails with
  ``RenderTimeout`` (a ``DownloadTimeoutError``, so it is retried) and its page is
  closed. Scrapy's DOWNLOAD_TIMEOUT does not apply to Playwright requests.
- **crash recovery**: when Chromium dies (OOM killer, ``kill -9``), scrapy-playwright
  relaunches it but requests in flight could wait forever on the dead browser's context
  semaphore, and late close events of dead contexts could drop the new ones. Here the
  in-flight requests fail at once with ``BrowserCrashedError`` (retried), the context
  bookkeeping starts afresh, and only a context's own close event releases its slot.
  ``RENDER_RESTART_AFTER_TIMEOUTS`` hard timeouts in a row recycle a hung browser.
- **one context per proxy**: scrapy-playwright ignores ``meta["proxy"]``; a proxied
  browser request goes to a context named after its proxy (``proxy:host:port``) created
  with Playwright's ``proxy`` option. The credentials are taken from the request's
  ``Proxy-Authorization`` header (which is removed: the target site never sees it) and
  are not left in the request's meta.
- **bounded contexts**: at ``PLAYWRIGHT_MAX_CONTEXTS`` a new context first closes the
  least recently used idle one (scrapy-playwright never closes contexts, so more proxies
  than contexts used to wait forever).
- **page reuse**: a finished page goes back to its context's pool and the next request
  navigates it (``RENDER_REUSE_PAGES``); pages are closed after ``RENDER_PAGE_MAX_USES``
  uses or any failure. A new page costs Chromium a renderer process.
- **resource blocking**: ``RENDER_ABORT_RESOURCE_TYPES`` (image, font, media by default)
  are aborted, unless the site sets ``PLAYWRIGHT_ABORT_REQUEST`` itself or a request
  has ``render_keep_resources`` meta.
- **lazy start**: the Playwright driver and Chromium start with the first rendered
  request, so the handler can be installed for every site at no cost.

Stats: ``render/requests``, ``render/ok``, ``render/hard_timeouts``,
``render/browser_crashes``, ``render/cancelled_by_crash``, ``render/browser_recycled``,
``render/contexts_evicted``, ``render/pages_reused``, ``render/failed/<error>``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request as PlaywrightRequest
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError, DownloadTimeoutError
from scrapy.http import Request, Response
from scrapy_playwright.handler import (
    DEFAULT_CONTEXT_NAME,
    ScrapyPlaywrightDownloadHandler,
)

from crawlers.fetch.redact import credential_tag, proxy_for_playwright, proxy_id, redact

logger = logging.getLogger(__name__)

RENDER_MODES = ("never", "always", "per_request")
RENDER_META = "render"
KEEP_RESOURCES_META = "render_keep_resources"
_CLOSE_TIMEOUT = 5.0


class RenderTimeout(DownloadTimeoutError):
    """A browser request passed the hard wall-clock limit."""


class BrowserCrashedError(DownloadFailedError):
    """The browser died while this request was in it."""


class RenderFailedError(DownloadFailedError):
    """Playwright failed the request; ``network`` when navigation hit a network error."""

    def __init__(self, message: str, *, network: bool) -> None:
        super().__init__(message)
        self.network = network


def wants_render(mode: str, request: Request) -> bool:
    """Whether ``request`` is rendered under the site's render ``mode``."""
    explicit = request.meta.get(RENDER_META)
    if mode == "never":
        return False
    if mode == "per_request":
        return bool(explicit)
    # always: every page, except what asks not to be and robots.txt (plain text for
    # Scrapy's robots parser, not a DOM dump).
    return explicit is not False and not request.url.endswith("/robots.txt")


class RenderMiddleware:
    """Sets ``meta["playwright"]`` on the requests the site's render mode says to render."""

    def __init__(self, crawler: Crawler) -> None:
        self.mode = str(crawler.settings.get("RENDER_MODE") or "never")
        if self.mode not in RENDER_MODES:
            raise ValueError(f"RENDER_MODE must be one of {RENDER_MODES}, got {self.mode!r}")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if wants_render(self.mode, request):
            request.meta["playwright"] = True
        elif request.meta.get(RENDER_META) is False:
            request.meta.pop("playwright", None)


def _basic_credentials(header: bytes | None) -> tuple[str, str] | None:
    if not header or not header.startswith(b"Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
    except ValueError:
        return None
    return user, password


class ResilientPlaywrightHandler(ScrapyPlaywrightDownloadHandler):
    # One browser per crawler: http and https get a handler instance each from Scrapy;
    # the second hands its browser requests to the first.
    _primary: ClassVar[weakref.WeakKeyDictionary[Crawler, ResilientPlaywrightHandler]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.hard_timeout = settings.getfloat("RENDER_HARD_TIMEOUT", 90.0)
        self.restart_after_timeouts = settings.getint("RENDER_RESTART_AFTER_TIMEOUTS", 3)
        # Pages stay open between requests of a context: a new page costs Chromium a
        # renderer process, navigating an open one does not.
        self.reuse_pages = settings.getbool("RENDER_REUSE_PAGES", True)
        self.page_max_uses = settings.getint("RENDER_PAGE_MAX_USES", 20)
        if not settings.get("PLAYWRIGHT_ABORT_REQUEST"):
            self.abort_types = frozenset(settings.getlist("RENDER_ABORT_RESOURCE_TYPES"))
            if self.abort_types:
                self.abort_request = self._abort_by_type
        self._launch_lock = asyncio.Lock()
        self._launched = False
        self._inflight: dict[asyncio.Task[Response], Request] = {}
        self._crash_cancelled: set[asyncio.Task[Response]] = set()
        self._pages: dict[int, Page] = {}  # by id(request): the page it renders in
        self._keep_resources: weakref.WeakSet[Page] = weakref.WeakSet()
        self._last_used: dict[str, float] = {}
        self._users: Counter[str] = Counter()  # browser requests admitted, per context
        self._released = asyncio.Event()  # set (and replaced) when a request ends
        # Per context: PLAYWRIGHT_MAX_PAGES_PER_CONTEXT slots, held by requests (a pooled
        # idle page holds none), and the idle pages with their use counts.
        self._page_slots: dict[str, asyncio.Semaphore] = {}
        self._idle_pages: dict[str, list[tuple[Page, int]]] = {}
        self._consecutive_timeouts = 0
        self._closing = False
        self._primary.setdefault(crawler, self)

    # -- lazy start ---------------------------------------------------------------------
    async def _maybe_launch_in_thread(self) -> None:
        """Not at engine start: a site that renders nothing never starts a browser."""

    async def _ensure_launched(self) -> None:
        async with self._launch_lock:
            if not self._launched:
                await self._launch()
                self._launched = True

    # -- the guarded download -----------------------------------------------------------
    async def download_request(self, request: Request) -> Response:
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        primary = self._primary.get(self._crawler, self)
        if primary is not self:
            return await primary.download_request(request)
        await self._ensure_launched()
        stats = self.stats
        stats.inc_value("render/requests")
        self._route_through_proxy(request)
        meta = request.meta
        # Pool pages unless the spider manages the request's page itself.
        reuse = self.reuse_pages and not (
            meta.get("playwright_include_page") or meta.get("playwright_page")
        )
        if reuse:
            meta["playwright_include_page"] = True  # scrapy-playwright leaves it open
        task = asyncio.ensure_future(self._admitted_download(request, reuse))
        self._inflight[task] = request
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
            self._consecutive_timeouts = 0
            stats.inc_value("render/ok")
            return response
        except asyncio.CancelledError:
            task.cancel()  # the crawl is stopping: do not leave the page behind
            raise
        finally:
            self._inflight.pop(task, None)
            self._crash_cancelled.discard(task)
            self._pages.pop(id(request), None)
            if reuse:
                # The page never reaches the spider, nor a queue in a retry's meta.
                meta.pop("playwright_page", None)
                meta.pop("playwright_include_page", None)
            # The credentials were for this attempt only; a retry gets its own proxy.
            kwargs = meta.get("playwright_context_kwargs")
            if isinstance(kwargs, dict) and "proxy" in kwargs:
                meta["playwright_context_kwargs"] = {
                    k: v for k, v in kwargs.items() if k != "proxy"
                }

    async def _admitted_download(self, request: Request, reuse: bool) -> Response:
        name = request.meta.setdefault("playwright_context", DEFAULT_CONTEXT_NAME)
        admitted = False
        try:
            await self._admit(name)
            admitted = True
            slots = self._page_slots.setdefault(
                name, asyncio.Semaphore(self.config.max_pages_per_context)
            )
            async with slots:
                if not reuse:
                    return await self._download_request(request)
                return await self._download_in_pooled_page(request, name)
        finally:
            if admitted:
                self._users[name] -= 1
                if not self._users[name]:
                    del self._users[name]
            self._released.set()
            self._released = asyncio.Event()

    async def _download_in_pooled_page(self, request: Request, name: str) -> Response:
        meta = request.meta
        pooled = self._take_page(name)
        if pooled is not None:
            meta["playwright_page"] = pooled[0]
            self._pages[id(request)] = pooled[0]
            if meta.get(KEEP_RESOURCES_META):
                self._keep_resources.add(pooled[0])
        done = False
        try:
            response = await self._download_request(request)
            done = True
            return response
        finally:
            page = meta.pop("playwright_page", None)
            if page is not None:
                uses = pooled[1] + 1 if pooled is not None and pooled[0] is page else 1
                await self._release_page(name, page, uses, keep=done)

    def _take_page(self, name: str) -> tuple[Page, int] | None:
        pool = self._idle_pages.get(name)
        while pool:
            page, uses = pool.pop()
            if not page.is_closed():
                self.stats.inc_value("render/pages_reused")
                return page, uses
        return None

    async def _release_page(self, name: str, page: Page, uses: int, *, keep: bool) -> None:
        """Back to the context's pool after a success; closed after a failure (its state is
        unknown), after RENDER_PAGE_MAX_USES, or when its context is gone."""
        self._keep_resources.discard(page)
        wrapper = self.context_wrappers.get(name)
        if (
            keep
            and uses < self.page_max_uses
            and not page.is_closed()
            and wrapper is not None
            and page.context is wrapper.context
        ):
            self._idle_pages.setdefault(name, []).append((page, uses))
            return
        if not page.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(page.close(), _CLOSE_TIMEOUT)
            self.stats.inc_value("playwright/page_count/closed")

    async def _admit(self, name: str) -> None:
        """Reserve the request's context within PLAYWRIGHT_MAX_CONTEXTS.

        A context is taken from the moment a request is admitted to it, not only once it
        has pages (scrapy-playwright creates the page after the context). At the limit,
        the least recently used context without requests is closed; if every context is
        busy, the request waits for one to free up, holding no lock meanwhile (the hard
        limit bounds the wait). scrapy-playwright never closes a context itself: more
        proxies than contexts used to block its context semaphore for good.
        """
        limit = self.config.max_contexts
        while True:
            occupied = set(self.context_wrappers) | set(self._users)
            if name in occupied or not limit or len(occupied) < limit:
                self._users[name] += 1
                self._last_used[name] = time.monotonic()
                return
            idle = [
                (self._last_used.get(other, 0.0), other)
                for other, wrapper in self.context_wrappers.items()
                if other not in self._users
                and not wrapper.persistent
                # open pages are the pool's only (a spider-held page keeps its context)
                and len(wrapper.context.pages) <= len(self._idle_pages.get(other, ()))
            ]
            if not idle:
                await self._released.wait()
                continue
            _, victim = min(idle)
            wrapper = self.context_wrappers.pop(victim)
            self._idle_pages.pop(victim, None)
            self._page_slots.pop(victim, None)
            self.stats.inc_value("render/contexts_evicted")
            logger.debug("closing idle browser context %s to make room for %s", victim, name)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(wrapper.context.close(), _CLOSE_TIMEOUT)

    async def _abandon(self, task: asyncio.Task[Response], request: Request) -> None:
        """The hard limit passed: cancel, close the page, maybe recycle the browser; raise."""
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, _CLOSE_TIMEOUT)
        page = self._pages.pop(id(request), None)
        if page is not None and not page.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(page.close(), _CLOSE_TIMEOUT)
        self.stats.inc_value("render/hard_timeouts")
        self._consecutive_timeouts += 1
        logger.warning(
            "browser request passed the hard limit of %.0fs: %s (context %s)",
            self.hard_timeout,
            request.url,
            request.meta.get("playwright_context"),
        )
        limit = self.restart_after_timeouts
        if limit and self._consecutive_timeouts >= limit:
            self._consecutive_timeouts = 0
            await self._recycle_browser("hard timeouts in a row")
        raise RenderTimeout(f"rendering {request.url} took over {self.hard_timeout:.0f}s")

    def _failure(self, exc: PlaywrightError) -> RenderFailedError:
        message = redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        network = "net::ERR_" in message
        name = type(exc).__name__ if not network else "network"
        self.stats.inc_value(f"render/failed/{name}")
        return RenderFailedError(message, network=network)

    def _route_through_proxy(self, request: Request) -> None:
        """A proxied browser request goes to its proxy's context (Playwright ``proxy``)."""
        proxy = request.meta.get("proxy")
        if not proxy:
            return
        # HttpProxyMiddleware moved the credentials into this header; Chromium must not
        # send it to the site, and the context gets them as Playwright options instead.
        credentials = _basic_credentials(request.headers.get(b"Proxy-Authorization"))
        request.headers.pop(b"Proxy-Authorization", None)
        option = {"server": proxy_for_playwright(proxy)["server"]}
        name = f"proxy:{proxy_id(proxy)}"
        if credentials is not None:
            option["username"], option["password"] = credentials
            # Two accounts on one gateway must not share a context (cookies, session).
            name += f"~{credential_tag(*credentials)}"
        kwargs = dict(request.meta.get("playwright_context_kwargs") or {})
        kwargs["proxy"] = option
        request.meta["playwright_context"] = name
        request.meta["playwright_context_kwargs"] = kwargs

    # -- pages and contexts ---------------------------------------------------------------
    async def _create_page(self, request: Request, spider: Spider) -> Page:
        page = await super()._create_page(request, spider)
        self._pages[id(request)] = page
        if request.meta.get(KEEP_RESOURCES_META):
            self._keep_resources.add(page)
        return page

    async def _abort_by_type(self, playwright_request: PlaywrightRequest) -> bool:
        if playwright_request.resource_type not in self.abort_types:
            return False
        try:
            return playwright_request.frame.page not in self._keep_resources
        except PlaywrightError:  # service-worker requests have no frame
            return True

    def _make_close_browser_context_callback(
        self, name: str, persistent: bool, remote: bool, spider: Spider | None = None
    ) -> Callable[..., None]:
        # Bound to the semaphore of the browser the context was made in: a dead browser's
        # late close events must not release slots of (or unregister) the new one's.
        semaphore = getattr(self, "context_semaphore", None)
        released = False

        def close_browser_context_callback(context: BrowserContext | None = None) -> None:
            nonlocal released
            wrapper = self.context_wrappers.get(name)
            if wrapper is not None and (context is None or wrapper.context is context):
                self.context_wrappers.pop(name, None)
                self._idle_pages.pop(name, None)
            if semaphore is not None and not released:
                released = True
                semaphore.release()
            logger.debug("browser context closed: %s", name)

        return close_browser_context_callback

    def _make_close_page_callback(self, context_name: str) -> Callable[..., None]:
        # Called right after the page's context wrapper is chosen: release that wrapper's
        # slot, once, though both "crash" and "close" fire for a crashed page.
        wrapper = self.context_wrappers.get(context_name)
        released = False

        def close_page_callback() -> None:
            nonlocal released
            if wrapper is not None and not released:
                released = True
                wrapper.semaphore.release()

        return close_page_callback

    # -- browser death ----------------------------------------------------------------------
    async def _browser_disconnected_callback(self, browser: Any = None) -> None:
        if self._closing:
            return  # our own shutdown
        if browser is not None and browser is not getattr(self, "browser", None):
            return  # a browser we already replaced (recycled) has finished closing
        self.stats.inc_value("render/browser_crashes")
        logger.warning(
            "browser disconnected: relaunching; %d browser requests in flight are retried",
            len(self._inflight),
        )
        await self._forget_browser()

    async def _recycle_browser(self, reason: str) -> None:
        browser = getattr(self, "browser", None)
        if browser is None:
            return
        self.stats.inc_value("render/browser_recycled")
        logger.warning("recycling the browser: %s", reason)
        await self._forget_browser()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(browser.close(), _CLOSE_TIMEOUT)

    async def _forget_browser(self) -> None:
        """Fail the requests in the browser, start context bookkeeping afresh, relaunch
        on the next request. Synchronous up to the first await, so no new request can
        slip into the old browser's state."""
        dead = list(self.context_wrappers.values())
        self.context_wrappers.clear()
        self._pages.clear()
        self._idle_pages.clear()
        self._page_slots.clear()  # holders in the dead browser release the old ones
        if self.config.max_contexts:
            self.context_semaphore = asyncio.Semaphore(self.config.max_contexts)
        if hasattr(self, "browser") and self.config.restart_disconnected_browser:
            del self.browser
        for task in list(self._inflight):
            if not task.done():
                self._crash_cancelled.add(task)
                task.cancel()
        for wrapper in dead:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(wrapper.context.close(), _CLOSE_TIMEOUT)

    async def _close(self) -> None:
        self._closing = True
        for task in list(self._inflight):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(super()._close(), 30)
