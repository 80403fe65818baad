"""The two sites the team ships profiles for (``crawlers/profiles/werkstatt.toml``,
``sayings.toml``): their paths, rendered by ``standins.plain_sites.pages`` from
``standins.plain_sites.data``.

``werkstatt``: ``/``, ``/kategorie/<slug>?seite=N``, ``/artikel/<sku>-<slug>``.
``sayings``: ``/``, ``/quotes?page=N``, ``/tag/<tag>?page=N``, ``/author/<slug>``.
"""

from __future__ import annotations

import re

from standins.plain_sites import data, pages
from standins.plain_sites.site import Render, number


def werkstatt(seed: int, items: int) -> Render:
    products = data.products(seed, items)
    by_sku = {p.sku: p for p in products}
    categories = data.CATEGORIES

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            return pages.shop_home(categories, products[:8])
        if match := re.fullmatch(r"/kategorie/([a-z]+)", path):
            if match[1] not in categories:
                return None
            shown = [p for p in products if p.category == match[1]]
            return pages.shop_listing(categories, match[1], shown, number(query, "seite"))
        if match := re.fullmatch(r"/artikel/(WS-\d+)-([a-z0-9-]+)", path):
            product = by_sku.get(match[1])
            if product is None or product.slug != match[2]:
                return None
            return pages.shop_product(categories, product)
        return None

    return render


def sayings(seed: int, items: int) -> Render:
    quotes = data.quotes(seed, items)
    tags = data.TAGS

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            return pages.home_quotes(tags)
        if path == "/quotes":
            return pages.quote_list(tags, quotes, number(query, "page"), path, "All quotes")
        if match := re.fullmatch(r"/tag/([a-z]+)", path):
            shown = [q for q in quotes if match[1] in q.tags]
            if not shown:
                return None
            title = f"Quotes tagged {match[1]}"
            return pages.quote_list(tags, shown, number(query, "page"), path, title)
        if match := re.fullmatch(r"/author/([a-z-]+)", path):
            names = {a.lower().replace(" ", "-"): a for a in data.AUTHORS}
            name = names.get(match[1])
            if name is None:
                return None
            return pages.author_page(tags, name, sum(q.author == name for q in quotes))
        return None

    return render
