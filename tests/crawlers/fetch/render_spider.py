"""The demo spider with its product pages rendered by Chromium (``per_request`` mode).

Product pages carry their reviews only after the page's script ran; this spider reads
them from the rendered DOM (``#reviews .review``) instead of calling the reviews API.
Run with ``scrapy runspider tests/crawlers/fetch/render_spider.py -s
RENDER_MODE=per_request``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from playwright.async_api import Page
from scrapy.http import Response, TextResponse
from scrapy_playwright.page import PageMethod

from crawlers.items import DemoProduct
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.demo import DemoSpider, extract_product

# Done when the reviews are in, or at once on a page without a reviews box (a block
# page), so a CAPTCHA is classified instead of waited on.
REVIEWS_READY = (
    "() => { const box = document.getElementById('reviews');"
    " return !box || box.dataset.loaded === 'true'; }"
)


PAGE_INIT_RAN = "render_spider_page_init"


async def mark_page_init(page: Page, request: scrapy.Request) -> None:
    """A spider's own ``playwright_page_init_callback``: the rendering handler learns the
    page through the same meta key, and must still run this one."""
    request.meta[PAGE_INIT_RAN] = True


class RenderedDemoSpider(DemoSpider):
    name = "demo"  # the demo site's profile, politeness and block markers

    async def parse_listing(self, response: Response) -> AsyncIterator[scrapy.Request | ItemSeen]:
        async for request in super().parse_listing(response):
            if isinstance(request, scrapy.Request) and request.callback == self.parse_product:
                request.meta["render"] = True
                request.meta["playwright_page_methods"] = [
                    PageMethod("wait_for_function", REVIEWS_READY, timeout=15_000)
                ]
                request.meta["playwright_page_init_callback"] = mark_page_init
            yield request

    def parse_product(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, TextResponse) or "playwright" not in response.flags:
            self._fail(response.url, "product", "not rendered by the browser")
            return
        if not response.meta.get(PAGE_INIT_RAN):
            self._fail(response.url, "product", "the spider's page init callback did not run")
            return
        fields = extract_product(response)
        if fields["name"] is None:
            self._fail(response.url, "product", "no product data on the page")
            return
        if response.css("#reviews::attr(data-loaded)").get() != "true":
            self._fail(response.url, "product", "reviews not loaded")
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
        self._count("rendered_products")
        yield DemoProduct(**fields, reviews=reviews)
