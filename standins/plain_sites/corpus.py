"""Every local site of this package by name, and the truth about each (what its generator
rendered): the two profile-only sites the team ships (werkstatt, sayings) and the
onboarding corpus ``python -m bench.onboarding`` measures, ten sites built unlike each
other and unlike the demo shop (docs/sites.md, "Onboarding corpus")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from standins.plain_sites import (
    bookshop,
    cursos,
    data,
    enoteca,
    gadgets,
    gearshop,
    homes,
    newsroom,
    oldbooks,
    pages,
    quotebook,
    shipped,
    vacancies,
)
from standins.plain_sites.site import Built, Truth

__all__ = ["CORPUS", "KINDS", "build"]


def _werkstatt(seed: int, count: int) -> Built:
    render = shipped.werkstatt(seed, count)
    truth: dict[str, dict[str, Any]] = {}
    for p in data.products(seed, count):
        truth[f"/artikel/{p.sku}-{p.slug}"] = {
            "product_id": p.sku, "name": p.name, "brand": p.brand,
            "category": p.category.title(),
            "breadcrumbs": ["Startseite", p.category.title(), p.name],
            "price": p.price, "currency": "EUR", "color": p.colour, "material": p.material,
            "variants": list(p.variants), "description": "\n\n".join(p.description),
            "rating": float(p.rating), "review_count": p.reviews,
            "images": [f"/bilder/{p.sku}-{n}.jpg" for n in range(1, p.images + 1)],
        }  # fmt: skip
    roles = ("home", "listing", "detail")
    return Built(render, Truth("product", "url", truth, roles), pages.robots_txt(), "German shop")


def _sayings(seed: int, count: int) -> Built:
    render = shipped.sayings(seed, count)
    truth = {
        q.text: {
            "text": q.text, "author": q.author, "tags": list(q.tags), "like_count": q.likes,
            "published_at": f"{q.year}-{q.month:02d}-{q.day:02d}",
        }
        for q in data.quotes(seed, count)
    }  # fmt: skip
    roles = ("home", "items")
    return Built(render, Truth("quote", "text", truth, roles), pages.robots_txt(), "quotes board")


SITES: dict[str, Callable[[int, int], Built]] = {
    "werkstatt": _werkstatt,
    "sayings": _sayings,
    "gearshop": gearshop.build,
    "bookshop": bookshop.build,
    "vacancies": vacancies.build,
    "newsroom": newsroom.build,
    "quotebook": quotebook.build,
    "homes": homes.build,
    "enoteca": enoteca.build,
    "gadgets": gadgets.build,
    "oldbooks": oldbooks.build,
    "cursos": cursos.build,
}
KINDS = tuple(SITES)
# The onboarding corpus: every site here, the shipped ones included.
CORPUS = KINDS


def build(kind: str, seed: int, count: int) -> Built:
    return SITES[kind](seed, count)
