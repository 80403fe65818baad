"""Browser contexts and pages of one rendering handler, kept with public Playwright API.

scrapy-playwright creates a context the first time a request names it
(``meta["playwright_context"]``) and never closes one; its ``PLAYWRIGHT_MAX_CONTEXTS``
semaphore then makes a crawl with more proxies than contexts wait forever. ``BrowserPool``
admits a request to its context within ``PLAYWRIGHT_MAX_CONTEXTS`` and closes the least
recently used idle context to make room (``BrowserContext.close()``, whose close event
frees scrapy-playwright's slot). It learns each context from the first page made in it
(``page.context``, from the page init callback) and forgets it on the context's own
``close`` event, so a dead browser's contexts leave with it.

Pages: ``PLAYWRIGHT_MAX_PAGES_PER_CONTEXT`` slots per context are held by requests (an
idle pooled page holds none); a finished page goes back to its context's pool and the
next request navigates it (``meta["playwright_page"]``) until ``RENDER_PAGE_MAX_USES``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from functools import partial

from playwright.async_api import Browser, BrowserContext, Page
from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0  # seconds for Playwright to close a page or context


async def close_quietly(closable: Page | BrowserContext | Browser) -> None:
    """Close, giving up after CLOSE_TIMEOUT: a dead browser must not hold the crawl."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(closable.close(), CLOSE_TIMEOUT)


class BrowserPool:
    def __init__(
        self,
        stats: StatsCollector,
        *,
        max_contexts: int,
        max_pages_per_context: int,
        page_max_uses: int,
        close_strays: bool = True,
    ) -> None:
        self.stats = stats
        # False with PLAYWRIGHT_CONTEXTS: a startup context has no page until a request
        # uses it, and is no stray.
        self.close_strays = close_strays
        self.max_contexts = max_contexts  # 0: no limit
        self.max_pages_per_context = max_pages_per_context
        self.page_max_uses = page_max_uses
        self.browser: Browser | None = None  # the browser the pages were last made in
        self._contexts: dict[str, BrowserContext] = {}  # open contexts by name
        self._watched: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
        self._users: Counter[str] = Counter()  # requests admitted, per context name
        self._last_used: dict[str, float] = {}
        self._released = asyncio.Event()  # set (and replaced) when a request ends
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._idle: dict[str, list[tuple[Page, int]]] = {}  # pooled pages, use counts

    # -- what the page init callback tells ------------------------------------------------
    def learn(self, name: str, page: Page) -> None:
        """``page`` (new or reused) serves a request of context ``name``."""
        context = page.context
        if context not in self._watched:
            self._watched.add(context)
            context.on("close", partial(self._context_closed, name))
        self._contexts[name] = context
        self.browser = context.browser or self.browser

    def _context_closed(self, name: str, context: BrowserContext) -> None:
        if self._contexts.get(name) is context:
            del self._contexts[name]
            self._idle.pop(name, None)
        logger.debug("browser context closed: %s", name)

    def forget(self) -> None:
        """The browser died: nothing of it is reused (its pages' holders fail anyway)."""
        self._contexts.clear()
        self._idle.clear()
        self._slots.clear()
        self.browser = None

    # -- admission ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def admitted(self, name: str) -> AsyncIterator[None]:
        """Hold a place in context ``name`` and one of its page slots meanwhile."""
        admitted = False
        try:
            await self._admit(name)
            admitted = True
            slots = self._slots.setdefault(name, asyncio.Semaphore(self.max_pages_per_context))
            async with slots:
                yield
        finally:
            if admitted:
                self._users[name] -= 1
                if not self._users[name]:
                    del self._users[name]
                    if name not in self._contexts and self.close_strays:
                        await self._close_strays()
            self._released.set()
            self._released = asyncio.Event()

    async def _admit(self, name: str) -> None:
        """Reserve ``name`` within PLAYWRIGHT_MAX_CONTEXTS.

        A context is taken from the moment a request is admitted to it, not only once it
        has pages (scrapy-playwright creates the page after the context). At the limit the
        least recently used context without requests is closed; if every context is busy,
        the request waits for one to free up, holding no lock meanwhile (the handler's
        hard limit bounds the wait).
        """
        while True:
            occupied = set(self._contexts) | set(self._users)
            if name in occupied or not self.max_contexts or len(occupied) < self.max_contexts:
                self._users[name] += 1
                self._last_used[name] = time.monotonic()
                return
            idle = [
                (self._last_used.get(other, 0.0), other)
                for other, context in self._contexts.items()
                if other not in self._users
                and context.browser is not None  # a persistent context is the site's own
                # open pages are the pool's only (a spider-held page keeps its context)
                and len(context.pages) <= len(self._idle.get(other, ()))
            ]
            if not idle:
                await self._released.wait()
                continue
            _, victim = min(idle)
            context = self._contexts.pop(victim)
            self._idle.pop(victim, None)
            self._slots.pop(victim, None)
            self.stats.inc_value("render/contexts_evicted")
            logger.debug("closing idle browser context %s to make room for %s", victim, name)
            await close_quietly(context)

    async def _close_strays(self) -> None:
        """Close contexts that never got a page (their request failed in between): unknown
        to the admission, they would hold scrapy-playwright's context slots for good."""
        if self.browser is None or any(name not in self._contexts for name in self._users):
            return  # an admitted request may be making its context right now
        known = set(self._contexts.values())
        for context in self.browser.contexts:
            if context not in known:
                await close_quietly(context)

    # -- pooled pages --------------------------------------------------------------------------
    def take_page(self, name: str) -> tuple[Page, int] | None:
        pool = self._idle.get(name)
        while pool:
            page, uses = pool.pop()
            if not page.is_closed():
                self.stats.inc_value("render/pages_reused")
                return page, uses
        return None

    async def release_page(self, name: str, page: Page, uses: int, *, keep: bool) -> None:
        """Back to the context's pool after a success; closed after a failure (its state is
        unknown), after RENDER_PAGE_MAX_USES, or when its context is gone."""
        if (
            keep
            and uses < self.page_max_uses
            and not page.is_closed()
            and self._contexts.get(name) is page.context
        ):
            self._idle.setdefault(name, []).append((page, uses))
            return
        if not page.is_closed():
            await close_quietly(page)
            self.stats.inc_value("playwright/page_count/closed")
