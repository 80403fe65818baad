"""The demo spider, which also follows the shop's cart link from its home page: the cart
is disallowed by the shop's robots.txt, so the crawl shows whether it read the site's
rules (``robotstxt/forbidden``). Run with ``scrapy runspider
tests/crawlers/fetch/cart_spider.py -a base_url=<shop>``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from crawlers.spiders.demo import DemoSpider

CART = "/cart"


class CartFollowingDemoSpider(DemoSpider):
    name = "demo"  # the demo site's profile, politeness and block markers

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        yield from super().parse(response, **kwargs)
        yield response.follow(CART, callback=self.parse_listing, errback=self.on_error)
