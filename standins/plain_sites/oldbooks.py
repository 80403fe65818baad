"""oldbooks: an antiquarian bookseller's site from another age. Table layout, no class
names, no ``<html lang>``, no ``<h1>``: the title is a ``<font size="+2"><b>`` and the
``<title>`` ("<title> by <author> - Smith's Rare Books"); facts are "<b>Label:</b> value"
lines (Price, Condition, Published, Item #); lists are table rows paged by an offset
(``list.php?cat=3&start=20``, "Next 20 >>"), items are ``item.php?id=10234``."""

from __future__ import annotations

import random
from dataclasses import dataclass

from standins.plain_sites.site import Built, Catalog, Truth, document, esc
from standins.plain_sites.words import SENTENCES_EN, person, text

SUBJECTS = ("Poetry", "Travel", "Natural History", "Maps & Atlases", "Children's Books")
NOUNS = ("Voyage", "Garden", "Birds", "Letters", "Islands", "Rivers", "Verses", "Journal")
PLACES = ("Scotland", "the South Seas", "Arabia", "the North", "Cornwall", "the Alps")
CONDITIONS = ("Fine", "Very Good", "Good", "Fair")
PER_PAGE = 20


@dataclass(frozen=True)
class Book:
    number: int
    title: str
    author: str
    subject: int
    price: float
    condition: str
    year: int
    description: str

    @property
    def path(self) -> str:
        return f"/item.php?id={self.number}"


def books(seed: int, count: int) -> list[Book]:
    rng = random.Random(seed)
    return [
        Book(
            number=10200 + 7 * n,
            title=f"A {rng.choice(NOUNS)} of {rng.choice(PLACES)}, Volume {n % 5 + 1}",
            author=person(rng),
            subject=n % len(SUBJECTS),
            price=round(rng.randint(8, 900) + rng.choice((0, 0.5, 0.95)), 2),
            condition=rng.choice(CONDITIONS),
            year=rng.randint(1820, 1960),
            description=" ".join(text(rng, SENTENCES_EN, 1, 2)),
        )
        for n in range(count)
    ]


def _page(title: str, content: str) -> str:
    nav = "<br>".join(
        f'<a href="list.php?cat={n}&amp;start=0">{esc(s)}</a>' for n, s in enumerate(SUBJECTS)
    )
    body = (
        '<table width="100%" border="0" cellspacing="0" cellpadding="8"><tr>'
        '<td colspan="2" bgcolor="#663300"><font color="#FFFFFF" size="+3">Smith\'s Rare Books'
        '</font></td></tr><tr><td width="180" valign="top" bgcolor="#EEDDBB">'
        f'<a href="/">Home</a><br><br><b>Browse</b><br>{nav}<br><br><a href="order.php">How to '
        f'order</a></td><td valign="top">{content}</td></tr><tr><td colspan="2" align="center">'
        '<font size="-1">Member of the Antiquarian Booksellers\' Association since 1987.'
        "</font></td></tr></table>"
    )
    return document(f"{title} - Smith's Rare Books", body)


def _list(subject: int, items: list[Book], start: int) -> str | None:
    if start < 0 or start % PER_PAGE or (start and start >= len(items)):
        return None
    rows = "".join(
        f'<tr><td><a href="item.php?id={b.number}">{esc(b.title)}</a></td><td>{esc(b.author)}'
        f"</td><td>${b.price:,.2f}</td></tr>"
        for b in items[start : start + PER_PAGE]
    )
    more = ""
    if start + PER_PAGE < len(items):
        more = (
            f'<p><a href="list.php?cat={subject}&amp;start={start + PER_PAGE}">Next {PER_PAGE} '
            "&gt;&gt;</a></p>"
        )
    content = (
        f'<font size="+1"><b>{esc(SUBJECTS[subject])}</b></font><br><br>'
        '<table border="1" cellpadding="4" cellspacing="0"><tr><th>Title</th><th>Author</th>'
        f"<th>Price</th></tr>{rows}</table>{more}"
    )
    return _page(SUBJECTS[subject], content)


def _book(book: Book) -> str:
    content = (
        f'<font size="+2"><b>{esc(book.title)}</b></font><br>by {esc(book.author)}<br><br>'
        f'<table border="0" cellpadding="6"><tr><td valign="top"><img src="/pics/{book.number}.jpg"'
        f' width="200" alt=""></td><td valign="top"><b>Price:</b> ${book.price:,.2f}<br>'
        f"<b>Condition:</b> {book.condition}<br><b>Published:</b> London, {book.year}<br>"
        f"<b>Item #:</b> {book.number}<br><p>{esc(book.description)}</p>"
        f'<a href="order.php?id={book.number}">Order this book</a></td></tr></table>'
    )
    return _page(f"{book.title} by {book.author}", content)


def build(seed: int, count: int) -> Built:
    items = books(seed, count)
    catalog = Catalog()
    for book in items:
        catalog.add(str(book.number), book, str(book.subject))

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            links = "".join(
                f'<li><a href="list.php?cat={n}&amp;start=0">{esc(s)}</a></li>'
                for n, s in enumerate(SUBJECTS)
            )
            content = (
                "<p>Welcome! We have been selling old and rare books by post since 1987. "
                f"Browse our catalogue:</p><ul>{links}</ul>"
            )
            return _page("Welcome", content)
        if path == "/list.php":
            cat, start = query.get("cat", [""])[-1], query.get("start", ["0"])[-1]
            if cat.isdigit() and int(cat) < len(SUBJECTS) and start.isdigit():
                return _list(int(cat), catalog.groups.get(cat, []), int(start))
            return None
        if path == "/item.php" and (book := catalog.by_key.get(query.get("id", [""])[-1])):
            return _book(book)
        return None

    robots = "User-agent: *\nDisallow: /order.php\nDisallow: /__control\n"
    return Built(render, _truth(items), robots, "table layout, no classes, b-labels")


def _truth(items: list[Book]) -> Truth:
    expected = {
        book.path: {
            "product_id": str(book.number),
            "name": book.title,
            "price": book.price,
            "currency": "USD",
            "description": book.description,
            "images": [f"/pics/{book.number}.jpg"],
        }
        for book in items
    }
    return Truth("product", "url", expected, ("home", "listing", "detail"))
