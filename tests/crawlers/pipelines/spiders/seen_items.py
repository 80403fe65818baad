"""Yields full items and ``ItemSeen``s by a plan given as a spider argument: no site needed.

``-a plan='[{"sku": "A", "price": 1.0}, {"sku": "B", "seen": true}, ...]'``: a full
product (``price``), or an ``ItemSeen`` of it (``seen``) whose page, fetched in full when
its state is gone, is a ``data:`` URL that ``parse_product`` turns into the product at
``price`` (default 9.99). Entries are yielded from one listing response, each once per
``times`` (default 1).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from crawlers.recrawl.context import ItemSeen
from tests.crawlers.pipelines.spiders.bad_items import product

SITE = "seen_shop"


def key_of(sku: str) -> str:
    return f"{SITE}:demo_product:{sku}"


class SeenItemsSpider(scrapy.Spider):
    name = SITE

    def __init__(self, plan: str = "[]", job_id: str = "seen-job", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan: list[dict[str, Any]] = json.loads(plan)
        self.job_id = job_id

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request("data:,listing", callback=self.parse, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        for entry in self.plan:
            sku, price = entry["sku"], float(entry.get("price", 9.99))
            for _ in range(int(entry.get("times", 1))):
                if entry.get("seen"):
                    yield ItemSeen(
                        key=key_of(sku),
                        item_type="demo_product",
                        url=f"data:,{sku}_{price}",
                        reason=entry.get("reason", "not_modified"),
                        callback="parse_product",
                    )
                else:
                    yield product(sku, price=price)

    def parse_product(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        sku, price = response.text.split("_")
        yield product(sku, price=float(price))
