"""The browser's life and what it loads, through scrapy-playwright's public settings.

- ``LazyBrowserProvider`` (``PLAYWRIGHT_BROWSER_PROVIDER``): the Playwright driver and
  Chromium start with the first rendered request, not at engine start, so the rendering
  download handler can be installed for every site at no cost.
- ``abort_request`` (``PLAYWRIGHT_ABORT_REQUEST``): aborts the resource types the page's
  current request asked to abort. ``ResilientPlaywrightHandler`` assigns them per page
  (``RENDER_ABORT_RESOURCE_TYPES``, or none for ``meta["render_keep_resources"]``); a page
  it does not know (another handler's) loads everything.
"""

from __future__ import annotations

import asyncio
import weakref

from playwright.async_api import Browser, BrowserContext, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request as PlaywrightRequest
from scrapy_playwright.handler import Config
from scrapy_playwright.provider import PlaywrightBrowserProvider


class LazyBrowserProvider(PlaywrightBrowserProvider):
    """scrapy-playwright's default provider, started on the first browser it must give.

    The handler awaits ``start()`` at engine start; a site that renders nothing must not
    pay for a Playwright driver process, so the start waits for ``launch_browser()``.
    """

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self._start_lock = asyncio.Lock()
        self._driver_started = False

    async def start(self) -> None:
        """Nothing yet: see ``_started``."""

    async def _started(self) -> None:
        async with self._start_lock:
            if not self._driver_started:
                await super().start()
                self._driver_started = True

    async def launch_browser(self) -> Browser:
        await self._started()
        return await super().launch_browser()

    async def launch_persistent_context(self, context_kwargs: dict) -> BrowserContext:
        await self._started()
        return await super().launch_persistent_context(context_kwargs)


class ResourceBlocker:
    """A ``PLAYWRIGHT_ABORT_REQUEST`` predicate whose resource types are set per page."""

    def __init__(self) -> None:
        self._by_page: weakref.WeakKeyDictionary[Page, frozenset[str]] = weakref.WeakKeyDictionary()
        # Service-worker requests belong to no page: they get the crawl's types. One crawl
        # per process (Scrapy's way), so the last handler configured is that crawl's.
        self.frameless: frozenset[str] = frozenset()
        self._assigned: frozenset[str] = frozenset()  # every type some page aborts

    def assign(self, page: Page, types: frozenset[str]) -> None:
        """``page`` aborts ``types`` until the next request it serves says otherwise."""
        self._by_page[page] = types
        if not types <= self._assigned:
            self._assigned |= types

    def __call__(self, request: PlaywrightRequest) -> bool:
        resource_type = request.resource_type
        if resource_type not in self._assigned and resource_type not in self.frameless:
            return False  # most requests (documents, scripts, XHR): no page lookup
        try:
            types = self._by_page.get(request.frame.page, frozenset())
        except PlaywrightError:  # service-worker requests have no frame
            types = self.frameless
        return resource_type in types


abort_request = ResourceBlocker()
