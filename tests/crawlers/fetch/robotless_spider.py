"""A plain spider for a site without robots.txt: its home page (linking one page that
is gone, a 404) is read through the platform's fetch stack. Run with ``scrapy runspider
tests/crawlers/fetch/robotless_spider.py -a base_url=<site>``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class RobotlessSpider(scrapy.Spider):
    name = "robotless"
    custom_settings = {"ROBOTSTXT_OBEY": True}

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [base_url.rstrip("/") + "/"]

    def parse(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "title": response.css("title::text").get()}
        yield from response.follow_all(css="a")
