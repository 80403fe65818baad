"""Yields 20 demo products without a name (a required field), from one ``data:`` page:
every item is dropped by validation, as when a profile's required field is never found."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from tests.crawlers.pipelines.spiders.bad_items import product

ITEMS = 20


class NamelessSpider(scrapy.Spider):
    name = "nameless"
    job_id = "nameless-job"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request("data:,items", callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        for n in range(ITEMS):
            yield product(f"NO-NAME-{n}", name=None)
