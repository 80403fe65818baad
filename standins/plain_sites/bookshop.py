"""bookshop: a bookshop built like the classic scraping sandbox catalogues. Relative links
(``../../x_12/index.html``), pounds on an ``en-us`` page, ratings as a class word
(``p.star-rating Three`` over five empty ``i.icon-star``), a "Product Information" table
(UPC, Price (excl. tax), Availability "In stock (19 available)", Number of reviews),
breadcrumbs in ``ul.breadcrumb``, the description as the paragraph after a heading block,
and a pager whose next link is ``li.next a`` ("next"). The home page is the first page of
the whole catalogue."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from standins.plain_sites.site import Built, Catalog, Pager, Truth, document, esc
from standins.plain_sites.words import SENTENCES_EN, slug, text

GENRES = (
    "Poetry", "Travel", "Mystery", "Historical Fiction", "Science", "Humor", "Music",
    "Philosophy", "Fantasy", "Romance",
)  # fmt: skip
WORDS = (
    "Light", "Attic", "Velvet", "Secret", "Garden", "River", "Winter", "Shadow", "Empire",
    "Orchard", "Lantern", "Harbour", "Clock", "Mountain", "Letters", "Silence", "Fire", "Glass",
)  # fmt: skip
STARS = ("One", "Two", "Three", "Four", "Five")
PER_PAGE = 20
ICONS = '<i class="icon-star"></i>' * 5


@dataclass(frozen=True)
class Book:
    bid: int
    title: str
    genre: str
    price: float
    stock: int
    rating: int
    reviews: int
    upc: str
    image: str
    description: str

    @property
    def folder(self) -> str:
        return f"{slug(self.title)}_{self.bid}"

    @property
    def path(self) -> str:
        return f"/catalogue/{self.folder}/index.html"


def books(seed: int, count: int) -> list[Book]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        words = rng.sample(WORDS, rng.randint(2, 4))
        title = "The " + " of the ".join(words[:2]) + (f": {words[2]}" if len(words) > 2 else "")
        digest = hashlib.md5(f"{seed}-{n}".encode()).hexdigest()  # noqa: S324 (a made-up id)
        out.append(
            Book(
                bid=1000 - n,
                title=f"{title} ({n + 1})",
                genre=GENRES[n % len(GENRES)],
                price=round(rng.uniform(10, 60), 2),
                stock=rng.choice((0, rng.randint(1, 22))),
                rating=rng.randint(1, 5),
                reviews=rng.choice((0, 0, rng.randint(1, 30))),
                upc=digest[:16],
                image=f"/media/cache/{digest[:2]}/{digest[2:4]}/{digest}.jpg",
                description=" ".join(text(rng, SENTENCES_EN, 2, 3)),
            )
        )
    return out


def _genre_folder(genre: str) -> str:
    return f"{slug(genre)}_{GENRES.index(genre) + 2}"


def _page(body: str, title: str, depth: int) -> str:
    up = "../" * depth
    side = "".join(
        f'<li><a href="{up}catalogue/category/books/{_genre_folder(g)}/index.html">{g}</a></li>'
        for g in GENRES
    )
    header = (
        '<header class="header container-fluid"><div class="page_inner"><div class="row">'
        f'<div class="col-sm-8 h1"><a href="{up}index.html">Books to Scrape</a> We love being '
        "scraped!</div></div></div></header>"
    )
    aside = (
        '<aside class="sidebar col-sm-4 col-md-3"><div class="side_categories"><ul class="nav '
        f'nav-list"><li><a href="{up}catalogue/category/books_1/index.html">Books</a><ul>'
        f"{side}</ul></li></ul></div></aside>"
    )
    return document(
        f"{title} | Books to Scrape - Sandbox",
        f'{header}<div class="container-fluid page"><div class="page_inner"><div class="row">'
        f'{aside}<div class="col-sm-8 col-md-9">{body}</div></div></div></div>',
        lang="en-us",
    )


def _pod(book: Book, up: str) -> str:
    short = book.title if len(book.title) < 40 else book.title[:37] + "..."
    stock = "In stock" if book.stock else "Out of stock"
    return (
        '<li class="col-xs-6 col-sm-4 col-md-3 col-lg-3"><article class="product_pod">'
        f'<div class="image_container"><a href="{up}{book.folder}/index.html"><img '
        f'src="{up}..{book.image}" alt="{esc(book.title)}" class="thumbnail"></a></div>'
        f'<p class="star-rating {STARS[book.rating - 1]}">{ICONS}</p>'
        f'<h3><a href="{up}{book.folder}/index.html" title="{esc(book.title)}">{esc(short)}</a>'
        f'</h3><div class="product_price"><p class="price_color">£{book.price:.2f}</p>'
        f'<p class="instock availability"><i class="icon-ok"></i> {stock}</p>'
        '<form><button type="submit" class="btn btn-primary btn-block">Add to basket</button>'
        "</form></div></article></li>"
    )


def _listing(title: str, items: list[Book], page: int, up: str, depth: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    nav = f'<li class="current">Page {page} of {pager.pages}</li>'
    if page > 1:
        previous = "index.html" if page == 2 and depth > 1 else f"page-{page - 1}.html"
        nav = f'<li class="previous"><a href="{previous}">previous</a></li>' + nav
    if page < pager.pages:
        nav += f'<li class="next"><a href="page-{page + 1}.html">next</a></li>'
    pods = "".join(_pod(b, up) for b in pager.window(items))
    body = (
        f'<div class="page-header action"><h1>{esc(title)}</h1></div>'
        f'<form class="form-horizontal"><strong>{len(items)}</strong> results.</form>'
        f'<section><ol class="row">{pods}</ol><div><ul class="pager">{nav}</ul></div></section>'
    )
    return _page(body, title, depth)


def _book(book: Book) -> str:
    up = "../../"
    crumbs = (
        f'<ul class="breadcrumb"><li><a href="{up}index.html">Home</a></li>'
        f'<li><a href="{up}catalogue/category/books_1/index.html">Books</a></li>'
        f'<li><a href="{up}catalogue/category/books/{_genre_folder(book.genre)}/index.html">'
        f'{book.genre}</a></li><li class="active">{esc(book.title)}</li></ul>'
    )
    stock = f"In stock ({book.stock} available)" if book.stock else "Out of stock"
    rows = (
        ("UPC", book.upc),
        ("Product Type", "Books"),
        ("Price (excl. tax)", f"£{book.price:.2f}"),
        ("Price (incl. tax)", f"£{book.price:.2f}"),
        ("Tax", "£0.00"),
        ("Availability", stock),
        ("Number of reviews", str(book.reviews)),
    )
    table = "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    body = (
        f'{crumbs}<article class="product_page"><div class="row"><div class="col-sm-6">'
        '<div id="product_gallery" class="carousel"><div class="thumbnail"><div '
        f'class="carousel-inner"><div class="item active"><img src="{up}..{book.image}" '
        f'alt="{esc(book.title)}"></div></div></div></div></div>'
        f'<div class="col-sm-6 product_main"><h1>{esc(book.title)}</h1>'
        f'<p class="price_color">£{book.price:.2f}</p>'
        f'<p class="instock availability"><i class="icon-ok"></i> {stock}</p>'
        f'<p class="star-rating {STARS[book.rating - 1]}">{ICONS}</p>'
        '<hr/><div class="alert alert-warning" role="alert"><strong>Warning!</strong> This is a '
        "demo website for web scraping purposes.</div></div></div>"
        '<div id="product_description" class="sub-header"><h2>Product Description</h2></div>'
        f'<p>{esc(book.description)}</p><div class="sub-header"><h2>Product Information</h2>'
        f'</div><table class="table table-striped">{table}</table></article>'
    )
    return _page(body, book.title, 2)


def build(seed: int, count: int) -> Built:
    items = books(seed, count)
    catalog = Catalog()
    for book in items:
        catalog.add(book.path, book, _genre_folder(book.genre))

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path in ("/", "/index.html"):
            return _listing("All products", items, 1, "catalogue/", 0)
        if path.startswith("/catalogue/page-") and path.endswith(".html"):
            page = path[len("/catalogue/page-") : -5]
            return _listing("All products", items, int(page), "", 1) if page.isdigit() else None
        if path.startswith("/catalogue/category/books"):
            return _category(path, items, catalog)
        if (book := catalog.by_key.get(path)) is not None:
            return _book(book)
        return None

    return Built(render, _truth(items), description="star classes, product information table")


def _category(path: str, items: list[Book], catalog: Catalog) -> str | None:
    parts = path.split("/")
    if path.startswith("/catalogue/category/books_1/"):
        folder, shown, title = "books_1", items, "Books"
        file = parts[4] if len(parts) == 5 else ""
    elif len(parts) == 6 and parts[4] in catalog.groups:
        folder, shown = parts[4], catalog.groups[parts[4]]
        title, file = shown[0].genre, parts[5]
    else:
        return None
    if file == "index.html":
        page = 1
    elif file.startswith("page-") and file[5:-5].isdigit() and file.endswith(".html"):
        page = int(file[5:-5])
    else:
        return None
    depth = 3 if folder == "books_1" else 4
    return _listing(title, shown, page, "../" * (depth - 1), depth)


def _truth(items: list[Book]) -> Truth:
    expected = {
        book.path: {
            "product_id": book.upc,
            "name": book.title,
            "price": book.price,
            "currency": "GBP",
            "availability": "InStock" if book.stock else "OutOfStock",
            "rating": float(book.rating),
            "review_count": book.reviews,
            "description": book.description,
            "category": book.genre,
            "breadcrumbs": ["Home", "Books", book.genre, book.title],
            "images": [book.image],
        }
        for book in items
    }
    return Truth("product", "url", expected, ("home", "listing", "detail"))
