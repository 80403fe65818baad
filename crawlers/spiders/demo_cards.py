"""The demo shop's listing cards: each product's URL, SKU and ``CARD_FIELDS`` as its
product page gives them, in the card markups of the layouts seen (pure functions: tests
feed them pages)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from parsel import Selector
from scrapy.http import TextResponse

from crawlers.profiles import PageSelectors
from crawlers.spiders.base import page_selectors
from crawlers.spiders.common import css_text, money, text, to_float, to_int

# What a listing card shows of its product, as the product page gives it (the profile's
# [recrawl] card_fields name them).
CARD_FIELDS = ("name", "price", "currency", "availability", "rating", "review_count")
# Availability as the cards print it -> its schema.org name (the product page's value).
_AVAILABILITY = {"in stock": "InStock", "out of stock": "OutOfStock", "pre-order": "PreOrder"}
PRODUCT_SKU = re.compile(r"/product/([^/?#]+)")


@dataclass(frozen=True)
class _CardMarkup:
    """Where a layout's listing card shows each field: a CSS query, and a regular
    expression whose first group is the value (None: the whole text)."""

    card: str
    sku: str
    link: str
    name: str
    price: str
    availability: str
    rating: tuple[str, str | None]
    review_count: tuple[str, str | None]


# The shop's card markups, tried in order: the current one, then those seen before.
CARD_MARKUPS = (
    _CardMarkup(
        card="li.product-card",
        sku="::attr(data-sku)",
        link="{product_links}::attr(href)",  # the profile's listing selector
        name=".product-name ::text",
        price=".product-price ::text",
        availability=".card-availability::attr(data-availability)",
        rating=(".card-rating .rating-value::text", None),
        review_count=(".card-rating .review-count::text", None),
    ),
    _CardMarkup(
        card="article.tile",
        sku="::attr(data-product-id)",
        link="a.tile__link::attr(href)",
        name=".tile__title ::text",
        price=".tile__price ::text",
        availability=".tile__stock ::text",
        rating=(".tile__stars::attr(title)", r"([\d.]+)\s+of\s+5"),
        review_count=(".tile__stars small::text", r"(\d+)"),
    ),
    _CardMarkup(
        card="div.ds-card",
        sku="::attr(data-sku)",
        link="a.ds-card__link::attr(href)",
        name=".ds-card__name ::text",
        price=".ds-card__price ::text",
        availability=".ds-card__stock ::text",
        rating=(".ds-card__score::text", r"([\d.]+)\s*★"),
        review_count=(".ds-card__score::text", r"·\s*(\d+)"),
    ),
)


def extract_cards(
    response: TextResponse,
    nodes: Mapping[str, Sequence[Selector]] | None = None,
    selectors: PageSelectors | None = None,
) -> list[dict[str, Any]]:
    """The product cards of a listing page: each product's URL (absolute), SKU and
    ``CARD_FIELDS``, valued as its product page gives them (price a float, currency the
    ISO code, availability the schema.org name). [] when no known card markup is found.
    ``nodes``: each markup's card elements as already read (``crawlers.limits.links``), by its
    CSS query; else they are queried on the page. ``selectors``: the profile's
    ``listing`` selectors (default: the shipped profile's)."""
    listing = page_selectors("demo", "listing", selectors)
    for markup in CARD_MARKUPS:
        found = nodes.get(markup.card, []) if nodes is not None else response.css(markup.card)
        if found:
            markup = replace(markup, link=markup.link.format_map(listing))
            return [card for node in found if (card := _card(response, node, markup))]
    return []


def _card(response: TextResponse, node: Selector, markup: _CardMarkup) -> dict[str, Any]:
    href = node.css(markup.link).get()
    if not href:
        return {}
    url = response.urljoin(href)
    sku = text(node.css(markup.sku).get())
    if sku is None and (match := PRODUCT_SKU.search(urlparse(url).path)):
        sku = match.group(1)
    price = money(css_text(node, markup.price))
    availability = text(node.css(markup.availability).get())
    return {
        "url": url,
        "sku": sku,
        "name": css_text(node, markup.name),
        "price": price.amount,
        "currency": price.currency,
        "availability": _AVAILABILITY.get((availability or "").lower(), availability),
        "rating": to_float(_matched(node, *markup.rating)),
        "review_count": to_int(_matched(node, *markup.review_count)),
    }


def _matched(node: Selector, query: str, pattern: str | None) -> str | None:
    value = css_text(node, query)
    if value is None or pattern is None:
        return value
    match = re.search(pattern, value)
    return match.group(1) if match else None
