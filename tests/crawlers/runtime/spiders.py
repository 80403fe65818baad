"""Spiders of the outcome tests, each reading one ``data:`` page (no site needed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import scrapy
from scrapy.http import Response

from core.jobs.outcome import NONE_LISTED
from tests.crawlers.pipelines.spiders.bad_items import product

ITEMS = 20
# A listing page as a shop serves it when a category is empty (a near-empty body would be
# taken for a block page).
EMPTY_LISTING = (
    "<!doctype html><html lang=en><head><title>Lamps - Shop</title></head><body>"
    "<nav><a href=/>Home</a> / Lamps</nav><h1>Lamps</h1>"
    "<p class=results>0 results</p>"
    "<p>There are no products in this category yet. Please come back later, or browse "
    "the other categories of the shop from the home page.</p>"
    + "<footer>Shop</footer>" * 20
    + "</body></html>"
)


class NamelessSpider(scrapy.Spider):
    """20 demo products without a name (a required field): every item is dropped by
    validation, as when a profile's required field is never found."""

    name = "nameless"
    job_id = "nameless-job"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request("data:,items", callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        for n in range(ITEMS):
            yield product(f"NO-NAME-{n}", name=None)


class EmptyListingSpider(scrapy.Spider):
    """A listing that says it has no items ("0 results"): the spider reads it, understands
    it and counts ``items/none_listed``, the one way a site truly has none."""

    name = "empty_listing"
    job_id = "empty-listing-job"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request("data:text/html," + quote(EMPTY_LISTING), callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if response.css("p.results::text").get() == "0 results" and self.crawler.stats:
            self.crawler.stats.inc_value(NONE_LISTED)
        yield from ()
