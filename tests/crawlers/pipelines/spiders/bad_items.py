"""Yields valid and invalid items from one ``data:`` page: no site needed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from crawlers.items import DemoProduct

BASE = "http://shop.example"


def product(sku: str, **overrides: Any) -> DemoProduct:
    fields: dict[str, Any] = {
        "sku": sku,
        "url": f"{BASE}/product/{sku}",
        "name": f"Product {sku}",
        "price": 9.99,
        "currency": "EUR",
        "reviews": [],
    }
    return DemoProduct(**{**fields, **overrides})


class BadItemsSpider(scrapy.Spider):
    name = "bad_items"
    job_id = "bad-items-job"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request("data:,items", callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield product("OK-1")
        yield product("OK-2", price=10)  # an int in a float field: valid, normalised
        yield product("OK-3", reviews=None)
        yield product("BAD-1", name=None)  # missing required field
        yield product("BAD-2", price="9.99")  # wrong type
        yield product("BAD-3", name="  ", currency="eur")  # blank + pattern
        yield product(
            "BAD-4",
            reviews=[{"author": "A", "rating": 9, "title": "t", "body": "b", "date": "2024-01-01"}],
        )
        yield {"sku": "DICT-1", "url": f"{BASE}/x"}  # not a declared item type
