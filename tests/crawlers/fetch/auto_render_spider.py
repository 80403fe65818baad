"""The demo spider reading reviews from the page itself, for ``RENDER_MODE=auto``.

Product pages carry their reviews only after the page's script ran, so plain HTTP gives a
product without them and the browser gives it whole; listing pages are the same either
way. Nothing here says which page type to render: ``crawlers.fetch.adaptive`` must find
out. Run with ``scrapy runspider tests/crawlers/fetch/auto_render_spider.py -s
RENDER_MODE=auto``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from scrapy_playwright.page import PageMethod

from crawlers.items import DemoProduct
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.demo import DemoSpider, extract_product
from tests.crawlers.fetch.render_spider import REVIEWS_READY


class AutoRenderedDemoSpider(DemoSpider):
    name = "demo"  # the demo site's profile, politeness and block markers

    async def parse_listing(self, response: Response) -> AsyncIterator[scrapy.Request | ItemSeen]:
        async for request in super().parse_listing(response):
            if isinstance(request, scrapy.Request) and request.callback == self.parse_product:
                # What a browser must wait for, should the page be rendered (a plain
                # fetch ignores it).
                request.meta["playwright_page_methods"] = [
                    PageMethod("wait_for_function", REVIEWS_READY, timeout=15_000)
                ]
            yield request

    def parse_product(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        fields = extract_product(response)
        if fields["name"] is None:
            self._fail(response.url, "product", "no product data on the page")
            return
        reviews = [
            {
                "author": review.css(".review-author::text").get(),
                "rating": int(review.css(".review-rating::text").get() or 0),
                "title": review.css(".review-title::text").get(),
                "body": review.css(".review-body::text").get(),
                "date": review.css(".review-date::attr(datetime)").get(),
            }
            for review in response.css("#reviews .review")
        ]
        yield DemoProduct(**fields, reviews=reviews)
