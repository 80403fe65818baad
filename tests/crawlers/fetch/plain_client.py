"""A plain request sent the way a crawl sends it: through the downloader middlewares that
set headers (proxy credentials, the identity) and the curl_cffi handler."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.httpproxy import HttpProxyMiddleware
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from crawlers.fetch.headers import browser_headers, browser_spelling
from crawlers.fetch.identity import IdentityMiddleware, identity_for
from crawlers.fetch.impersonate import ImpersonatingHandler
from tests.crawlers.fetch.capture import Head

PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}


class Client:
    """A request through the downloader middlewares that set headers (proxy credentials,
    the identity) and the handler, as a crawl sends it; one per event loop."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self.crawler = get_crawler(Spider, {**PLATFORM, **(settings or {})})
        self.crawler.spider = Spider.from_crawler(self.crawler, name="unit")
        self.proxies = HttpProxyMiddleware.from_crawler(self.crawler)
        self.identity = IdentityMiddleware.from_crawler(self.crawler)
        self.handler = ImpersonatingHandler.from_crawler(self.crawler)

    async def fetch(self, request: Request) -> Response:
        request.meta.setdefault(
            "download_timeout", self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        )
        self.proxies.process_request(request)
        self.identity.process_request(request)
        return await self.handler.download_request(request)

    def stat(self, name: str) -> Any:
        assert self.crawler.stats is not None
        return self.crawler.stats.get_value(name, 0)


def run(scenario: Callable[[Client], Any], settings: dict[str, Any] | None = None) -> Any:
    async def main() -> Any:
        client = Client(settings)
        try:
            return await scenario(client)
        finally:
            await client.handler.close()

    return asyncio.run(main())


def wire(head: Head) -> list[tuple[str, str]]:
    return head.headers


def expected_wire(client: Client, url: str, own: list[tuple[str, str]], method: str = "GET"):
    me = identity_for(client.crawler)
    host = url.split("/")[2]
    sent = browser_headers(me, method=method, url=url, headers=own)
    return [("Host", host), *((browser_spelling(n), v) for n, v in sent)]
