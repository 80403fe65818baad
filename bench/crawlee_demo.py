"""The demo spider's crawl written for crawlee-python's HTTP crawler (ParselCrawler).

Run in its own virtualenv (crawlee's pins differ from the platform's), with the
repository on ``PYTHONPATH`` (``bench.crawlee_env.ensure_crawlee`` installs what the demo
spider's extraction imports, at the project's pins):

    PYTHONPATH=. .venv-crawlee/bin/python bench/crawlee_demo.py <base_url> <concurrency> <dir>

Equal work: it follows the same links as the ``demo`` spider (the same selectors, home ->
categories -> listing pages -> products -> reviews API) and builds each item with the
demo spider's own functions (``extract_product``: JSON-LD, then microdata, then CSS,
price parsing; ``_review`` for the reviews API), into the same ``DemoProduct``, validated
against its schema as the platform's validation pipeline does. Pages are parsed once,
by crawlee, as Scrapy parses each response once: the extraction reads crawlee's parsel
selector through ``Page``. Each valid item's digest (``bench.equal_work``) goes to
``<dir>/<pid>.digests``; the last line printed is ``{"items": n, "invalid": n}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from crawlee import ConcurrencySettings, Request
from crawlee.crawlers import ParselCrawler, ParselCrawlingContext
from crawlee.storage_clients import MemoryStorageClient
from parsel import Selector, SelectorList

from bench.equal_work import item_digest, write_digests
from core.items_schema import schema_for
from crawlers.items import DemoProduct
from crawlers.spiders.demo import PRODUCT_FIELDS, _review, extract_product


class Page:
    """What the demo spider's extraction reads of a Scrapy ``TextResponse``, over the
    page crawlee parsed (``url``, ``selector``, ``css``, ``xpath``, ``urljoin``)."""

    def __init__(self, url: str, selector: Selector) -> None:
        self.url = url
        self.selector = selector

    def css(self, query: str) -> SelectorList[Selector]:
        return self.selector.css(query)

    def xpath(self, query: str) -> SelectorList[Selector]:
        return self.selector.xpath(query)

    def urljoin(self, url: str) -> str:
        return urljoin(self.url, url)


def links(page: Page, primary: str, fallback: str) -> list[str]:
    """``DemoSpider._links``: the primary selector's links, else the fallback's; absolute."""
    found = page.css(primary).getall() or page.css(fallback).getall()
    return [page.urljoin(href) for href in dict.fromkeys(found)]


class DemoCrawl:
    def __init__(self, concurrency: int) -> None:
        self.crawler = ParselCrawler(
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
        self.digests: list[str] = []
        self.invalid = 0
        self.schema = schema_for(DemoProduct(sku="", url=""))
        router = self.crawler.router
        router.default_handler(self.home)
        router.handler("listing")(self.listing)
        router.handler("product")(self.product)
        router.handler("reviews")(self.reviews)
        self.crawler.failed_request_handler(self.failed)

    @staticmethod
    def page(context: ParselCrawlingContext) -> Page:
        return Page(context.request.loaded_url or context.request.url, context.selector)

    async def follow(self, context: ParselCrawlingContext, urls: list[str], label: str) -> None:
        await context.add_requests([Request.from_url(url, label=label) for url in urls])

    async def home(self, context: ParselCrawlingContext) -> None:
        page = self.page(context)
        categories = links(page, "a.category-link::attr(href)", 'a[href*="/category/"]::attr(href)')
        await self.follow(context, categories, "listing")

    async def listing(self, context: ParselCrawlingContext) -> None:
        page = self.page(context)
        products = links(page, "a.product-link::attr(href)", 'a[href*="/product/"]::attr(href)')
        await self.follow(context, products, "product")
        pages = links(
            page,
            'nav.pagination a::attr(href), a[rel="next"]::attr(href)',
            'a[href*="page="]::attr(href)',
        )
        await self.follow(context, pages, "listing")

    async def product(self, context: ParselCrawlingContext) -> None:
        page = self.page(context)
        fields = extract_product(page)  # type: ignore[arg-type]  # reads only Page's surface
        if fields["name"] is None and fields["price"] is None:
            return  # no product data on the page (the spider logs and counts it)
        missing = [name for name in PRODUCT_FIELDS if fields[name] is None]
        if missing:
            logging.warning("%s: missing %s", page.url, ", ".join(missing))
        reviews_url = page.css("[data-reviews-url]::attr(data-reviews-url)").get()
        if not reviews_url:
            self.emit(DemoProduct(**fields))
            return
        request = Request.from_url(
            page.urljoin(reviews_url), label="reviews", user_data={"product": fields}
        )
        await context.add_requests([request])

    async def reviews(self, context: ParselCrawlingContext) -> None:
        product = dict(context.request.user_data["product"])  # type: ignore[arg-type]
        try:
            data = json.loads(await context.http_response.read())
            reviews = [_review(entry) for entry in data["reviews"]]
        except (ValueError, KeyError, TypeError):
            self.emit(DemoProduct(**product, incomplete=["reviews"]))
            return
        if product["review_count"] is None:
            product["review_count"] = len(reviews)
        self.emit(DemoProduct(**product, reviews=reviews))

    async def failed(self, context: Any, error: Exception) -> None:
        """A reviews request that failed through every retry: the product marked incomplete,
        as the spider marks it once its part retries are spent."""
        if context.request.label == "reviews":
            product = dict(context.request.user_data["product"])
            self.emit(DemoProduct(**product, incomplete=["reviews"]))

    def emit(self, item: DemoProduct) -> None:
        """The platform's validation pipeline: valid items pass (normalised), others drop."""
        result = self.schema.validate(item)
        if result.ok:
            self.digests.append(item_digest(result.item))
        else:
            self.invalid += 1

    async def run(self, base_url: str) -> None:
        await self.crawler.run([base_url + "/"])


def main(base_url: str, concurrency: int, digest_dir: Path) -> None:
    crawl = DemoCrawl(concurrency)
    asyncio.run(crawl.run(base_url.rstrip("/")))
    digest_dir.mkdir(parents=True, exist_ok=True)
    write_digests(digest_dir, crawl.digests)
    print(json.dumps({"items": len(crawl.digests), "invalid": crawl.invalid}))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
