"""hermes.com: the products of monitored categories, with price and availability.

``scrapy crawl hermes -O products.jsonl [-a base_url=http://127.0.0.1:8014]``

Start entries are category pages (``/<country>/<lang>/category/...``). hermes.com is an
Angular app rendered on the server: the page embeds the backend answers it was built
from in ``<script id="hermes-state">`` (Angular transfer state: an object of
``{"u": backend URL, "b": body}`` entries under hashed keys). The entry whose URL ends in
``/products`` lists the category's products (sku, title, price, url, avgColor, assets,
stock) and their ``total``; the ``/category/<code>`` entry names the category. Each
product is yielded from the category data and completed from its product page
(description, material, dimensions); if the product page fails, the category's data is
yielded alone, never dropped. The grid markup (``.product-item``) is the fallback.

Product pages: ASSUMED structure, no saved hermes.com product page was available. The
spider reads a ``hermes-state`` entry whose body has the product's ``sku`` (as the
category's items), then JSON-LD ``Product``, then the markup
(``h1``, ``.price``, ``.product-description``, ``.product-detail``): each layer is
optional, so a product page that differs from the model still yields the category data.

Pagination (ASSUMED): the category page's "Load more items" button fetches the next 48
products with JavaScript; the spider requests ``?page=N`` while ``total`` exceeds what it
has seen, which is the URL the button leads to on the site.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlparse

import scrapy
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import Product
from crawlers.spiders.common import (
    ProductionSpider,
    absolute,
    css_text,
    first,
    has_type,
    long_text,
    schema_name,
    script_json,
    structured_nodes,
    text,
    to_float,
    unique,
)

PRODUCT_FIELDS = ("name", "price", "currency", "availability", "images")
_STATE = '//script[@id="hermes-state"]/text()'
_SKU_IN_URL = re.compile(r"-(H[0-9A-Z]{6,})/?$")
_LOCALE = re.compile(r"^/([a-z]{2})/([a-z]{2})/")
# hermes.com country paths -> currency (prices in the state carry no currency).
_CURRENCY = {
    "ca": "CAD",
    "us": "USD",
    "uk": "GBP",
    "fr": "EUR",
    "de": "EUR",
    "it": "EUR",
    "es": "EUR",
    "ch": "CHF",
    "jp": "JPY",
    "au": "AUD",
}
PAGE_SIZE = 48


class HermesSpider(ProductionSpider):
    name = "hermes"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        """A category page: every product's page, then the next page of the category."""
        if not isinstance(response, TextResponse):
            self.fail(response, "category", "not a text response")
            return
        category = extract_category(response)
        if not category["products"]:
            self.fail(response, "category", "no products in hermes-state nor in the grid")
            return
        if category["source"] != "state":
            self.logger.warning("%s: no hermes-state products, read the grid", response.url)
            self.count("layout_fallback")
        for product in category["products"]:
            yield response.follow(
                product["url"],
                callback=self.parse_product,
                errback=self.on_product_error,
                cb_kwargs={"partial": product},
            )
        number = int(response.meta.get("listing_page", category["page"]))
        seen = (number - 1) * PAGE_SIZE + len(category["products"])
        total = category["total"]
        if total is not None and seen < total and number < self.max_pages:
            url = response.urljoin(urlparse(response.url).path)
            yield response.follow(
                f"{url}?{urlencode({'page': number + 1})}",
                callback=self.parse,
                errback=self.on_error,
                meta={"listing_page": number + 1},
            )

    def parse_product(self, response: Response, partial: dict[str, Any]) -> Iterator[Product]:
        fields = dict(partial)
        if isinstance(response, TextResponse):
            found = extract_product(response, partial.get("product_id"))
            for name, value in found.items():
                if value not in (None, "", []):
                    fields[name] = value  # the product page is more precise
            if not found.get("name"):
                self.logger.warning("%s: product page unreadable, category data only", response.url)
                self.count("product_page_unparsed")
        self.note_missing(response.url, fields, PRODUCT_FIELDS)
        self.count("products")
        yield Product(**fields)

    def on_product_error(self, failure: Failure) -> Iterator[scrapy.Request | Product]:
        """The product page again later in the job; once its rounds are spent, the
        category's data marked incomplete."""
        request = failure.request  # type: ignore[attr-defined]
        self.logger.warning("product page failed: %s (%s)", request.url, failure.getErrorMessage())
        self.count("product_page_failed")
        retry = self.retry_part(request, "product_page", failure)
        if retry is not None:
            yield retry
            return
        yield Product(**request.cb_kwargs["partial"], incomplete=["product_page"])


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


def state_entries(response: TextResponse) -> list[tuple[str, Any]]:
    """(backend URL, body) of every entry in ``hermes-state``."""
    state = script_json(response, _STATE)
    if not isinstance(state, dict):
        return []
    return [
        (str(entry.get("u") or ""), entry.get("b"))
        for entry in state.values()
        if isinstance(entry, dict) and "b" in entry
    ]


def locale_prefix(response: TextResponse) -> str:
    """``/ca/en``: from ``<base href>``, else the page's path."""
    base = response.css("base::attr(href)").get() or urlparse(response.url).path
    match = _LOCALE.match(urlparse(base).path if "://" in base else base)
    return f"/{match.group(1)}/{match.group(2)}" if match else ""


def currency_of(response: TextResponse, country: str | None = None) -> str | None:
    code = country or locale_prefix(response).removeprefix("/").split("/")[0]
    return _CURRENCY.get(code.lower())


def extract_category(response: TextResponse) -> dict[str, Any]:
    entries = state_entries(response)
    products_body = next(
        (b for u, b in entries if u.rstrip("/").endswith("/products") and isinstance(b, dict)), {}
    )
    category_body = next((b for u, b in entries if "/category/" in u and isinstance(b, dict)), {})
    category_name = text(category_body.get("title")) or css_text(
        response, "h1 .header-title-current ::text"
    )
    country = text(category_body.get("country"))
    currency = currency_of(response, country)
    prefix = locale_prefix(response)
    items = (products_body.get("products") or {}).get("items") or []
    products = [_from_state_item(item, response, prefix, currency, category_name) for item in items]
    products = [p for p in products if p]
    source = "state"
    if not products:
        products = _from_grid(response, currency, category_name)
        source = "grid"
    page = response.url.split("page=")[-1] if "page=" in response.url else "1"
    return {
        "name": category_name,
        "total": products_body.get("total")
        if isinstance(products_body.get("total"), int)
        else None,
        "products": products,
        "page": int(page) if page.isdigit() else 1,
        "source": source,
    }


def _availability(stock: Any) -> str | None:
    if not isinstance(stock, dict):
        return None
    if stock.get("ecom"):
        return "InStock"
    if stock.get("retail") or stock.get("displayOnly"):
        return "InStoreOnly"  # shown online, sold in stores
    return "OutOfStock"


def _from_state_item(
    item: Any, response: TextResponse, prefix: str, currency: str | None, category: str | None
) -> dict[str, Any]:
    if not isinstance(item, dict) or not item.get("sku") or not item.get("url"):
        return {}
    path = str(item["url"])
    url = response.urljoin(path if path.startswith(prefix + "/") else prefix + path)
    images = [
        absolute(response, a.get("url")) for a in item.get("assets") or [] if isinstance(a, dict)
    ]
    return {
        "url": url,
        "product_id": str(item["sku"]),
        "name": text(item.get("title")),
        "brand": "Hermès",
        "category": category,
        "price": to_float(item.get("price")),
        "currency": currency if item.get("price") is not None else None,
        "availability": _availability(item.get("stock")),
        "color": text(item.get("avgColor")),
        "images": unique(images) or None,
    }


def _from_grid(
    response: TextResponse, currency: str | None, category: str | None
) -> list[dict[str, Any]]:
    products = []
    for card in response.css(".product-item"):
        href = card.css("a.product-item-name::attr(href)").get()
        if not href:
            continue
        url = response.urljoin(href)
        sku = _SKU_IN_URL.search(urlparse(url).path)
        price = css_text(card, ".product-item-price .price ::text")
        image = card.css("img::attr(src)").get()
        products.append(
            {
                "url": url,
                "product_id": sku.group(1) if sku else None,
                "name": css_text(card, ".product-title ::text"),
                "brand": "Hermès",
                "category": category,
                "price": to_float(price),
                "currency": currency if price else None,
                "images": [absolute(response, image)] if image else None,
            }
        )
    return products


def extract_product(response: TextResponse, sku: str | None = None) -> dict[str, Any]:
    """A product page's fields (assumed structure, see the module docstring)."""
    sku = sku or (m.group(1) if (m := _SKU_IN_URL.search(urlparse(response.url).path)) else None)
    fields: dict[str, Any] = dict.fromkeys(
        ("name", "price", "currency", "availability", "color", "material", "description")
    )
    body = next(
        (
            b
            for _, b in state_entries(response)
            if isinstance(b, dict) and b.get("sku") and (sku is None or b.get("sku") == sku)
        ),
        None,
    )
    attributes: dict[str, Any] = {}
    if body:
        fields.update(
            name=text(body.get("title")),
            price=to_float(body.get("price")),
            currency=currency_of(response) if body.get("price") is not None else None,
            availability=_availability(body.get("stock")),
            color=text(body.get("avgColor")),
            material=text(body.get("materials")),
            description=long_text(body.get("description")),
        )
        if body.get("dimensions"):
            attributes["dimensions"] = text(body["dimensions"])
    for node in structured_nodes(response, "json-ld"):
        if not has_type(node, "Product"):
            continue
        offer = first(node.get("offers"))
        offer = offer if isinstance(offer, dict) else {}
        found = {
            "name": text(node.get("name")),
            "price": to_float(offer.get("price")),
            "currency": text(offer.get("priceCurrency")),
            "availability": schema_name(offer.get("availability")),
            "color": text(node.get("color")),
            "material": text(node.get("material")),
            "description": long_text(node.get("description")),
        }
        for name, value in found.items():
            if fields.get(name) is None:
                fields[name] = value
        break
    details = {}
    for detail in response.css(".product-detail"):
        label = css_text(detail, ".label::text")
        value = css_text(detail, ".value::text")
        if label and value:
            details[label.lower()] = value
    dom = {
        "name": css_text(response, "h1.product-title::text"),
        "price": to_float(css_text(response, ".product-price .price ::text")),
        "color": css_text(response, ".product-color .value::text"),
        "material": details.get("material"),
        "description": long_text(css_text(response, ".product-description ::text")),
    }
    for name, value in dom.items():
        if fields.get(name) is None:
            fields[name] = value
    if fields["price"] is not None and fields["currency"] is None:
        fields["currency"] = currency_of(response)
    attributes.update({k: v for k, v in details.items() if k not in ("material",)})
    fields["attributes"] = attributes or None
    return fields
