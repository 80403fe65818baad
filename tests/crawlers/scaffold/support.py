"""Small pages of a made-up shop for the scaffold's unit tests."""

from __future__ import annotations

import json

from crawlers.scaffold.classify import Page

BASE = "http://shop.test"


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


def listing_html(skus: list[str], next_page: str | None = None) -> str:
    cards = "".join(
        f"<li class='card'><a class='product-link' href='/product/{sku}'>{sku}</a></li>"
        for sku in skus
    )
    pager = f"<a rel='next' class='next' href='{next_page}'>Next</a>" if next_page else ""
    return (
        "<html><body><a href='/'>Home</a><a href='/about'>About</a>"
        f"<ul class='grid'>{cards}</ul><nav class='pager'>{pager}</nav></body></html>"
    )


def home_html() -> str:
    return (
        "<html><body><a class='cat' href='/category/kitchen'>Kitchen</a>"
        "<a class='cat' href='/category/garden'>Garden</a>"
        "<a href='/about'>About</a></body></html>"
    )


def shop_pages() -> list[Page]:
    """Home, two categories (one with a second page), six products, an about page."""
    skus = [f"AC-{n:05d}" for n in range(1, 7)]
    pages = [
        Page(BASE + "/", html=home_html(), source="start"),
        Page(BASE + "/category/kitchen", html=listing_html(skus[:3], "/category/kitchen?page=2")),
        Page(BASE + "/category/kitchen?page=2", html=listing_html(skus[3:4])),
        Page(BASE + "/category/garden", html=listing_html(skus[3:])),
        Page(BASE + "/about", html="<html><body><p>About us</p></body></html>"),
    ]
    for n, sku in enumerate(skus):
        pages.append(
            Page(f"{BASE}/product/{sku}", html=product_html(sku, f"Thing {n}", f"{n}9.50"))
        )
    return pages
