"""The demo store spider: home -> categories -> listing pages -> products -> reviews API.

``scrapy crawl demo -O items.jsonl -a base_url=http://127.0.0.1:8000`` (the base URL
defaults to ``DEMO_SITE_URL``). Product fields come from JSON-LD first, then schema.org
microdata, then CSS on the visible markup, field by field. Reviews are rendered by
JavaScript on the site, so the spider reads the API URL from the page and fetches the
JSON itself, carrying the partial product in ``cb_kwargs``.

Nothing is dropped silently: a failed request, a page without product data or a
missing field is logged with its URL and counted in the ``demo/*`` stats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlparse

import scrapy
from lxml import etree
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import DemoProduct
from crawlers.spiders.base import SiteSpider

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
_SCHEMA_PREFIXES = ("https://schema.org/", "http://schema.org/")
_CATEGORY_SLUG = re.compile(r"/category/([^/?#]+)")
_PRODUCT_SKU = re.compile(r"/product/([^/?#]+)")


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
        links = self._links(
            response, "a.category-link::attr(href)", 'a[href*="/category/"]::attr(href)'
        )
        if not links:
            self._fail(response.url, "home", "no category links")
        for href in links:
            yield response.follow(href, callback=self.parse_listing, errback=self.on_error)

    def parse_listing(self, response: Response) -> Iterator[scrapy.Request]:
        """A category page: its products and the other pages of the category."""
        products = self._links(
            response, "a.product-link::attr(href)", 'a[href*="/product/"]::attr(href)'
        )
        if not products:
            self._fail(response.url, "listing", "no product links")
        for href in products:
            yield response.follow(href, callback=self.parse_product, errback=self.on_error)
        # Numbered links let all pages of a category load in parallel; rel=next alone
        # would walk them one at a time. The dupefilter drops the repeats.
        pages = self._links(
            response,
            'nav.pagination a::attr(href), a[rel="next"]::attr(href)',
            'a[href*="page="]::attr(href)',
        )
        for href in pages:
            yield response.follow(href, callback=self.parse_listing, errback=self.on_error)

    def _links(self, response: Response, primary: str, fallback: str) -> list[str]:
        if not isinstance(response, TextResponse):
            return []
        links = response.css(primary).getall()
        if not links:
            links = response.css(fallback).getall()
            if links:
                self.logger.warning("%s: layout changed? fell back to %s", response.url, fallback)
                self._count("layout_fallback")
        return list(dict.fromkeys(links))

    # -- product pages -----------------------------------------------------------------
    def parse_product(self, response: Response) -> Iterator[scrapy.Request | DemoProduct]:
        if not isinstance(response, TextResponse):
            self._fail(response.url, "product", "not a text response")
            return
        fields = extract_product(response)
        if fields["name"] is None and fields["price"] is None:
            # A block page answered with 200, or markup this spider no longer knows.
            self._fail(response.url, "product", "no product data on the page")
            return
        missing = [name for name in PRODUCT_FIELDS if fields[name] is None]
        if missing:
            self.logger.warning("%s: missing %s", response.url, ", ".join(missing))
            self._count("missing_fields")
        reviews_url = response.css("[data-reviews-url]::attr(data-reviews-url)").get()
        if not reviews_url:
            self.logger.error("%s: no reviews API link; yielding without reviews", response.url)
            self._count("reviews_link_missing")
            yield DemoProduct(**fields)
            return
        yield response.follow(
            reviews_url,
            callback=self.parse_reviews,
            errback=self.on_reviews_error,
            cb_kwargs={"product": fields},
        )

    def parse_reviews(self, response: Response, product: dict[str, Any]) -> Iterator[DemoProduct]:
        try:
            data = json.loads(response.text) if isinstance(response, TextResponse) else None
            reviews = [_review(entry) for entry in data["reviews"]]  # type: ignore[index]
        except (ValueError, KeyError, TypeError) as exc:
            self.logger.error("%s: unreadable reviews JSON (%s)", response.url, exc)
            self._count("reviews_failed")
            yield DemoProduct(**product)
            return
        if product["review_count"] is None:
            product = {**product, "review_count": len(reviews)}
        self._count("products")
        yield DemoProduct(**product, reviews=reviews)

    # -- errors ------------------------------------------------------------------------
    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        self.logger.error("request failed: %s (%s)", request.url, failure.getErrorMessage())
        self._count("request_failed")

    def on_reviews_error(self, failure: Failure) -> Iterator[DemoProduct]:
        request = failure.request  # type: ignore[attr-defined]
        self.logger.error(
            "reviews request failed: %s (%s); yielding the product without reviews",
            request.url,
            failure.getErrorMessage(),
        )
        self._count("reviews_failed")
        yield DemoProduct(**request.cb_kwargs["product"])

    def _fail(self, url: str, page: str, reason: str) -> None:
        self.logger.error("%s (%s page): %s", url, page, reason)
        self._count(f"{page}_unparsed")

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"demo/{key}")


# -- extraction (module level so tests can feed it pages directly) ------------------------


def extract_product(response: TextResponse) -> dict[str, Any]:
    """The product fields of a page: JSON-LD, then microdata, then CSS, field by field.

    A later layer is only parsed when an earlier one left a field empty.
    """
    fields: dict[str, Any] = dict.fromkeys(("sku", *PRODUCT_FIELDS))
    for layer in (from_jsonld, from_microdata, from_css):
        found = layer(response)
        for name, value in fields.items():
            if value is None and found.get(name) is not None:
                fields[name] = found[name]
        if all(value is not None for value in fields.values()):
            break
    if fields["sku"] is None and (match := _PRODUCT_SKU.search(urlparse(response.url).path)):
        fields["sku"] = match.group(1)
    return {"url": response.url, **fields}


def from_jsonld(response: TextResponse) -> dict[str, Any]:
    product: dict[str, Any] = {}
    slug = None
    for raw in response.xpath('//script[@type="application/ld+json"]/text()').getall():
        try:
            data = json.loads(raw)
        except ValueError:
            continue  # a broken block must not hide the others
        for node in _jsonld_nodes(data):
            if _has_type(node, "Product") and not product:
                product = _from_schema(node, response)
            elif _has_type(node, "BreadcrumbList"):
                for element in node.get("itemListElement") or []:
                    item = element.get("item") if isinstance(element, dict) else None
                    url = item.get("@id") if isinstance(item, dict) else item
                    if isinstance(url, str) and (match := _CATEGORY_SLUG.search(url)):
                        slug = match.group(1)
    if slug is not None:
        product["category_slug"] = slug
    return product


def from_microdata(response: TextResponse) -> dict[str, Any]:
    root = response.selector.root
    if not isinstance(root, etree._Element):
        return {}
    for element in root.iter():
        if (
            isinstance(element.tag, str)
            and "itemscope" in element.attrib
            and element.get("itemprop") is None
            and _has_type({"@type": element.get("itemtype", "")}, "Product")
        ):
            return _from_schema(_microdata_item(element), response)
    return {}


def from_css(response: TextResponse) -> dict[str, Any]:
    """The visible markup of the current (v1) layout, without any schema attributes."""

    def text(query: str) -> str | None:
        value = " ".join(" ".join(response.css(query).getall()).split())
        return value or None

    slug_link = response.css(
        'nav.breadcrumbs a[href*="/category/"]::attr(href), '
        '.product-category a[href*="/category/"]::attr(href)'
    ).get()
    slug_match = _CATEGORY_SLUG.search(slug_link or "")
    image = response.css("img.product-image::attr(src)").get()
    return {
        "name": text("h1.product-title::text") or text("h1::text"),
        "sku": text(".product-sku .sku-value::text"),
        "brand": text(".product-brand .brand-name::text"),
        "category": text(".product-category .category-name::text"),
        "category_slug": slug_match.group(1) if slug_match else None,
        "price": _to_float(text(".product-price .price-value::text")),
        "currency": response.css(".product-price::attr(data-currency)").get(),
        "availability": response.css(".availability::attr(data-availability)").get(),
        "rating": _to_float(text(".product-rating .rating-value::text")),
        "review_count": _to_int(text(".product-rating .review-count::text")),
        "description": text(".product-description ::text"),
        "image": response.urljoin(image) if image else None,
    }


def _jsonld_nodes(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, list):
        for entry in data:
            yield from _jsonld_nodes(entry)
    elif isinstance(data, dict):
        yield data
        if "@graph" in data:
            yield from _jsonld_nodes(data["@graph"])


def _has_type(node: dict[str, Any], wanted: str) -> bool:
    types = node.get("@type")
    names: Iterable[Any] = types if isinstance(types, list) else [types]
    return any(
        isinstance(name, str) and (name == wanted or name.endswith(f"schema.org/{wanted}"))
        for name in names
    )


def _from_schema(node: dict[str, Any], response: TextResponse) -> dict[str, Any]:
    """Product fields from a schema.org Product, given as JSON-LD or parsed microdata."""
    offer = _first(node.get("offers"))
    offer = offer if isinstance(offer, dict) else {}
    rating = _first(node.get("aggregateRating"))
    rating = rating if isinstance(rating, dict) else {}
    image = _first(node.get("image"))
    if isinstance(image, dict):
        image = image.get("url") or image.get("contentUrl")
    availability = _first(offer.get("availability"))
    if isinstance(availability, str):
        for prefix in _SCHEMA_PREFIXES:
            availability = availability.removeprefix(prefix)
    return {
        "name": _text(node.get("name")),
        "sku": _text(node.get("sku")),
        "brand": _name_of(node.get("brand")),
        "category": _name_of(node.get("category")),
        "price": _to_float(_first(offer.get("price"))),
        "currency": _text(offer.get("priceCurrency")),
        "availability": availability if isinstance(availability, str) else None,
        "rating": _to_float(_first(rating.get("ratingValue"))),
        "review_count": _to_int(_first(rating.get("reviewCount") or rating.get("ratingCount"))),
        "description": _text(node.get("description")),
        "image": response.urljoin(image) if isinstance(image, str) and image else None,
    }


def _microdata_item(element: etree._Element) -> dict[str, Any]:
    """One microdata item as a JSON-LD-like dict (first value of each property)."""
    item: dict[str, Any] = {"@type": element.get("itemtype", "")}

    def walk(node: etree._Element) -> None:
        for child in node:
            if not isinstance(child.tag, str):
                continue  # comments and processing instructions
            scoped = "itemscope" in child.attrib
            if prop := child.get("itemprop"):
                value = _microdata_item(child) if scoped else _microdata_value(child)
                for name in prop.split():
                    item.setdefault(name, value)
            if not scoped:  # a nested item's properties are its own
                walk(child)

    walk(element)
    return item


def _microdata_value(element: etree._Element) -> str:
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if tag == "meta":
        return element.get("content", "")
    if tag in ("a", "link", "area"):
        return element.get("href", "")
    if tag in ("img", "audio", "video", "source", "iframe", "embed"):
        return element.get("src", "")
    if tag == "time" and element.get("datetime"):
        return element.get("datetime", "")
    if tag in ("data", "meter") and element.get("value") is not None:
        return element.get("value", "")
    if element.get("content") is not None:  # widely used outside <meta>, and honoured
        return element.get("content", "")
    return " ".join("".join(element.itertext()).split())


def _review(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "author": entry["author"],
        "rating": int(entry["rating"]),
        "title": entry["title"],
        "body": entry["body"],
        "date": entry["date"],
    }


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def _text(value: Any) -> str | None:
    value = _first(value)
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _name_of(value: Any) -> str | None:
    value = _first(value)
    if isinstance(value, dict):
        return _text(value.get("name"))
    return _text(value)


def _to_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip().replace("\u00a0", "")
    if "," in text and "." not in text:
        text = text.replace(",", ".")  # a decimal comma
    text = re.sub(r"[^0-9.\-]", "", text)
    try:
        return float(text)
    except ValueError:
        return None


def _to_int(value: Any) -> int | None:
    number = _to_float(value)
    return None if number is None else int(number)
