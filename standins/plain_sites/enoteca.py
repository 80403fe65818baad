"""enoteca: an Italian wine shop (``<html lang="it">``). Prices as Italy prints them
(``1.234,56 €``), facts as "label: value" lines with the label in ``<strong>``
(Prezzo, Produttore, Annata, Disponibilità "Disponibile"/"Esaurito", Codice), the rating
as "4,5 su 5 (12 recensioni)", breadcrumbs as links separated by a right angle quote (no list), and
categories paging through ``?pagina=N`` ("Successiva" and an angle quote)."""

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
from standins.plain_sites.words import SENTENCES_IT, money_eu, slug, text

CATEGORIES = {"rossi": "Vini rossi", "bianchi": "Vini bianchi", "spumanti": "Spumanti",
              "rosati": "Vini rosati", "dolci": "Vini dolci"}  # fmt: skip
PRODUCERS = ("Antinori", "Cantina del Colle", "Tenuta Sassi", "Fattoria Bruni", "Vigne Alte")
KINDS = ("Riserva", "Classico", "Superiore", "IGT")
GRAPES = ("Sangiovese", "Nebbiolo", "Vermentino", "Glera", "Barbera", "Primitivo", "Moscato")
PER_PAGE = 9


@dataclass(frozen=True)
class Wine:
    code: str
    name: str
    category: str
    producer: str
    vintage: int
    price: float
    available: bool
    rating: float | None
    reviews: int
    description: tuple[str, ...]
    photos: int

    @property
    def path(self) -> str:
        return f"/prodotto/{slug(self.name)}"


def wines(seed: int, count: int) -> list[Wine]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        category = list(CATEGORIES)[n % len(CATEGORIES)]
        vintage = rng.randint(2012, 2023)
        rated = rng.random() > 0.2
        out.append(
            Wine(
                code=f"EN-{2000 + 3 * n}",
                name=f"{rng.choice(GRAPES)} {rng.choice(KINDS)} {vintage} n. {n + 1}",
                category=category,
                producer=rng.choice(PRODUCERS),
                vintage=vintage,
                price=round(rng.uniform(6, 1800), 2),
                available=rng.random() > 0.2,
                rating=rng.randint(5, 10) / 2 if rated else None,
                reviews=rng.randint(1, 1500) if rated else 0,
                description=tuple(text(rng, SENTENCES_IT, 1, 3)),
                photos=rng.randint(1, 3),
            )
        )
    return out


def _page(title: str, body: str) -> str:
    nav = "".join(f'<li><a href="/vini/{k}">{v}</a></li>' for k, v in CATEGORIES.items())
    header = (
        '<div id="testata"><a href="/" id="marchio">Enoteca Bruni</a>'
        f'<ul id="menu">{nav}</ul><a href="/carrello">Carrello (0)</a></div>'
    )
    footer = '<div id="piede"><p>Spedizione gratuita sopra i 99,00 €. P.IVA 01234567890</p></div>'
    return document(f"{title} - Enoteca Bruni", f"{header}{body}{footer}", lang="it")


def _card(wine: Wine) -> str:
    return (
        f'<div class="scheda"><a href="{wine.path}"><img src="/foto/{wine.code}-1.jpg" alt="">'
        f'</a><h3><a href="{wine.path}">{esc(wine.name)}</a></h3>'
        f'<p class="prezzo">{money_eu(wine.price)}</p></div>'
    )


def _category(key: str, items: list[Wine], page: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    links = "".join(
        f'<a href="/vini/{key}?pagina={n}">{n}</a>' if n != page else f"<em>{n}</em>"
        for n in range(1, pager.pages + 1)
    )
    if page < pager.pages:
        links += f' <a class="succ" href="/vini/{key}?pagina={page + 1}">Successiva \u203a</a>'
    cards = "".join(_card(wine) for wine in pager.window(items))
    body = (
        f'<div id="contenuto"><h1>{CATEGORIES[key]}</h1><div class="griglia">{cards}</div>'
        f'<div class="pagine">{links}</div></div>'
    )
    return _page(CATEGORIES[key], body)


def _wine(wine: Wine) -> str:
    crumbs = (
        f'<div class="percorso"><a href="/">Home</a> \u203a <a href="/vini/{wine.category}">'
        f"{CATEGORIES[wine.category]}</a> \u203a <span>{esc(wine.name)}</span></div>"
    )
    photos = "".join(
        f'<img src="/foto/{wine.code}-{n}.jpg" alt="{esc(wine.name)}">'
        for n in range(1, wine.photos + 1)
    )
    if wine.rating is not None:
        shown = f"{wine.rating:.1f}".replace(".", ",")
        count = f"<span>({wine.reviews} recensioni)</span>"
        rating = f'<div class="valutazione">{shown} su 5 {count}</div>'
    else:
        rating = '<div class="valutazione">Nessuna recensione</div>'
    facts = (
        ("Prezzo", money_eu(wine.price)),
        ("Produttore", wine.producer),
        ("Annata", str(wine.vintage)),
        ("Disponibilità", "Disponibile" if wine.available else "Esaurito"),
        ("Codice", wine.code),
    )
    lines = "".join(f"<p><strong>{k}:</strong> {esc(v)}</p>" for k, v in facts)
    body = (
        f'<div id="contenuto">{crumbs}<div class="prodotto"><div class="foto">{photos}</div>'
        f'<div class="dati"><h1>{esc(wine.name)}</h1>{rating}{lines}'
        "<button>Aggiungi al carrello</button></div></div>"
        f"<h2>Descrizione</h2>{paragraphs(wine.description)}</div>"
    )
    return _page(wine.name, body)


def build(seed: int, count: int) -> Built:
    items = wines(seed, count)
    catalog = Catalog()
    for wine in items:
        catalog.add(wine.path, wine, wine.category)

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            cards = "".join(_card(wine) for wine in items[:6])
            tiles = "".join(
                f'<a class="tessera" href="/vini/{k}">{v}</a>' for k, v in CATEGORIES.items()
            )
            body = (
                f'<div id="contenuto"><h1>Benvenuti</h1><div class="tessere">{tiles}</div>'
                f'<h2>I più venduti</h2><div class="griglia">{cards}</div></div>'
            )
            return _page("Vini online", body)
        if path.startswith("/vini/") and path[6:] in CATEGORIES:
            return _category(path[6:], catalog.groups.get(path[6:], []), number(query, "pagina"))
        if (wine := catalog.by_key.get(path)) is not None:
            return _wine(wine)
        return None

    return Built(render, _truth(items), description="Italian labels, 1.234,56 €")


def _truth(items: list[Wine]) -> Truth:
    expected = {}
    for wine in items:
        fields = {
            "product_id": wine.code,
            "name": wine.name,
            "brand": wine.producer,
            "price": wine.price,
            "currency": "EUR",
            "availability": "InStock" if wine.available else "OutOfStock",
            "category": CATEGORIES[wine.category],
            "breadcrumbs": ["Home", CATEGORIES[wine.category], wine.name],
            "description": "\n\n".join(wine.description),
            "images": [f"/foto/{wine.code}-{n}.jpg" for n in range(1, wine.photos + 1)],
        }
        if wine.rating is not None:
            fields |= {"rating": wine.rating, "review_count": wine.reviews}
        expected[wine.path] = fields
    return Truth("product", "url", expected, ("home", "listing", "detail"))
