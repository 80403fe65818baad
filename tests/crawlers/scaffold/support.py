"""Small pages of made-up sites for the scaffold's unit tests: a shop with JSON-LD
products (``shop_pages``) and one without structured data, written the way many shops
are (``plain_shop_pages``), and helpers to read a unit of a page."""

from __future__ import annotations

import json

from crawlers.scaffold.page import Page
from crawlers.scaffold.synth import Unit

BASE = "http://shop.test"


def unit(html: str, url: str = BASE + "/x") -> Unit:
    """A page of ``html`` as a unit (its one item)."""
    page = Page(url, html=html)
    return Unit(page, page.response.selector)


def cards(html: str, css: str, url: str = BASE + "/list") -> list[Unit]:
    """Each ``css`` match of the page as a unit (a card of a list)."""
    page = Page(url, html=html)
    return [Unit(page, element) for element in page.response.css(css)]


def product_html(sku: str, name: str, price: str, *, rating: float | None = 4.5) -> str:
    node: dict[str, object] = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": name,
        "sku": sku,
        "brand": {"@type": "Brand", "name": "Acme"},
        "offers": {
            "@type": "Offer",
            "price": price,
            "priceCurrency": "EUR",
            "availability": "https://schema.org/InStock",
        },
    }
    if rating is not None:
        node["aggregateRating"] = {"@type": "AggregateRating", "ratingValue": rating}
    return (
        "<html><head><script type='application/ld+json'>"
        + json.dumps(node)
        + "</script></head><body><nav class='crumbs'><a href='/'>Home</a></nav>"
        f"<h1 class='product-title'>{name}</h1>"
        f"<p class='price'><span class='amount'>{price}</span></p>"
        "<p class='stock' data-availability='InStock'>In stock</p>"
        "</body></html>"
    )


def listing_html(skus: list[str], next_page: str | None = None, names: bool = False) -> str:
    cards_ = "".join(
        f"<li class='card'><a class='product-link' href='/product/{sku}'>"
        f"{('Thing ' + str(n)) if names else sku}</a><span>{n}9.50 €</span></li>"
        for n, sku in enumerate(skus)
    )
    pager = f"<a rel='next' class='next' href='{next_page}'>Next</a>" if next_page else ""
    return (
        "<html><body><header><a href='/'>Home</a><a href='/about'>About</a></header>"
        f"<ul class='grid'>{cards_}</ul><nav class='pager'>{pager}</nav></body></html>"
    )


def home_html() -> str:
    return (
        "<html><body><header><a href='/'>Home</a></header><main><h2>Welcome</h2>"
        "<ul class='cats'><li><a href='/category/kitchen'>Kitchen</a></li>"
        "<li><a href='/category/garden'>Garden</a></li><li><a href='/category/tools'>"
        "Tools</a></li></ul><a href='/about'>About</a></main></body></html>"
    )


def shop_pages() -> list[Page]:
    """Home, categories (one with a second page), six products, an about page."""
    skus = [f"AC-{n:05d}" for n in range(1, 7)]
    names = {sku: f"Thing {n}" for n, sku in enumerate(skus)}
    pages = [
        Page(BASE + "/", html=home_html(), source="start"),
        Page(
            BASE + "/category/kitchen",
            html=_named(listing_html(skus[:3], "/category/kitchen?page=2"), names),
        ),
        Page(BASE + "/category/kitchen?page=2", html=_named(listing_html(skus[3:6]), names)),
        Page(BASE + "/category/garden", html=_named(listing_html(skus[3:]), names)),
        Page(BASE + "/about", html="<html><body><p>About us</p></body></html>"),
    ]
    for n, sku in enumerate(skus):
        html = product_html(sku, names[sku], f"{n}9.50")
        pages.append(Page(f"{BASE}/product/{sku}", html=html))
    return pages


def _named(html: str, names: dict[str, str]) -> str:
    for sku, name in names.items():
        html = html.replace(f">{sku}</a>", f">{name}</a>")
    return html
