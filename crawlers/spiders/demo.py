"""The demo store spider: home -> categories -> listing pages -> products -> reviews API.

``scrapy crawl demo -O items.jsonl -a base_url=http://127.0.0.1:8000`` (the base URL
defaults to ``DEMO_SITE_URL``). Each product field comes from the first source whose
value fits the field's type (JSON-LD, then schema.org microdata, then CSS on the visible
markup: ``crawlers.spiders.fallbacks``). Reviews are rendered by
JavaScript on the site, so the spider reads the API URL from the page and fetches the
JSON itself, carrying the partial product in ``cb_kwargs``.

Nothing is dropped silently: a failed request, a page without product data or a
missing field is logged with its URL and counted in the ``demo/*`` stats.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any
from urllib.parse import urlparse

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import DemoProduct, DemoReview
from crawlers.limits.bounded import response_json
from crawlers.limits.links import Links, Page, read_page
from crawlers.profiles import PageSelectors
from crawlers.recrawl.cards import Card
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.base import SiteSpider, page_selectors
from crawlers.spiders.common import (
    css_text,
    failure_reason,
    first,
    has_type,
    money,
    schema_name,
    structured_nodes,
    text,
    to_float,
    to_int,
)
from crawlers.spiders.demo_cards import CARD_MARKUPS, PRODUCT_SKU, extract_cards
from crawlers.spiders.fallbacks import PRICE, Picked, pick

PRODUCT_FIELDS = (
    "name",
    "brand",
    "category",
    "category_slug",
    "price",
    "currency",
    "availability",
    "rating",
    "review_count",
    "description",
    "image",
)
_CATEGORY_SLUG = re.compile(r"/category/([^/?#]+)")


def category_links(home: PageSelectors) -> Links:
    """The home page's category links: the profile's ``category_links``."""
    return Links(f"{home['category_links']}::attr(href)", 'a[href*="/category/"]::attr(href)')


def listing_links(listing: PageSelectors) -> dict[str, Links]:
    """A listing page's product and page links, by the profile's ``listing`` selectors."""
    return {
        "products": Links(
            f"{listing['product_links']}::attr(href)", 'a[href*="/product/"]::attr(href)'
        ),
        # Numbered links let all pages of a category load in parallel; rel=next alone
        # would walk them one at a time. The dupefilter drops the repeats.
        "pages": Links(
            f"{listing['pagination']}::attr(href), {listing['next_page']}::attr(href)",
            'a[href*="page="]::attr(href)',
        ),
    }


class DemoSpider(SiteSpider):
    name = "demo"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        host = urlparse(self.base_url).hostname
        if not host:
            raise ValueError(f"base_url must be an absolute http(s) URL, got {self.base_url!r}")
        self.allowed_domains = [host]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        # Without `-a base_url=`: the DEMO_SITE_URL setting. Passed as the argument because
        # a spider gets its settings only after __init__, where the base URL is resolved.
        kwargs["base_url"] = kwargs.get("base_url") or crawler.settings["DEMO_SITE_URL"]
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, DemoSpider)
        return spider

    # -- navigation ----------------------------------------------------------------------
    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        """The home page: every category."""
        home = {"categories": category_links(self.selectors("home"))}
        links = self._read(response, home).links.get("categories", [])
        if not links:
            self._fail(response.url, "home", "no category links")
        for href in links:
            yield response.follow(href, callback=self.parse_listing, errback=self.on_error)

    async def parse_listing(self, response: Response) -> AsyncIterator[scrapy.Request | ItemSeen]:
        """A category page: its products (a product whose card is as at its last full
        fetch is seen, not fetched: ``cards_to_fetch``) and the other pages of the
        category. One streamed pass reads links and cards, within the link cap
        (``crawlers.limits.links``)."""
        listing = self.selectors("listing")
        page = self._read(response, listing_links(listing), {m.card: m.card for m in CARD_MARKUPS})
        products = page.links.get("products", [])
        if not products:
            self._fail(response.url, "listing", "no product links")
        cards_by_url = {
            card["url"]: card
            for card in (
                extract_cards(response, page.elements, listing)
                if isinstance(response, TextResponse)
                else []
            )
        }
        cards = []
        for href in products:
            request = response.follow(href, callback=self.parse_product, errback=self.on_error)
            card = cards_by_url.get(request.url)
            if card is None:
                yield request  # no card read for this link: fetched, as always
            else:
                cards.append(Card(request, {k: v for k, v in card.items() if k != "url"}))
        for output in await self.cards_to_fetch(response, cards, DemoProduct):
            yield output
        for href in page.links.get("pages", []):
            yield response.follow(href, callback=self.parse_listing, errback=self.on_error)

    def _read(
        self,
        response: Response,
        links: Mapping[str, Links],
        elements: Mapping[str, str] | None = None,
    ) -> Page:
        if not isinstance(response, TextResponse):
            return Page()
        page = read_page(response, self.crawler, links, elements)
        for kind in page.fell_back:
            fallback = links[kind].fallback
            self.logger.warning("%s: layout changed? fell back to %s", response.url, fallback)
            self._count("layout_fallback")
        return page

    # -- product pages -----------------------------------------------------------------
    def parse_product(self, response: Response) -> Iterator[scrapy.Request | DemoProduct]:
        if not isinstance(response, TextResponse):
            self._fail(response.url, "product", "not a text response")
            return
        product = self.selectors("product")
        fields = self.picked(response.url, read_product(response, product))
        if fields["name"] is None and fields["price"] is None:
            # A block page answered with 200, or markup this spider no longer knows.
            self._fail(response.url, "product", "no product data on the page")
            return
        missing = [name for name in PRODUCT_FIELDS if fields[name] is None]
        if missing:
            self.logger.warning("%s: missing %s", response.url, ", ".join(missing))
            self._count("missing_fields")
        reviews_url = response.css(product["reviews_api"]).attrib.get("data-reviews-url")
        if not reviews_url:
            self.logger.error("%s: no reviews API link; yielding without reviews", response.url)
            self._count("reviews_link_missing")
            yield DemoProduct(**fields)
            return
        yield response.follow(
            reviews_url,
            # As the page's own script asks for it: the browser identity sends it as a
            # script's fetch (crawlers.fetch.identity), not as a page navigated to.
            headers={"Accept": "application/json"},
            callback=self.parse_reviews,
            errback=self.on_reviews_error,
            cb_kwargs={"product": fields},
        )

    def parse_reviews(
        self, response: Response, product: dict[str, Any]
    ) -> Iterator[scrapy.Request | DemoProduct]:
        try:
            data = response_json(response, self.crawler.stats)
            reviews = [_review(entry) for entry in data["reviews"]]
        except (ValueError, KeyError, TypeError) as exc:
            self.logger.error("%s: unreadable reviews JSON (%s)", response.url, exc)
            self._count("reviews_failed")
            yield from self._without_reviews(response.request, product)
            return
        if product["review_count"] is None:
            product = {**product, "review_count": len(reviews)}
        self._count("products")
        yield DemoProduct(**product, reviews=reviews)

    # -- errors ------------------------------------------------------------------------
    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
        self.logger.error("request failed: %s (%s)", request.url, self._reason(failure))
        self._count("request_failed")

    def on_reviews_error(self, failure: Failure) -> Iterator[scrapy.Request | DemoProduct]:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
        self.logger.warning("reviews request failed: %s (%s)", request.url, self._reason(failure))
        self._count("reviews_failed")
        yield from self._without_reviews(request, request.cb_kwargs["product"], failure)

    def _without_reviews(
        self,
        request: scrapy.Request | None,
        product: dict[str, Any],
        failure: Failure | None = None,
    ) -> Iterator[scrapy.Request | DemoProduct]:
        """The reviews request again later in the job; once its rounds are spent, the
        product marked incomplete (never passed off as a product without reviews)."""
        retry = self.retry_part(request, "reviews", failure) if request is not None else None
        if retry is not None:
            yield retry
            return
        self._count("incomplete")
        yield DemoProduct(**product, incomplete=["reviews"])

    def _reason(self, failure: Failure) -> str:
        return failure_reason(failure, self.settings.getint("DOWNLOAD_MAXSIZE"))

    def _fail(self, url: str, page: str, reason: str) -> None:
        self.logger.error("%s (%s page): %s", url, page, reason)
        self._count(f"{page}_unparsed")

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"demo/{key}")


# -- extraction (module level so tests can feed it pages directly) ------------------------


def extract_product(
    response: TextResponse, selectors: PageSelectors | None = None
) -> dict[str, Any]:
    """The product fields of a page: ``read_product``'s picked fields."""
    return read_product(response, selectors).fields


def read_product(response: TextResponse, selectors: PageSelectors | None = None) -> Picked:
    """The product fields of a page, each from the first source whose value fits the
    field (``crawlers.spiders.fallbacks``): JSON-LD, then microdata, then CSS on the
    visible markup, then (the SKU) the URL.

    A later source is only parsed when an earlier one left a field without a fitting
    value. ``selectors``: the profile's ``product`` selectors, which the CSS source reads
    (default: the shipped profile's).
    """
    shown = page_selectors("demo", "product", selectors)
    match = PRODUCT_SKU.search(urlparse(response.url).path)
    picked = pick(
        "demo_product",
        [
            ("json-ld", lambda: from_jsonld(response)),
            ("microdata", lambda: from_microdata(response)),
            ("dom", lambda: from_css(response, shown)),
            ("url", {"sku": match.group(1) if match else None}),
        ],
        names=("sku", *PRODUCT_FIELDS),
        together=PRICE,
    )
    return dataclasses.replace(picked, fields={"url": response.url, **picked.fields})


def from_jsonld(response: TextResponse) -> dict[str, Any]:
    product: dict[str, Any] = {}
    slug = None
    for node in structured_nodes(response, "json-ld"):
        if has_type(node, "Product") and not product:
            product = _from_schema(node, response)
        elif has_type(node, "BreadcrumbList"):
            for element in node.get("itemListElement") or []:
                item = element.get("item") if isinstance(element, dict) else None
                url = item.get("@id") if isinstance(item, dict) else item
                if isinstance(url, str) and (match := _CATEGORY_SLUG.search(url)):
                    slug = match.group(1)
    if slug is not None:
        product["category_slug"] = slug
    return product


def from_microdata(response: TextResponse) -> dict[str, Any]:
    for item in structured_nodes(response, "microdata", html_nodes=True):
        # The page's own product, not one named as a property of another item.
        if has_type(item, "Product") and item["htmlNode"].get("itemprop") is None:
            return _from_schema(item, response)
    return {}


def from_css(response: TextResponse, shown: PageSelectors) -> dict[str, Any]:
    """The visible markup of the current (v1) layout, without any schema attributes: the
    profile's ``product`` selectors."""
    slug_link = response.css(
        f"{shown['breadcrumb_category']}::attr(href), "
        '.product-category a[href*="/category/"]::attr(href)'
    ).get()
    slug_match = _CATEGORY_SLUG.search(slug_link or "")
    image = response.css(f"{shown['image']}::attr(src)").get()
    price = money(
        css_text(response, f"{shown['price']}::text"),
        response.css(".product-price::attr(data-currency)").get(),
    )
    return {
        "name": css_text(response, f"{shown['title']}::text") or css_text(response, "h1::text"),
        "sku": css_text(response, f"{shown['sku']}::text"),
        "brand": css_text(response, f"{shown['brand']}::text"),
        "category": css_text(response, f"{shown['category']}::text"),
        "category_slug": slug_match.group(1) if slug_match else None,
        "price": price.amount,
        "currency": price.currency,
        "availability": response.css(".availability::attr(data-availability)").get(),
        "rating": to_float(css_text(response, f"{shown['rating']}::text")),
        "review_count": to_int(css_text(response, f"{shown['review_count']}::text")),
        "description": css_text(response, f"{shown['description']} ::text"),
        "image": response.urljoin(image) if image else None,
    }


def _from_schema(node: dict[str, Any], response: TextResponse) -> dict[str, Any]:
    """Product fields from a schema.org Product, as JSON-LD or microdata (extruct, uniform)."""
    offer = first(node.get("offers"))
    offer = offer if isinstance(offer, dict) else {}
    rating = first(node.get("aggregateRating"))
    rating = rating if isinstance(rating, dict) else {}
    image = first(node.get("image"))
    if isinstance(image, dict):
        image = image.get("url") or image.get("contentUrl")
    price = money(offer.get("price"), offer.get("priceCurrency"))
    return {
        "name": text(node.get("name")),
        "sku": text(node.get("sku")),
        "brand": _name_of(node.get("brand")),
        "category": _name_of(node.get("category")),
        "price": price.amount,
        "currency": price.currency,
        "availability": schema_name(offer.get("availability")),
        "rating": to_float(rating.get("ratingValue")),
        "review_count": to_int(rating.get("reviewCount") or rating.get("ratingCount")),
        "description": text(node.get("description")),
        "image": response.urljoin(image) if isinstance(image, str) and image else None,
    }


def _review(entry: dict[str, Any]) -> DemoReview:
    return {
        "author": entry["author"],
        "rating": int(entry["rating"]),
        "title": entry["title"],
        "body": entry["body"],
        "date": entry["date"],
    }


def _name_of(value: Any) -> str | None:
    value = first(value)
    if isinstance(value, dict):
        return text(value.get("name"))
    return text(value)
