"""The demo-site crawl written for crawlee-python's HTTP crawler (ParselCrawler).

Run in its own virtualenv (crawlee's pins differ from the platform's):
    .venv-crawlee/bin/python bench/crawlee_demo.py <base_url> <concurrency>
It follows the same pages as the ``demo`` spider (home -> categories -> listing pages ->
products -> reviews API) and prints the number of items it produced.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys

from crawlee import ConcurrencySettings, Request
from crawlee.crawlers import ParselCrawler, ParselCrawlingContext
from crawlee.storage_clients import MemoryStorageClient


async def main(base_url: str, concurrency: int) -> None:
    crawler = ParselCrawler(
        # Pinned concurrency: the comparison is at equal concurrency, not autoscaling.
        concurrency_settings=ConcurrencySettings(
            min_concurrency=concurrency,
            max_concurrency=concurrency,
            desired_concurrency=concurrency,
        ),
        storage_client=MemoryStorageClient(),  # Scrapy keeps its frontier in memory too
        respect_robots_txt_file=True,
        configure_logging=False,
        max_request_retries=3,
    )
    items = 0

    @crawler.router.default_handler
    async def home(context: ParselCrawlingContext) -> None:
        await context.enqueue_links(selector="a.category-link", label="listing")

    @crawler.router.handler("listing")
    async def listing(context: ParselCrawlingContext) -> None:
        await context.enqueue_links(selector="a.product-link", label="product")
        await context.enqueue_links(selector="nav.pagination a", label="listing")

    @crawler.router.handler("product")
    async def product(context: ParselCrawlingContext) -> None:
        raw = context.selector.xpath('//script[@type="application/ld+json"]/text()').getall()
        data = next((node for node in map(json.loads, raw) if node.get("@type") == "Product"), {})
        api = context.selector.css("[data-reviews-url]::attr(data-reviews-url)").get()
        await context.add_requests(
            [
                Request.from_url(
                    base_url + api, label="reviews", user_data={"product": {"sku": data.get("sku")}}
                )
            ]
        )

    @crawler.router.handler("reviews")
    async def reviews(context: ParselCrawlingContext) -> None:
        nonlocal items
        body = await context.http_response.read()
        product = dict(context.request.user_data["product"])
        product["reviews"] = json.loads(body)["reviews"]
        items += 1

    await crawler.run([base_url + "/"])
    print(json.dumps({"items": items}))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(sys.argv[1].rstrip("/"), int(sys.argv[2])))
