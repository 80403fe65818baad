"""hermes.com: the products of monitored categories, with price and availability.

``scrapy crawl hermes -O products.jsonl [-a base_url=http://127.0.0.1:8014]``

Reads the profile ``crawlers/profiles/hermes.toml``. Category pages carry their products
in the Angular transfer state (``<script id="hermes-state">``), the grid markup as
fallback; each product is completed from its product page (a failed page: the category's
data alone, never dropped), each field from the first source whose value fits it. The
currency rules live in ``hermes_markets``. Sources, currency and pagination (some of it
ASSUMED): docs/sites.md "hermes".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple
from urllib.parse import urlencode, urlparse

import scrapy
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import Product
from crawlers.profiles import PageSelectors
from crawlers.recrawl.cards import Card
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.base import page_selectors
from crawlers.spiders.common import (
    ProductionSpider,
    absolute,
    css_text,
    find_key,
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
from crawlers.spiders.fallbacks import Picked, pick
from crawlers.spiders.hermes_markets import country_of_market, resolve_currency, stated_code

PRODUCT_FIELDS = ("name", "price", "currency", "availability", "images")
# What a product page may state, in the order its fields are returned.
_PAGE_FIELDS = ("name", "price", "availability", "color", "material", "description")
_STATE = '//script[@id="hermes-state"]/text()'
_SKU_IN_URL = re.compile(r"-(H[0-9A-Z]{6,})/?$")
_LOCALE = re.compile(r"^/([a-z]{2})/([a-z]{2})/")
# Where a page may state its prices' currency as a code. ASSUMED keys and tags: the saved
# category page has none (its state gives bare numbers, its cards print "CA$6,250").
_CURRENCY_KEYS = ("currency", "currencyCode", "priceCurrency")
_CURRENCY_META = (
    'meta[property="product:price:currency"]::attr(content)',
    'meta[property="og:price:currency"]::attr(content)',
    '[itemprop="priceCurrency"]::attr(content)',
)
_CARD_PRICE = ".product-item-price .price ::text"
# The product page's "Material" detail in the markets' languages (ASSUMED, as the page).
_MATERIAL_LABELS = ("material", "matière", "materiale", "materiaal", "素材", "소재")
PAGE_SIZE = 48


class HermesSpider(ProductionSpider):
    name = "hermes"

    async def parse(
        self, response: Response, **kwargs: Any
    ) -> AsyncIterator[scrapy.Request | ItemSeen]:
        """A category page: every product's page (a product whose card is as at its last
        full fetch is seen, not fetched: ``cards_to_fetch``), then the next page of the
        category."""
        if not isinstance(response, TextResponse):
            self.fail(response, "category", "not a text response")
            return
        category = extract_category(response, self.selectors("category"))
        if not category["products"]:
            self.fail(response, "category", "no products in hermes-state nor in the grid")
            return
        if category["source"] != "state":
            self.logger.warning("%s: no hermes-state products, read the grid", response.url)
            self.count("layout_fallback")
        cards = [
            Card(
                response.follow(
                    product["url"],
                    callback=self.parse_product,
                    errback=self.on_product_error,
                    cb_kwargs={"partial": product},
                ),
                product,
            )
            for product in category["products"]
        ]
        for output in await self.cards_to_fetch(response, cards, Product):
            yield output
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

    def parse_product(
        self, response: Response, partial: dict[str, Any] | None = None
    ) -> Iterator[Product]:
        # No partial: the product page alone, at its own URL (the structure gate judges it).
        partial = partial or {"url": response.url}
        fields = dict(partial)
        if isinstance(response, TextResponse):
            # The product page is more precise; the category's data where it has nothing.
            picked = read_product(
                response, partial.get("product_id"), self.selectors("product"), partial
            )
            fields.update(self.picked(response.url, picked))
            if picked.sources.get("name") in (None, "listing"):
                self.logger.warning("%s: product page unreadable, category data only", response.url)
                self.count("product_page_unparsed")
        self.note_missing(response.url, fields, PRODUCT_FIELDS)
        self.note_currency(response.url, fields)
        self.count("products")
        yield Product(**fields)

    def note_currency(self, url: str, fields: dict[str, Any]) -> None:
        """A price whose currency the page did not establish: reported, never guessed."""
        if fields.get("price") is not None and not fields.get("currency"):
            self.logger.warning("%s: price %s in an unknown currency", url, fields["price"])
            self.count("currency_unknown")

    def on_product_error(self, failure: Failure) -> Iterator[scrapy.Request | Product]:
        """The product page again later in the job; once its rounds are spent, the
        category's data marked incomplete."""
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
        self.logger.warning("product page failed: %s (%s)", request.url, failure.getErrorMessage())
        self.count("product_page_failed")
        retry = self.retry_part(request, "product_page", failure)
        if retry is not None:
            yield retry
            return
        partial = request.cb_kwargs["partial"]
        self.note_currency(request.url, partial)
        yield Product(**partial, incomplete=["product_page"])


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


def page_country(response: TextResponse, stated: Any = None) -> str | None:
    """The page's market as an ISO 3166 country: as its data states it (the category's
    ``country``, else the region of ``<html lang="en-ca">``), else from its locale path's
    market code (``/uk/en/`` -> GB)."""
    prefix = locale_prefix(response)
    for value in (
        text(stated),
        _lang_region(response.xpath("/html/@lang").get()),
        prefix.split("/")[1] if prefix else None,
    ):
        country = country_of_market(value)  # "uk" in a lang region too -> GB
        if country:
            return country
    return None


def _lang_region(lang: str | None) -> str | None:
    """``en-ca`` -> ``ca``, ``zh-Hant-tw`` -> ``tw``; None without a region."""
    match = re.match(r"^[A-Za-z]{2,3}(?:-[A-Za-z]{4})?-([A-Za-z]{2})\b", (lang or "").strip())
    return match.group(1) if match else None


def stated_currency(response: TextResponse, *bodies: Any) -> str | None:
    """A currency code the page states for all its prices: in a state body (ASSUMED
    keys), a price meta tag, or its JSON-LD offers; None when absent or contradictory."""
    values: list[Any] = [b.get(k) for b in bodies if isinstance(b, dict) for k in _CURRENCY_KEYS]
    values += [response.css(query).get() for query in _CURRENCY_META]
    for node in structured_nodes(response, "json-ld"):
        values += list(find_key(node, "priceCurrency"))
    codes = {code for value in values if (code := stated_code(first(value)))}
    return codes.pop() if len(codes) == 1 else None


def extract_category(
    response: TextResponse, selectors: PageSelectors | None = None
) -> dict[str, Any]:
    """A category page's products. ``selectors``: the profile's ``category`` selectors
    (default: the shipped profile's)."""
    shown = page_selectors("hermes", "category", selectors)
    entries = state_entries(response)
    products_body = next(
        (b for u, b in entries if u.rstrip("/").endswith("/products") and isinstance(b, dict)), {}
    )
    category_body = next((b for u, b in entries if "/category/" in u and isinstance(b, dict)), {})
    category_name = text(category_body.get("title")) or css_text(
        response, f"{shown['title']} ::text"
    )
    money = _Pricing(
        country=page_country(response, category_body.get("country")),
        stated=stated_currency(response, products_body),
        printed=_card_prices(response, shown),
    )
    prefix = locale_prefix(response)
    items = (products_body.get("products") or {}).get("items") or []
    products = [_from_state_item(item, response, prefix, money, category_name) for item in items]
    products = [p for p in products if p]
    source = "state"
    if not products:
        products = _from_grid(response, shown, money, category_name)
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


class _Pricing(NamedTuple):
    """What a category page tells about its prices' currency (see hermes_markets)."""

    country: str | None
    stated: str | None  # a code stated for the whole page
    printed: dict[str, str]  # SKU -> the card's printed price

    def currency(self, item_code: Any = None, sku: str | None = None) -> str | None:
        card = self.printed.get(sku or "")
        return resolve_currency(
            stated=(item_code, self.stated),
            # The product's own card; without one, every card (they share a currency).
            printed=[card] if card else list(self.printed.values()),
            country=self.country,
        )


def _card_prices(response: TextResponse, shown: PageSelectors) -> dict[str, str]:
    """SKU -> the price its grid card prints (``CA$6,250``)."""
    prices = {}
    for card in response.css(shown["grid_items"]):
        sku = _SKU_IN_URL.search(urlparse(card.css("a.product-item-name::attr(href)").get("")).path)
        price = css_text(card, _CARD_PRICE)
        if sku and price:
            prices[sku.group(1)] = price
    return prices


def _availability(stock: Any) -> str | None:
    if not isinstance(stock, dict):
        return None
    if stock.get("ecom"):
        return "InStock"
    if stock.get("retail") or stock.get("displayOnly"):
        return "InStoreOnly"  # shown online, sold in stores
    return "OutOfStock"


def _item_currency(item: dict[str, Any]) -> Any:
    return next((item[k] for k in _CURRENCY_KEYS if item.get(k)), None)


def _from_state_item(
    item: Any, response: TextResponse, prefix: str, money: _Pricing, category: str | None
) -> dict[str, Any]:
    if not isinstance(item, dict) or not item.get("sku") or not item.get("url"):
        return {}
    path = str(item["url"])
    url = response.urljoin(path if path.startswith(prefix + "/") else prefix + path)
    images = [
        absolute(response, a.get("url")) for a in item.get("assets") or [] if isinstance(a, dict)
    ]
    price = to_float(item.get("price"))
    sku = str(item["sku"])
    return {
        "url": url,
        "product_id": sku,
        "name": text(item.get("title")),
        "brand": "Hermès",
        "category": category,
        "price": price,
        "currency": money.currency(_item_currency(item), sku) if price is not None else None,
        "availability": _availability(item.get("stock")),
        "color": text(item.get("avgColor")),
        "images": unique(images) or None,
    }


def _from_grid(
    response: TextResponse, shown: PageSelectors, money: _Pricing, category: str | None
) -> list[dict[str, Any]]:
    products = []
    for card in response.css(shown["grid_items"]):
        href = card.css("a.product-item-name::attr(href)").get()
        if not href:
            continue
        url = response.urljoin(href)
        sku = _SKU_IN_URL.search(urlparse(url).path)
        printed = css_text(card, _CARD_PRICE)
        price = to_float(printed)
        image = card.css("img::attr(src)").get()
        products.append(
            {
                "url": url,
                "product_id": sku.group(1) if sku else None,
                "name": css_text(card, ".product-title ::text"),
                "brand": "Hermès",
                "category": category,
                "price": price,
                "currency": resolve_currency(
                    stated=[money.stated], printed=[printed], country=money.country
                )
                if price is not None
                else None,
                "images": [absolute(response, image)] if image else None,
            }
        )
    return products


def extract_product(
    response: TextResponse, sku: str | None = None, selectors: PageSelectors | None = None
) -> dict[str, Any]:
    """A product page's fields alone (assumed structure, see the module docstring)."""
    return read_product(response, sku, selectors).fields


def read_product(
    response: TextResponse,
    sku: str | None = None,
    selectors: PageSelectors | None = None,
    listing: dict[str, Any] | None = None,
) -> Picked:
    """A product's fields, each from the first source whose value fits it (module
    docstring); ``listing``: what the category page said of it, the last source."""
    shown = page_selectors("hermes", "product", selectors)
    sku = sku or (m.group(1) if (m := _SKU_IN_URL.search(urlparse(response.url).path)) else None)
    bodies = [b for _, b in state_entries(response) if isinstance(b, dict) and b.get("sku")]
    body = next((b for b in bodies if sku is None or b.get("sku") == sku), {})
    stated: list[Any] = [_item_currency(body)]  # currency codes, the product's own first
    state = {
        "name": text(body.get("title")),
        "price": to_float(body.get("price")),
        "availability": _availability(body.get("stock")),
        "color": text(body.get("avgColor")),
        "material": text(body.get("materials")),
        "description": long_text(body.get("description")),
    }
    ld = _product_jsonld(response, stated)
    labelled = [
        (css_text(d, ".label::text"), css_text(d, ".value::text"))
        for d in response.css(".product-detail")
    ]
    details = {label.lower(): value for label, value in labelled if label and value}
    printed = css_text(response, f"{shown['price']} ::text")
    dom = {
        "name": css_text(response, f"{shown['title']}::text"),
        "price": to_float(printed),
        "color": css_text(response, ".product-color .value::text"),
        "material": next((details[k] for k in _MATERIAL_LABELS if k in details), None),
        "description": long_text(css_text(response, f"{shown['description']} ::text")),
    }
    known = {k: v for k, v in (listing or {}).items() if k not in ("url", "currency")}
    picked = pick(
        "product",
        [("state", state), ("json-ld", ld), ("dom", dom), ("listing", known)],
        names=dict.fromkeys((*_PAGE_FIELDS, *known)),
    )
    # Without a currency of its own, the page's price keeps the category's: both pages are
    # the same market's (the product URL carries the category's locale).
    currency = (listing or {}).get("currency")
    if picked.fields["price"] is not None and picked.sources.get("price") != "listing":
        stated.append(stated_currency(response))
        where = page_country(response)
        currency = resolve_currency(stated=stated, printed=[printed], country=where) or currency
    shown_too = {"dimensions": text(body.get("dimensions")), **details}
    attributes = {k: v for k, v in shown_too.items() if v and k not in _MATERIAL_LABELS}
    fields = {**picked.fields, "currency": currency, "attributes": attributes or None}
    return dataclasses.replace(picked, fields=fields)


def _product_jsonld(response: TextResponse, stated: list[Any]) -> dict[str, Any]:
    """The fields of the page's JSON-LD ``Product`` (its currency code added to ``stated``)."""
    node = next((n for n in structured_nodes(response, "json-ld") if has_type(n, "Product")), None)
    if node is None:
        return {}
    offer = first(node.get("offers"))
    offer = offer if isinstance(offer, dict) else {}
    stated.append(first(offer.get("priceCurrency")))
    return {
        "name": text(node.get("name")),
        "price": to_float(offer.get("price")),
        "availability": schema_name(offer.get("availability")),
        "color": text(node.get("color")),
        "material": text(node.get("material")),
        "description": long_text(node.get("description")),
    }
