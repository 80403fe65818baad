"""gadgets: an electronics shop written with utility classes only (``flex items-center
gap-2 text-sm text-gray-600``): no class names the data. Categories are a query
(``/shop?category=audio&page=2``), the pager a ``nav[aria-label=Pagination]`` with
"Previous"/"Next"; a product page rates with five SVG stars coloured ``text-yellow-400``
(filled) or ``text-gray-200``, lists its facts as ``<dl>`` rows each wrapped in a
``<div>``, and its breadcrumbs in ``nav[aria-label=Breadcrumb]``."""

from __future__ import annotations

import random
from dataclasses import dataclass

from standins.plain_sites.site import Built, Catalog, Pager, Truth, document, esc, number
from standins.plain_sites.words import SENTENCES_EN, money_en, slug, text

CATEGORIES = {"audio": "Audio", "cameras": "Cameras", "wearables": "Wearables",
              "smart-home": "Smart Home", "gaming": "Gaming"}  # fmt: skip
BRANDS = ("Voltix", "Lumina", "Orbit Labs", "Pixelon", "Sonaro")
THINGS = {"audio": "Headphones", "cameras": "Camera", "wearables": "Watch",
          "smart-home": "Speaker", "gaming": "Controller"}  # fmt: skip
COLOURS = ("Black", "White", "Midnight Blue", "Silver")
PER_PAGE = 8
STAR = (
    '<svg class="h-5 w-5 flex-shrink-0 {}" viewBox="0 0 20 20" fill="currentColor" '
    'aria-hidden="true"><path d="M10 1l3 6 6 1-5 4 1 6-5-3-5 3 1-6-5-4 6-1z"/></svg>'
)


@dataclass(frozen=True)
class Gadget:
    model: str
    name: str
    category: str
    brand: str
    colour: str
    price: float
    in_stock: bool
    stars: int
    reviews: int
    description: tuple[str, ...]
    photos: int

    @property
    def path(self) -> str:
        return f"/products/{slug(self.name)}"


def gadgets(seed: int, count: int) -> list[Gadget]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        category = list(CATEGORIES)[n % len(CATEGORIES)]
        brand = rng.choice(BRANDS)
        model = f"{brand[:2].upper()}-{rng.randint(100, 999)}{chr(65 + n % 26)}"
        out.append(
            Gadget(
                model=model,
                name=f"{brand} {THINGS[category]} {model}",
                category=category,
                brand=brand,
                colour=rng.choice(COLOURS),
                price=round(rng.uniform(19, 1900), 2),
                in_stock=rng.random() > 0.25,
                stars=rng.randint(1, 5),
                reviews=rng.randint(3, 4000),
                description=tuple(text(rng, SENTENCES_EN, 1, 3)),
                photos=rng.randint(1, 3),
            )
        )
    return out


def _page(title: str, body: str) -> str:
    nav = "".join(
        f'<a href="/shop?category={k}" class="text-sm font-medium text-gray-700 '
        f'hover:text-gray-800">{v}</a>'
        for k, v in CATEGORIES.items()
    )
    header = (
        '<header class="relative bg-white"><div class="mx-auto max-w-7xl px-4"><div class="flex '
        'h-16 items-center"><a href="/" class="ml-4 flex lg:ml-0 font-bold">Gadgetry</a>'
        f'<div class="ml-8 flex space-x-8">{nav}</div></div></div></header>'
    )
    footer = (
        '<footer class="bg-gray-50"><div class="mx-auto max-w-7xl py-12 px-4"><p class="text-xs '
        'text-gray-500">© Gadgetry, Inc. All rights reserved.</p></div></footer>'
    )
    return document(f"{title} · Gadgetry", f"{header}<main>{body}</main>{footer}", lang="en-US")


def _card(g: Gadget) -> str:
    return (
        '<div class="group relative"><div class="aspect-h-1 aspect-w-1 w-full overflow-hidden '
        f'rounded-md bg-gray-200"><img src="/cdn/{g.model}-1.webp" alt="" class="h-full w-full '
        'object-cover"></div><div class="mt-4 flex justify-between"><div><h3 class="text-sm '
        f'text-gray-700"><a href="{g.path}">{esc(g.name)}</a></h3><p class="mt-1 text-sm '
        f'text-gray-500">{g.colour}</p></div><p class="text-sm font-medium text-gray-900">'
        f"{money_en(g.price)}</p></div></div>"
    )


def _grid(items: list[Gadget]) -> str:
    cards = "".join(_card(g) for g in items)
    grid = "mt-6 grid grid-cols-1 gap-x-6 gap-y-10 sm:grid-cols-2 lg:grid-cols-4"
    return f'<div class="{grid}">{cards}</div>'


def _shop(key: str, items: list[Gadget], page: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    nav = ""
    button = "relative inline-flex items-center rounded-md px-3 py-2 text-sm font-semibold"
    if page > 1:
        nav += f'<a href="/shop?category={key}&amp;page={page - 1}" class="{button}">Previous</a>'
    if page < pager.pages:
        nav += f'<a href="/shop?category={key}&amp;page={page + 1}" class="ml-3 {button}">Next</a>'
    body = (
        f'<div class="mx-auto max-w-2xl px-4 py-16"><h2 class="text-2xl font-bold tracking-tight">'
        f'{CATEGORIES[key]}</h2>{_grid(pager.window(items))}<nav class="flex items-center '
        f'justify-between border-t py-3" aria-label="Pagination"><div class="flex flex-1 '
        f'justify-end">{nav}</div></nav></div>'
    )
    return _page(CATEGORIES[key], body)


def _gadget(g: Gadget) -> str:
    crumbs = (
        '<nav aria-label="Breadcrumb"><ol role="list" class="mx-auto flex max-w-2xl items-center '
        'space-x-2 px-4"><li><div class="flex items-center"><a href="/" class="mr-2 text-sm '
        'font-medium text-gray-900">Home</a><span class="text-gray-300">/</span></div></li>'
        f'<li><div class="flex items-center"><a href="/shop?category={g.category}" class="mr-2 '
        f'text-sm font-medium text-gray-900">{CATEGORIES[g.category]}</a><span '
        f'class="text-gray-300">/</span></div></li><li class="text-sm"><a href="{g.path}" '
        'aria-current="page" '
        f'class="font-medium text-gray-500 hover:text-gray-600">{esc(g.name)}</a></li></ol></nav>'
    )
    stars = "".join(
        STAR.format("text-yellow-400" if n < g.stars else "text-gray-200") for n in range(5)
    )
    photos = "".join(
        f'<img src="/cdn/{g.model}-{n}.webp" alt="" class="h-full w-full object-cover">'
        for n in range(1, g.photos + 1)
    )
    stock = (
        '<p class="mt-2 text-sm text-green-600">In stock</p>'
        if g.in_stock
        else '<p class="mt-2 text-sm text-red-600">Out of stock</p>'
    )
    facts = (("Brand", g.brand), ("Model", g.model), ("Colour", g.colour))
    rows = "".join(
        f'<div class="flex justify-between py-2"><dt class="text-gray-500">{k}</dt>'
        f'<dd class="font-medium text-gray-900">{esc(v)}</dd></div>'
        for k, v in facts
    )
    description = "".join(f'<p class="text-base text-gray-900">{esc(p)}</p>' for p in g.description)
    body = (
        f'<div class="pt-6">{crumbs}<div class="mx-auto mt-6 max-w-2xl sm:px-6 lg:grid '
        f'lg:grid-cols-3 lg:gap-x-8">{photos}</div><div class="mx-auto max-w-2xl px-4 pb-16 pt-10">'
        f'<div class="lg:col-span-2 lg:border-r lg:pr-8"><h1 class="text-2xl font-bold '
        f'tracking-tight text-gray-900 sm:text-3xl">{esc(g.name)}</h1></div><div class="mt-4 '
        f'lg:row-span-3 lg:mt-0"><p class="text-3xl tracking-tight text-gray-900">'
        f'{money_en(g.price)}</p><div class="mt-6"><div class="flex items-center"><div class="flex '
        f'items-center">{stars}</div><a href="#reviews" class="ml-3 text-sm font-medium '
        f'text-indigo-600 hover:text-indigo-500">{g.reviews:,} reviews</a></div></div>{stock}'
        '<button type="submit" class="mt-10 flex w-full items-center justify-center rounded-md '
        'bg-indigo-600 px-8 py-3 text-base font-medium text-white">Add to bag</button></div>'
        '<div class="py-10 lg:col-span-2 lg:col-start-1 lg:border-r lg:pb-16 lg:pr-8 lg:pt-6">'
        f'<div class="space-y-6">{description}</div><dl class="mt-8 divide-y divide-gray-200">'
        f"{rows}</dl></div></div></div>"
    )
    return _page(g.name, body)


def build(seed: int, count: int) -> Built:
    items = gadgets(seed, count)
    catalog = Catalog()
    for g in items:
        catalog.add(g.path, g, g.category)

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            tiles = "".join(
                f'<a href="/shop?category={k}" class="rounded-lg bg-gray-100 p-6 text-lg '
                f'font-semibold">{v}</a>'
                for k, v in CATEGORIES.items()
            )
            body = (
                '<div class="mx-auto max-w-7xl px-4 py-24"><h1 class="text-4xl font-bold">'
                f'Shop by category</h1><div class="mt-6 grid grid-cols-5 gap-4">{tiles}</div>'
                f'<h2 class="mt-16 text-2xl font-bold">Trending now</h2>{_grid(items[:4])}</div>'
            )
            return _page("Electronics", body)
        if path == "/shop":
            key = query.get("category", [""])[-1]
            if key in CATEGORIES:
                return _shop(key, catalog.groups.get(key, []), number(query, "page"))
            return None
        if (g := catalog.by_key.get(path)) is not None:
            return _gadget(g)
        return None

    return Built(render, _truth(items), description="utility classes only")


def _truth(items: list[Gadget]) -> Truth:
    expected = {
        g.path: {
            "product_id": g.model,
            "name": g.name,
            "brand": g.brand,
            "color": g.colour,
            "price": g.price,
            "currency": "USD",
            "availability": "InStock" if g.in_stock else "OutOfStock",
            "rating": float(g.stars),
            "review_count": g.reviews,
            "description": "\n\n".join(g.description),
            "category": CATEGORIES[g.category],
            "breadcrumbs": ["Home", CATEGORIES[g.category], g.name],
            "images": [f"/cdn/{g.model}-{n}.webp" for n in range(1, g.photos + 1)],
        }
        for g in items
    }
    return Truth("product", "url", expected, ("home", "listing", "detail"))
