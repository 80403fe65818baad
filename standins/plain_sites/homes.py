"""homes: an estate agent's portal. Two listings (``/for-sale``, ``/to-rent``, ``?page=N``
with ``li.next a[rel=next]``) of cards leading to ``/property/<id>`` pages whose facts are
``<dl>`` rows (Property type, Bedrooms, Bathrooms, Floor area "85 m²", Added on
"12/03/2025", day first), the price "£350,000" or "£1,200 pcm", the address line, key
features, the agency's block ("Marketed by") and a "Property ID: 48213" line."""

from __future__ import annotations

import datetime as dt
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
from standins.plain_sites.words import CITIES_UK, SENTENCES_EN, STREETS, text

KINDS = ("Flat", "Terraced house", "Semi-detached house", "Detached house", "Bungalow")
FEATURES = ("Garden", "Off-street parking", "Double glazing", "Gas central heating", "Balcony",
            "Close to schools", "Newly fitted kitchen", "Garage")  # fmt: skip
AGENCIES = ("Oakwood Estates", "Harbour Lettings", "Castle Property Co.", "Keystone Homes")
EPOCH = dt.date(2025, 4, 1)
PER_PAGE = 12


@dataclass(frozen=True)
class Home:
    hid: int
    sale: bool
    kind: str
    beds: int
    baths: int
    area: int
    street: str
    city: str
    postcode: str
    price: int
    added: dt.date
    agency: str
    features: tuple[str, ...]
    description: tuple[str, ...]
    photos: int

    @property
    def path(self) -> str:
        return f"/property/{self.hid}"

    @property
    def title(self) -> str:
        return f"{self.beds} bedroom {self.kind.lower()} {'for sale' if self.sale else 'to rent'}"

    @property
    def address(self) -> str:
        return f"{self.street}, {self.city} {self.postcode}"

    @property
    def shown_price(self) -> str:
        return f"£{self.price:,}" + ("" if self.sale else " pcm")


def homes(seed: int, count: int) -> list[Home]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        sale = n % 3 != 0
        beds = rng.randint(1, 5)
        out.append(
            Home(
                hid=48000 + 13 * n,
                sale=sale,
                kind=rng.choice(KINDS),
                beds=beds,
                baths=rng.randint(1, max(1, beds - 1)),
                area=rng.randint(35, 60) + 18 * beds,
                street=f"{rng.randint(1, 120)} {rng.choice(STREETS)}",
                city=rng.choice(CITIES_UK),
                postcode=f"{rng.choice('BLMSY')}S{rng.randint(1, 20)} {rng.randint(1, 9)}AB",
                price=rng.randint(90, 900) * 1000 if sale else rng.randint(60, 300) * 10,
                added=EPOCH - dt.timedelta(days=n),
                agency=rng.choice(AGENCIES),
                features=tuple(rng.sample(FEATURES, rng.randint(2, 5))),
                description=tuple(text(rng, SENTENCES_EN, 2, 4)),
                photos=rng.randint(2, 5),
            )
        )
    return out


def _page(title: str, body: str) -> str:
    header = (
        '<header class="topbar"><a class="logo" href="/">Homefinder</a><nav>'
        '<a href="/for-sale">Buy</a> <a href="/to-rent">Rent</a> <a href="/valuation">Sell</a>'
        "</nav></header>"
    )
    footer = '<footer class="bottom"><p>Homefinder Ltd. Registered in England.</p></footer>'
    return document(f"{title} | Homefinder", f"{header}<main>{body}</main>{footer}", lang="en-GB")


def _card(home: Home) -> str:
    return (
        f'<div class="listing-card"><a href="{home.path}"><img src="/photos/{home.hid}-1.jpg" '
        f'alt=""></a><div class="listing-info"><p class="listing-price">{home.shown_price}</p>'
        f'<h2><a href="{home.path}">{esc(home.title)}</a></h2>'
        f'<p class="listing-address">{esc(home.address)}</p><ul class="listing-stats">'
        f"<li>{home.beds} beds</li><li>{home.baths} baths</li></ul></div></div>"
    )


def _listing(base: str, title: str, items: list[Home], page: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    links = "".join(
        f'<li><a href="{base}?page={n}">{n}</a></li>'
        if n != page
        else f'<li class="active">{n}</li>'
        for n in range(1, pager.pages + 1)
    )
    if page < pager.pages:
        links += f'<li class="next"><a rel="next" href="{base}?page={page + 1}">Next</a></li>'
    cards = "".join(_card(home) for home in pager.window(items))
    body = f'<h1>{title}</h1><div class="results">{cards}</div><ul class="pagination">{links}</ul>'
    return _page(title, body)


def _home(home: Home) -> str:
    facts = (
        ("Property type", home.kind),
        ("Bedrooms", str(home.beds)),
        ("Bathrooms", str(home.baths)),
        ("Floor area", f"{home.area} m²"),
        ("Tenure", "Freehold" if home.sale else "n/a"),
        ("Added on", f"{home.added:%d/%m/%Y}"),
    )
    rows = "".join(f"<dt>{k}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    features = "".join(f"<li>{esc(f)}</li>" for f in home.features)
    photos = "".join(
        f'<img src="/photos/{home.hid}-{n}.jpg" alt="Photo {n}">' for n in range(1, home.photos + 1)
    )
    body = (
        f'<div class="photos">{photos}</div><div class="headline"><h1>{esc(home.title)}</h1>'
        f'<p class="address">{esc(home.address)}</p><p class="price">{home.shown_price}</p></div>'
        f'<dl class="key-facts">{rows}</dl><h2>Key features</h2><ul class="features">{features}'
        f'</ul><h2>Property description</h2><div class="description">'
        f"{paragraphs(home.description)}</div>"
        f'<div class="agent"><p>Marketed by</p><h3>{esc(home.agency)}</h3>'
        "<p>Call 0117 496 0123</p></div>"
        f'<p class="ref">Property ID: {home.hid}</p>'
    )
    return _page(home.title, body)


def build(seed: int, count: int) -> Built:
    items = homes(seed, count)
    catalog = Catalog()
    for home in items:
        catalog.add(home.path, home, "sale" if home.sale else "rent")

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            cards = "".join(_card(home) for home in items[:6])
            body = (
                '<section class="search"><h1>Find your next home</h1><p><a href="/for-sale">'
                'Homes for sale</a> · <a href="/to-rent">Homes to rent</a></p></section>'
                f'<h2>Just added</h2><div class="results">{cards}</div>'
            )
            return _page("Homes for sale and to rent", body)
        if path == "/for-sale":
            sale = catalog.groups.get("sale", [])
            return _listing(path, "Property for sale", sale, number(query, "page"))
        if path == "/to-rent":
            rent = catalog.groups.get("rent", [])
            return _listing(path, "Property to rent", rent, number(query, "page"))
        if (home := catalog.by_key.get(path)) is not None:
            return _home(home)
        return None

    return Built(render, _truth(items), description="real estate, dl rows")


def _truth(items: list[Home]) -> Truth:
    expected = {
        home.path: {
            "listing_id": str(home.hid),
            "title": home.title,
            "operation": "sale" if home.sale else "rent",
            "property_type": home.kind,
            "price": float(home.price),
            "currency": "GBP",
            "rooms": home.beds,
            "bathrooms": home.baths,
            "area_m2": float(home.area),
            "address": home.address,
            "features": list(home.features),
            "description": "\n\n".join(home.description),
            "images": [f"/photos/{home.hid}-{n}.jpg" for n in range(1, home.photos + 1)],
            "agency": home.agency,
            "published_at": home.added.isoformat(),
        }
        for home in items
    }
    return Truth("property_listing", "url", expected, ("home", "listing", "detail"))
