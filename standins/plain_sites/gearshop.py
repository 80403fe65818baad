"""gearshop: an outdoor shop of product cards and plain product pages, in English with
dollar prices and no ``<html lang>``. The home page shows category tiles and a few
products; categories page through ``?page=N`` with numbered links and a "Next" link (an
angle quote after it, no ``rel``); a product page names its product in a plain ``<h1>``,
shows a struck old price beside the price, the rating in an ``aria-label`` ("Rated 4.5
out of 5"), the review count in a link, the SKU in a "SKU: ..." line, a specification
table and cards of related products (with their own prices)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from standins.plain_sites.site import (
    Built,
    Catalog,
    Pager,
    Truth,
    document,
    esc,
    number,
    paragraphs,
)
from standins.plain_sites.words import SENTENCES_EN, money_en, slug, text

CATEGORIES = {
    "bikes": "Bikes",
    "tents": "Tents",
    "backpacks": "Backpacks",
    "stoves": "Camp Stoves",
    "lights": "Head Lamps",
    "jackets": "Rain Jackets",
}
BRANDS = ("Trailhead", "Northwind", "Summit & Co", "Ridgeback", "Alpenglow")
MODELS = ("Ranger", "Voyager", "Scout", "Pioneer", "Nomad", "Drifter", "Ascent", "Boulder")
COLOURS = ("Red", "Forest Green", "Slate Grey", "Navy", "Orange")
PER_PAGE = 12


@dataclass(frozen=True)
class Product:
    pid: int
    sku: str
    name: str
    category: str
    brand: str
    price: float
    old_price: float | None
    colour: str
    in_stock: bool
    rating: float | None  # halves of 5, None: no reviews yet
    reviews: int
    images: int
    description: tuple[str, ...]

    @property
    def path(self) -> str:
        return f"/p/{slug(self.name)}-{self.pid}"


def products(seed: int, count: int) -> list[Product]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        category = list(CATEGORIES)[n % len(CATEGORIES)]
        brand = rng.choice(BRANDS)
        name = f"{brand} {rng.choice(MODELS)} {CATEGORIES[category].rstrip('s')} {100 + n}"
        price = round(rng.uniform(15, 2400), 2)
        rated = rng.random() > 0.15
        out.append(
            Product(
                pid=5000 + n,
                sku=f"GS-{10000 + 7 * n}",
                name=name,
                category=category,
                brand=brand,
                price=price,
                old_price=round(price * 1.2, 2) if rng.random() < 0.3 else None,
                colour=rng.choice(COLOURS),
                in_stock=rng.random() > 0.2,
                rating=rng.randint(2, 10) / 2 if rated else None,
                reviews=rng.randint(1, 2400) if rated else 0,
                images=rng.randint(1, 4),
                description=tuple(text(rng, SENTENCES_EN, 2, 4)),
            )
        )
    return out


def _chrome(body: str, title: str) -> str:
    nav = "".join(f'<li><a href="/c/{c}">{esc(n)}</a></li>' for c, n in CATEGORIES.items())
    header = (
        '<header class="site-header"><a class="brand" href="/">GearShop</a>'
        f'<nav class="main-nav"><ul>{nav}</ul></nav>'
        '<div class="cart"><a href="/cart">Cart (0)</a> <span>$0.00</span></div></header>'
    )
    footer = (
        '<footer class="site-footer"><p>Free shipping on orders over $75.</p>'
        '<a href="/about">About us</a> <a href="/contact">Contact</a></footer>'
    )
    return document(f"{title} | GearShop", f"{header}\n<main>{body}</main>\n{footer}")


def _card(p: Product) -> str:
    stars = f'<div class="card-rating" aria-label="Rated {p.rating} out of 5"></div>'
    return (
        f'<div class="product-card"><a href="{p.path}"><img src="/img/{p.pid}-1.jpg" '
        f'alt="{esc(p.name)}"></a><h3 class="card-title"><a href="{p.path}">{esc(p.name)}</a>'
        f'</h3><div class="card-price">{money_en(p.price)}</div>'
        f"{stars if p.rating else ''}</div>"
    )


def _home(featured: list[Product]) -> str:
    tiles = "".join(
        f'<a class="tile" href="/c/{c}"><span>{esc(n)}</span></a>' for c, n in CATEGORIES.items()
    )
    cards = "".join(_card(p) for p in featured)
    body = (
        '<section class="hero"><h2>Gear for every trail</h2><p>Tested by people who use it.'
        f'</p></section><section class="tiles">{tiles}</section>'
        f'<section class="featured"><h2>Staff picks</h2><div class="grid">{cards}</div></section>'
    )
    return _chrome(body, "Outdoor gear")


def _listing(category: str, items: list[Product], page: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    links = []
    for n in range(1, pager.pages + 1):
        if n == page:
            links.append(f'<span class="current">{n}</span>')
        else:
            links.append(f'<a href="/c/{category}?page={n}">{n}</a>')
    if page < pager.pages:
        links.append(f'<a href="/c/{category}?page={page + 1}">Next \u203a</a>')
    cards = "".join(_card(p) for p in pager.window(items))
    body = (
        f"<h1>{esc(CATEGORIES[category])}</h1><p>{len(items)} products</p>"
        f'<div class="grid">{cards}</div><div class="pagination">{"".join(links)}</div>'
    )
    return _chrome(body, CATEGORIES[category])


def _product(p: Product, related: list[Product]) -> str:
    crumbs = (
        '<nav class="crumbs" aria-label="breadcrumb"><ol><li><a href="/">Home</a></li>'
        f'<li><a href="/c/{p.category}">{esc(CATEGORIES[p.category])}</a></li>'
        f'<li aria-current="page">{esc(p.name)}</li></ol></nav>'
    )
    gallery = "".join(
        f'<img src="/img/{p.pid}-{n}.jpg" alt="{esc(p.name)} view {n}">'
        for n in range(1, p.images + 1)
    )
    if p.rating is None:
        rating = '<p class="no-reviews">No reviews yet</p>'
    else:
        rating = (
            f'<div class="stars" aria-label="Rated {p.rating} out of 5"></div>'
            f'<a class="review-link" href="#reviews">{p.reviews:,} reviews</a>'
        )
    old = f"<del>{money_en(p.old_price)}</del> " if p.old_price else ""
    stock = "In stock" if p.in_stock else "Out of stock"
    specs = (("Brand", p.brand), ("Colour", p.colour), ("Warranty", "2 years"))
    table = "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in specs)
    body = (
        f'{crumbs}<div class="product-layout"><div class="gallery">{gallery}</div>'
        f'<div class="summary"><h1>{esc(p.name)}</h1>{rating}'
        f'<div class="price-box">{old}<span class="amount">{money_en(p.price)}</span></div>'
        f'<p class="stock">{stock}</p><p class="sku">SKU: {p.sku}</p>'
        "<button>Add to cart</button></div></div>"
        f'<section class="details"><h2>Description</h2>{paragraphs(p.description)}</section>'
        f'<section class="specs"><h2>Specifications</h2><table>{table}</table></section>'
        '<section class="related"><h2>You may also like</h2><div class="grid">'
        f"{''.join(_card(r) for r in related)}</div></section>"
    )
    return _chrome(body, p.name)


def build(seed: int, count: int) -> Built:
    catalog = Catalog()
    items = products(seed, count)
    for p in items:
        catalog.add(p.path, p, p.category)

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            return _home(items[:8])
        if path.startswith("/c/") and path[3:] in CATEGORIES:
            return _listing(path[3:], catalog.groups.get(path[3:], []), number(query, "page"))
        if (p := catalog.by_key.get(path)) is not None:
            siblings = [r for r in catalog.groups[p.category] if r is not p][:4]
            return _product(p, siblings)
        return None

    return Built(render, _truth(items), description="product cards, h1 product pages")


def _truth(items: list[Product]) -> Truth:
    expected = {}
    for p in items:
        fields = {
            "product_id": p.sku,
            "name": p.name,
            "brand": p.brand,
            "color": p.colour,
            "category": CATEGORIES[p.category],
            "breadcrumbs": ["Home", CATEGORIES[p.category], p.name],
            "price": p.price,
            "currency": "USD",
            "availability": "InStock" if p.in_stock else "OutOfStock",
            "description": "\n\n".join(p.description),
            "images": [f"/img/{p.pid}-{n}.jpg" for n in range(1, p.images + 1)],
        }
        if p.rating is not None:
            fields |= {"rating": p.rating, "review_count": p.reviews}
        expected[p.path] = fields
    return Truth("product", "url", expected, ("home", "listing", "detail"))
