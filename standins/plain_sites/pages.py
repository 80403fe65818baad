"""The two sites' HTML: plain markup, no structured data. Both repeat a site chrome
(header, navigation, footer) on every page, as real sites do."""

from __future__ import annotations

from html import escape

from standins.plain_sites.data import MONTHS_EN, Product, Quote, slugify

SHOP_PER_PAGE = 12
QUOTES_PER_PAGE = 10
MONTHS_DE = (
    "Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
    "Oktober", "November", "Dezember",
)  # fmt: skip


def _page(lang: str, title: str, header: str, body: str, footer: str) -> str:
    return (
        f'<!doctype html>\n<html lang="{lang}"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head><body>\n{header}\n<main>\n{body}\n</main>\n"
        f"{footer}\n</body></html>\n"
    )


# -- werkstatt: a German tool shop ------------------------------------------------------------


def euro(amount: float) -> str:
    whole, cents = f"{amount:,.2f}".split(".")
    return f"{whole.replace(',', '.')},{cents} €"


def count_de(number: int) -> str:
    if number < 1000:
        return str(number)
    return f"{number / 1000:.1f}".replace(".", ",") + "K"


def _shop_chrome(categories: tuple[str, ...]) -> tuple[str, str]:
    links = "".join(
        f'<li><a href="/kategorie/{slug}">{slug.title()}</a></li>' for slug in categories
    )
    header = (
        '<header class="kopf"><a class="logo" href="/">Werkstatt</a>'
        '<form class="suche" action="/suche"><input name="q"></form>'
        f'<nav class="kategorien"><ul>{links}</ul></nav></header>'
    )
    footer = (
        '<footer class="fuss"><p>Alle Preise inkl. MwSt., zzgl. Versand.</p>'
        '<a href="/impressum">Impressum</a></footer>'
    )
    return header, footer


def shop_home(categories: tuple[str, ...], featured: list[Product]) -> str:
    header, footer = _shop_chrome(categories)
    tiles = "".join(_tile(product) for product in featured)
    body = f'<h2>Angebote der Woche</h2><ul class="kacheln">{tiles}</ul>'
    return _page("de", "Werkstatt", header, body, footer)


def _tile(product: Product) -> str:
    return (
        f'<li class="kachel"><a class="kachel-link" href="/artikel/{product.sku}-{product.slug}">'
        f'<span class="kachel-name">{escape(product.name)}</span></a>'
        f'<span class="kachel-preis">{euro(product.price)}</span></li>'
    )


def shop_listing(
    categories: tuple[str, ...], category: str, products: list[Product], page: int
) -> str | None:
    pages = max(1, -(-len(products) // SHOP_PER_PAGE))
    if page < 1 or page > pages:
        return None
    header, footer = _shop_chrome(categories)
    shown = products[(page - 1) * SHOP_PER_PAGE : page * SHOP_PER_PAGE]
    nav = ""
    if page > 1:
        nav += f'<a class="zurueck" href="/kategorie/{category}?seite={page - 1}">Zurück</a>'
    if page < pages:
        nav += f'<a class="weiter" rel="next" href="/kategorie/{category}?seite={page + 1}">'
        nav += "Weiter</a>"
    body = (
        f"<h1>{category.title()}</h1><p>{len(products)} Artikel</p>"
        f'<ul class="kacheln">{"".join(_tile(p) for p in shown)}</ul>'
        f'<div class="blaettern">Seite {page} von {pages} {nav}</div>'
    )
    return _page("de", f"{category.title()} - Werkstatt", header, body, footer)


def shop_product(categories: tuple[str, ...], product: Product) -> str:
    header, footer = _shop_chrome(categories)
    crumbs = (
        '<ol class="pfad"><li><a href="/">Startseite</a></li>'
        f'<li><a href="/kategorie/{product.category}">{product.category.title()}</a></li>'
        f"<li>{escape(product.name)}</li></ol>"
    )
    images = "".join(
        f'<img src="/bilder/{product.sku}-{n}.jpg" alt="{escape(product.name)} Bild {n}">'
        for n in range(1, product.images + 1)
    )
    # Each variant its own SKU, after a prompt that is no variant.
    options = '<option value="">Bitte wählen</option>' + "".join(
        f'<option value="{product.sku}-{slugify(v)}">{escape(v)}</option>' for v in product.variants
    )
    stars = "".join(
        f'<i class="stern{" voll" if n <= product.rating else ""}"></i>' for n in range(1, 6)
    )
    paragraphs = "".join(f"<p>{escape(s)}</p>" for s in product.description)
    rows = (
        ("Marke", product.brand),
        ("Artikelnummer", product.sku),
        ("Farbe", product.colour),
        ("Material", product.material),
    )
    table = "".join(f"<tr><th>{k}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    body = (
        f"<nav>{crumbs}</nav>"
        f'<div class="produkt"><div class="galerie">{images}</div>'
        f'<div class="kauf"><h1 class="titel">{escape(product.name)}</h1>'
        f'<div class="bewertung"><span class="sterne">{stars}</span> '
        f'<a href="#bewertungen">{count_de(product.reviews)} Bewertungen</a></div>'
        f'<div class="preisbox"><span class="preis">{euro(product.price)}</span>'
        "<small>inkl. MwSt.</small></div>"
        f'<label>Ausführung <select name="variante">{options}</select></label>'
        '<button class="warenkorb">In den Warenkorb</button></div></div>'
        f'<section class="beschreibung"><h2>Beschreibung</h2>{paragraphs}</section>'
        f'<section class="daten"><h2>Technische Daten</h2><table class="technik">{table}'
        "</table></section>"
    )
    return _page("de", f"{product.name} - Werkstatt", header, body, footer)


# -- sayings: a quotes board ------------------------------------------------------------------


def likes(number: int) -> str:
    return (
        f"{number // 1000}K likes" if number >= 1000 and number % 1000 == 0 else f"{number} likes"
    )


def published(quote: Quote) -> str:
    return f"Published on {MONTHS_EN[quote.month - 1]} {quote.day}, {quote.year}"


def _quotes_chrome(tags: tuple[str, ...]) -> tuple[str, str]:
    links = " ".join(f'<a class="tag-item" href="/tag/{tag}">{tag}</a>' for tag in tags)
    header = (
        '<div class="header"><h1><a href="/">Sayings</a></h1>'
        '<p><a href="/quotes">All quotes</a> | <a href="/login">Login</a></p></div>'
    )
    footer = f'<div class="side"><h2>Top tags</h2>{links}</div><footer>Sayings board</footer>'
    return header, footer


def quote_list(
    tags: tuple[str, ...], quotes: list[Quote], page: int, base: str, title: str
) -> str | None:
    pages = max(1, -(-len(quotes) // QUOTES_PER_PAGE))
    if page < 1 or page > pages:
        return None
    header, footer = _quotes_chrome(tags)
    shown = quotes[(page - 1) * QUOTES_PER_PAGE : page * QUOTES_PER_PAGE]
    pager = '<ul class="pager">'
    if page > 1:
        pager += f'<li class="previous"><a href="{base}?page={page - 1}">← Previous</a></li>'
    if page < pages:
        pager += f'<li class="next"><a href="{base}?page={page + 1}">Next →</a></li>'
    pager += "</ul>"
    body = f"<h2>{escape(title)}</h2>{''.join(_quote(q) for q in shown)}<nav>{pager}</nav>"
    return _page("en", f"{title} - Sayings", header, body, footer)


def _quote(quote: Quote) -> str:
    tag_links = "".join(f'<a class="tag" href="/tag/{tag}">{tag}</a>' for tag in quote.tags)
    author = quote.author.lower().replace(" ", "-")
    return (
        f'<div class="quote" id="{quote.quote_id}">'
        f'<span class="text">“{escape(quote.text)}”</span>'
        f'<span>by <small class="author">{escape(quote.author)}</small> '
        f'<a href="/author/{author}">(about)</a></span>'
        f'<span class="date">{published(quote)}</span>'
        f'<span class="likes">{likes(quote.likes)}</span>'
        f'<div class="tags">Tags: {tag_links}</div></div>'
    )


def author_page(tags: tuple[str, ...], name: str, count: int) -> str:
    header, footer = _quotes_chrome(tags)
    body = (
        f'<div class="author-details"><h3 class="author-title">{escape(name)}</h3>'
        f"<p>{count} quotes on this board.</p></div>"
    )
    return _page("en", f"{name} - Sayings", header, body, footer)


def home_quotes(tags: tuple[str, ...]) -> str:
    header, footer = _quotes_chrome(tags)
    body = '<p>Quotes people like. Start with <a href="/quotes">all quotes</a>.</p>'
    return _page("en", "Sayings", header, body, footer)


def not_found() -> str:
    return "<!doctype html><html><body><h1>Not found</h1></body></html>"


def robots_txt() -> str:
    return "User-agent: *\nDisallow: /__control\nDisallow: /suche\nDisallow: /login\n"
