"""Which requests a browser renders: ``RenderMiddleware`` sets ``meta["playwright"]`` from
``RENDER_MODE`` (the site profile's ``render``: ``never`` | ``always`` | ``per_request`` |
``auto``) and a request's ``render`` meta (True/False); ``auto`` is decided per page type
by evidence (``crawlers.fetch.adaptive``). A crawl that may render checks at start that
it has a Chromium (``check_chromium``), rather than every rendered request finding it
missing. The rendering itself is ``crawlers.fetch.rendering.ResilientPlaywrightHandler``'s.
"""

from __future__ import annotations

import os

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.settings import BaseSettings

from core.config import ConfigurationError, find_chromium
from crawlers.fetch.adaptive import AdaptiveRendering, is_document_request
from crawlers.fetch.identity import chromium_path
from crawlers.fetch.retry import CHALLENGE_META

RENDER_MODES = ("never", "always", "per_request", "auto")
RENDER_META = "render"


def wants_render(mode: str, request: Request) -> bool:
    """Whether ``request`` is rendered under the site's render ``mode`` (``auto`` is
    ``RenderMiddleware``'s to decide, by evidence)."""
    explicit = request.meta.get(RENDER_META)
    if mode == "never":
        return False
    if mode == "per_request":
        return bool(explicit)
    # always: every page, except what asks not to be and what is not a page (robots.txt,
    # an API's JSON, a sitemap): a browser would only wrap it in a DOM dump.
    return explicit is not False and is_document_request(request)


class RenderMiddleware:
    """Sets ``meta["playwright"]`` on the requests the site's render mode says to render."""

    def __init__(self, crawler: Crawler) -> None:
        mode = crawler.settings.get("RENDER_MODE")
        if not mode:  # a project without the platform's settings renders what it asks for
            raise NotConfigured("RENDER_MODE is not set")
        self.mode = str(mode)
        if self.mode not in RENDER_MODES:
            raise ValueError(f"RENDER_MODE must be one of {RENDER_MODES}, got {self.mode!r}")
        if self.mode != "never":
            check_chromium(crawler.settings, crawler.spidercls.name)
        # auto: the page types that need a browser, learnt (crawlers.fetch.adaptive).
        self.adaptive = AdaptiveRendering.of(crawler) if self.mode == "auto" else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if request.meta.get(CHALLENGE_META):
            return  # a session's browser fetch: rendered whatever the mode says
        explicit = request.meta.get(RENDER_META)
        if self.adaptive is not None and explicit is None:
            render = await self.adaptive.choose(request)
        else:
            render = wants_render(self.mode, request)
        if render:
            request.meta["playwright"] = True
        elif explicit is False or self.adaptive is not None:
            request.meta.pop("playwright", None)


def check_chromium(settings: BaseSettings, site: str) -> None:
    """ConfigurationError (one line, exit 2) when a crawl that may render (``RENDER_MODE``
    other than never) has no runnable Chromium: checked once at start, not found missing
    by every rendered request."""
    mode = settings.get("RENDER_MODE")
    if not mode or mode == "never":
        return
    # Before the add-on has applied crawlers.defaults (the crawl command checks first),
    # the launch options may not name one yet: the default is the same lookup.
    path = chromium_path(settings) or find_chromium()
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return
    where = f"CHROMIUM_PATH={path!r} is not an executable file" if path else "no Chromium found"
    raise ConfigurationError(
        f"{where}, and site {site!r} renders pages (RENDER_MODE={mode}): install Chromium "
        "(apt-get install chromium) or set CHROMIUM_PATH to its binary"
    )
