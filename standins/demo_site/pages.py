"""HTML, JSON and XML renderings of the catalog, in three layouts.

``v1`` is the reference markup: JSON-LD ``Product`` plus schema.org microdata on the
product page, ``rel=next`` plus numbered pagination on listings. ``v2`` shows the same
data with a different structure (class names, tags, a ``__STATE__`` JSON blob instead
of JSON-LD ``Product``, no microdata, "Load more" pagination, comma decimals) so that
structure-change detection has something real to detect: the spider's selectors break.
``v3`` is a redesign that keeps the data reachable: every class name and wrapper is
new, but JSON-LD, microdata, ``data-reviews-url`` and the link URLs are as in v1, so a
spider reading structured data still gets every field (the gate's "drifted" case).

Every function here is pure: the server caches the bytes it returns.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

from standins.demo_site.catalog import Catalog, Category, Product

PAGE_SIZE = 24
SITEMAP_CHUNK = 500
LAYOUTS = ("v1", "v2", "v3")
SCHEMA = "https://schema.org/"
_AVAILABILITY_LABEL = {"InStock": "In stock", "OutOfStock": "Out of stock", "PreOrder": "Pre-order"}
_V2_STOCK = {"InStock": "in_stock", "OutOfStock": "sold_out", "PreOrder": "preorder"}


def page_count(n_items: int) -> int:
    return max(1, math.ceil(n_items / PAGE_SIZE))


def category_path(slug: str, page: int = 1) -> str:
    # Page 1 has one URL only, so crawlers do not fetch it twice.
    return f"/category/{slug}" if page == 1 else f"/category/{slug}?page={page}"


def reviews_api_path(sku: str) -> str:
    return f"/api/products/{sku}/reviews"


def _json_for_script(data: Any) -> str:
    # "</" inside a <script> would end it early; "<\/" is the same JSON string.
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def _money(price: float) -> str:
    return f"{price:.2f}"


# -- v1 ------------------------------------------------------------------------------


def _v1_document(title: str, body: str, head: str = "") -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} | Demo Store</title>
{head}
<style>body{{font-family:sans-serif;margin:0 auto;max-width:1100px}}\
.product-grid{{display:grid;grid-template-columns:repeat(4,1fr);gap:1em;list-style:none}}</style>
</head>
<body>
<header class="site-header">
<a class="logo" href="/">Demo Store</a>
<nav class="top-nav"><a href="/">Home</a> <a href="/cart" rel="nofollow">Cart</a></nav>
</header>
<main id="content">
{body}
</main>
<footer class="site-footer"><p>© 2024 Demo Store — all prices in € incl. VAT</p></footer>
</body>
</html>
"""


def _v1_card(product: Product) -> str:
    return (
        f'<li class="product-card" data-sku="{product.sku}">'
        f'<a class="product-link" href="{product.url}">'
        f'<img src="{product.image}" alt="" width="160" height="160" loading="lazy">'
        f'<h2 class="product-name">{escape(product.name)}</h2></a>'
        f'<p class="product-price"><span class="currency">€</span>'
        f'<span class="amount">{_money(product.price)}</span></p>'
        f'<p class="card-availability" data-availability="{product.availability}">'
        f"{_AVAILABILITY_LABEL[product.availability]}</p>"
        f'<p class="card-rating"><span class="rating-value">{product.rating:.1f}</span>/5 '
        f'(<span class="review-count">{product.review_count}</span> reviews)</p></li>'
    )


def _v1_home(catalog: Catalog, base: str) -> str:
    items = "\n".join(
        f'<li class="category-item"><a class="category-link" href="{category_path(c.slug)}">'
        f"{escape(c.name)}</a> "
        f'<span class="count">({len(catalog.by_category[c.slug])} products)</span></li>'
        for c in catalog.categories
    )
    featured = "\n".join(_v1_card(p) for p in catalog.products[:8])
    body = f"""<h1>Welcome to the Demo Store</h1>
<section class="categories"><h2>Shop by category</h2>
<ul class="category-list">
{items}
</ul></section>
<section class="featured"><h2>Featured products</h2>
<ul class="product-grid">
{featured}
</ul></section>"""
    return _v1_document("Home", body, f'<link rel="canonical" href="{base}/">')


def _v1_listing(catalog: Catalog, category: Category, page: int, base: str) -> str:
    products = catalog.by_category[category.slug]
    pages = page_count(len(products))
    chunk = products[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    first = (page - 1) * PAGE_SIZE + 1
    links = []
    head = [f'<link rel="canonical" href="{base}{category_path(category.slug, page)}">']
    if page > 1:
        prev = category_path(category.slug, page - 1)
        links.append(f'<a class="page-prev" rel="prev" href="{prev}">« Previous</a>')
        head.append(f'<link rel="prev" href="{prev}">')
    for number in range(1, pages + 1):
        if number == page:
            links.append(f'<span class="page-number current" aria-current="page">{number}</span>')
        else:
            href = category_path(category.slug, number)
            links.append(f'<a class="page-number" href="{href}">{number}</a>')
    if page < pages:
        nxt = category_path(category.slug, page + 1)
        links.append(f'<a class="page-next" rel="next" href="{nxt}">Next »</a>')
        head.append(f'<link rel="next" href="{nxt}">')
    cards = "\n".join(_v1_card(p) for p in chunk)
    body = f"""<nav class="breadcrumbs"><a href="/">Home</a> &rsaquo; \
<span>{escape(category.name)}</span></nav>
<h1 class="category-title">{escape(category.name)}</h1>
<p class="result-count">Showing {first}&ndash;{first + len(chunk) - 1} \
of {len(products)} products</p>
<ul class="product-grid">
{cards}
</ul>
<nav class="pagination" aria-label="Pagination">
{" ".join(links)}
</nav>"""
    title = category.name if page == 1 else f"{category.name}, page {page}"
    return _v1_document(title, body, "\n".join(head))


_V1_REVIEWS_JS = """<script>
(function () {
  var box = document.getElementById("reviews");
  if (!box) { return; }
  fetch(box.getAttribute("data-reviews-url"), {headers: {"Accept": "application/json"}})
    .then(function (response) { return response.json(); })
    .then(function (data) {
      data.reviews.forEach(function (review) {
        var el = document.createElement("div");
        el.className = "review";
        el.innerHTML = '<h3 class="review-title"></h3><p class="review-meta">' +
          '<span class="review-author"></span> · <span class="review-rating"></span>/5 · ' +
          '<time class="review-date"></time></p><p class="review-body"></p>';
        el.querySelector(".review-title").textContent = review.title;
        el.querySelector(".review-author").textContent = review.author;
        el.querySelector(".review-rating").textContent = review.rating;
        el.querySelector(".review-date").textContent = review.date;
        el.querySelector(".review-date").setAttribute("datetime", review.date);
        el.querySelector(".review-body").textContent = review.body;
        box.appendChild(el);
      });
      box.setAttribute("data-loaded", "true");
    });
})();
</script>"""


def product_jsonld(product: Product, base: str) -> dict[str, Any]:
    return {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": product.name,
        "sku": product.sku,
        "brand": {"@type": "Brand", "name": product.brand},
        "description": product.description,
        "image": base + product.image,
        "url": base + product.url,
        "category": product.category,
        "offers": {
            "@type": "Offer",
            "price": _money(product.price),
            "priceCurrency": product.currency,
            "availability": SCHEMA + product.availability,
            "url": base + product.url,
        },
        "aggregateRating": {
            "@type": "AggregateRating",
            "ratingValue": product.rating,
            "reviewCount": product.review_count,
        },
    }


def _breadcrumb_jsonld(product: Product, base: str) -> dict[str, Any]:
    return {
        "@context": "https://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": [
            {"@type": "ListItem", "position": 1, "name": "Home", "item": base + "/"},
            {
                "@type": "ListItem",
                "position": 2,
                "name": product.category,
                "item": base + category_path(product.category_slug),
            },
        ],
    }


def _v1_product(product: Product, base: str) -> str:
    head = "\n".join(
        (
            f'<link rel="canonical" href="{base}{product.url}">',
            f'<meta name="description" content="{escape(product.description[:150])}">',
            '<script type="application/ld+json">'
            + _json_for_script(product_jsonld(product, base))
            + "</script>",
            '<script type="application/ld+json">'
            + _json_for_script(_breadcrumb_jsonld(product, base))
            + "</script>",
        )
    )
    availability = product.availability
    body = f"""<nav class="breadcrumbs"><a href="/">Home</a> &rsaquo; \
<a href="{category_path(product.category_slug)}">{escape(product.category)}</a> &rsaquo; \
<span>{escape(product.name)}</span></nav>
<article class="product" itemscope itemtype="https://schema.org/Product">
<img class="product-image" itemprop="image" src="{base}{product.image}" \
alt="{escape(product.name)}">
<h1 class="product-title" itemprop="name">{escape(product.name)}</h1>
<p class="product-sku">SKU: <span class="sku-value" itemprop="sku">{product.sku}</span></p>
<p class="product-brand" itemprop="brand" itemscope itemtype="https://schema.org/Brand">by \
<span class="brand-name" itemprop="name">{escape(product.brand)}</span></p>
<p class="product-category">Category: <a href="{category_path(product.category_slug)}">\
<span class="category-name" itemprop="category">{escape(product.category)}</span></a></p>
<div class="product-offer" itemprop="offers" itemscope itemtype="https://schema.org/Offer">
<p class="product-price" data-currency="{product.currency}"><span class="currency">€</span>\
<span class="price-value" itemprop="price" content="{_money(product.price)}">\
{_money(product.price)}</span></p>
<meta itemprop="priceCurrency" content="{product.currency}">
<link itemprop="availability" href="{SCHEMA}{availability}">
<p class="availability" data-availability="{availability}">\
{_AVAILABILITY_LABEL[availability]}</p>
</div>
<div class="product-rating" itemprop="aggregateRating" itemscope \
itemtype="https://schema.org/AggregateRating">Rated \
<span class="rating-value" itemprop="ratingValue">{product.rating:.1f}</span>/5 from \
<span class="review-count" itemprop="reviewCount">{product.review_count}</span> reviews</div>
<p class="product-description" itemprop="description">{escape(product.description)}</p>
<button class="add-to-cart" type="button" data-sku="{product.sku}">Add to cart</button>
</article>
<section class="reviews-section">
<h2>Customer reviews</h2>
<div id="reviews" class="reviews" data-reviews-url="{reviews_api_path(product.sku)}"></div>
</section>
{_V1_REVIEWS_JS}"""
    return _v1_document(product.name, body, head)


# -- v2 ------------------------------------------------------------------------------


def _v2_document(title: str, body: str, head: str = "") -> str:
    return f"""<!doctype html>
<html lang="en-GB" data-theme="v2">
<head>
<meta charset="utf-8">
<title>{escape(title)} &middot; Demo/Store</title>
{head}
<link rel="preload" as="font" href="/fonts/inter.woff2" crossorigin>
</head>
<body class="v2">
<div id="app">
<div class="topbar"><a class="brand-mark" href="/">DEMO/STORE</a>
<div class="topbar__actions"><a class="topbar__cart" href="/cart" rel="nofollow">Basket (0)</a>
</div></div>
<div class="layout">
{body}
</div>
<div class="legal"><small>Demo/Store · VAT included · © 2024</small></div>
</div>
</body>
</html>
"""


def _v2_money(price: float) -> str:
    return _money(price).replace(".", ",")


def _v2_tile(product: Product) -> str:
    return (
        f'<article class="tile" data-product-id="{product.sku}">'
        f'<a class="tile__link" href="{product.url}">'
        f'<figure class="tile__media"><img data-src="{product.image}" alt=""></figure>'
        f'<h3 class="tile__title">{escape(product.name)}</h3></a>'
        f'<div class="tile__price" data-amount-cents="{round(product.price * 100)}">'
        f"{_v2_money(product.price)}&nbsp;€</div>"
        f'<div class="tile__stock tile__stock--{_V2_STOCK[product.availability]}">'
        f"{_AVAILABILITY_LABEL[product.availability]}</div>"
        f'<div class="tile__stars" title="{product.rating:.1f} of 5">'
        f"{_stars(product.rating)} <small>({product.review_count})</small></div></article>"
    )


def _stars(rating: float) -> str:
    stars = round(rating)
    return "★" * stars + "☆" * (5 - stars)


def _v2_home(catalog: Catalog, base: str) -> str:
    columns = "\n".join(
        f'<div class="mega-menu__col"><a class="mega-menu__link" data-department="{c.slug}" '
        f'href="{category_path(c.slug)}"><span class="mega-menu__label">{escape(c.name)}</span>'
        f'<em class="mega-menu__count">{len(catalog.by_category[c.slug])}</em></a></div>'
        for c in catalog.categories
    )
    tiles = "\n".join(_v2_tile(p) for p in catalog.products[:8])
    body = f"""<div class="hero"><h2 class="hero__title">New season, same great prices</h2></div>
<nav class="mega-menu" aria-label="Departments"><div class="mega-menu__grid">
{columns}
</div></nav>
<div class="carousel" data-autoplay="true">
{tiles}
</div>"""
    return _v2_document("Start", body, f'<link rel="canonical" href="{base}/">')


def _v2_listing(catalog: Catalog, category: Category, page: int, base: str) -> str:
    products = catalog.by_category[category.slug]
    pages = page_count(len(products))
    chunk = products[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    controls = []
    if page > 1:
        controls.append(
            f'<a class="pager__btn pager__btn--back" '
            f'href="{category_path(category.slug, page - 1)}">Back</a>'
        )
    controls.append(f'<span class="pager__status">Page {page} / {pages}</span>')
    if page < pages:
        controls.append(
            f'<a class="pager__btn pager__btn--more" data-next="{page + 1}" '
            f'href="{category_path(category.slug, page + 1)}">Load more</a>'
        )
    tiles = "\n".join(_v2_tile(p) for p in chunk)
    body = f"""<header class="plp-head"><ol class="crumbs"><li><a href="/">Start</a></li>\
<li>{escape(category.name)}</li></ol>
<h2 class="plp-head__title">{escape(category.name)}</h2>
<span class="plp-head__count">{len(products)} items</span></header>
<section class="plp-grid">
{tiles}
</section>
<div class="pager" data-page="{page}" data-pages="{pages}">{"".join(controls)}</div>"""
    head = f'<link rel="canonical" href="{base}{category_path(category.slug, page)}">'
    return _v2_document(category.name, body, head)


_V2_REVIEWS_JS = """<script>
(function () {
  var state = JSON.parse(document.getElementById("__STATE__").textContent);
  var box = document.querySelector(".pdp__reviews");
  fetch(box.dataset.src).then(function (r) { return r.json(); }).then(function (data) {
    var list = document.createElement("ul");
    list.className = "rv-list";
    data.reviews.forEach(function (review) {
      var li = document.createElement("li");
      li.className = "rv";
      li.dataset.stars = review.rating;
      li.innerHTML = '<strong class="rv__headline"></strong><span class="rv__who"></span>' +
        '<span class="rv__when"></span><div class="rv__text"></div>';
      li.querySelector(".rv__headline").textContent = review.title;
      li.querySelector(".rv__who").textContent = review.author;
      li.querySelector(".rv__when").textContent = review.date;
      li.querySelector(".rv__text").textContent = review.body;
      list.appendChild(li);
    });
    box.appendChild(list);
    box.dataset.ready = state.product.id;
  });
})();
</script>"""


def _v2_product(product: Product, base: str) -> str:
    state = {
        "page": "pdp",
        "product": {
            "id": product.sku,
            "title": product.name,
            "manufacturer": {"label": product.brand},
            "department": {"slug": product.category_slug, "label": product.category},
            "pricing": {
                "amountCents": round(product.price * 100),
                "currencyCode": product.currency,
            },
            "stockStatus": _V2_STOCK[product.availability],
            "ratingSummary": {"average": product.rating, "total": product.review_count},
            "copy": {"long": product.description},
            "media": [{"src": base + product.image, "kind": "image"}],
            "reviewsEndpoint": reviews_api_path(product.sku),
        },
    }
    head = "\n".join(
        (
            '<script type="application/ld+json">'
            + _json_for_script(_breadcrumb_jsonld(product, base))
            + "</script>",
            f'<script id="__STATE__" type="application/json">{_json_for_script(state)}</script>',
        )
    )
    body = f"""<div class="pdp" data-id="{product.sku}">
<ol class="crumbs"><li><a href="/">Start</a></li>\
<li><a href="{category_path(product.category_slug)}">{escape(product.category)}</a></li></ol>
<div class="pdp__gallery"><img src="{product.image}" alt=""></div>
<div class="pdp__info">
<h2 class="pdp__title">{escape(product.name)}</h2>
<div class="pdp__by">by <b>{escape(product.brand)}</b> · Art.-Nr. {product.sku}</div>
<div class="pdp__price"><span class="pdp__amount">{_v2_money(product.price)}</span> \
<span class="pdp__ccy">{product.currency}</span></div>
<div class="pdp__stock pdp__stock--{_V2_STOCK[product.availability]}">\
{_AVAILABILITY_LABEL[product.availability]}</div>
<div class="pdp__stars" title="{product.rating:.1f} of 5">{_stars(product.rating)} \
<small>({product.review_count})</small></div>
<div class="pdp__copy">{escape(product.description)}</div>
</div>
<section class="pdp__reviews" data-src="{reviews_api_path(product.sku)}"></section>
</div>
{_V2_REVIEWS_JS}"""
    return _v2_document(product.name, body, head)


# -- v3: new classes and wrappers, the same structured data ------------------------------


def _v3_document(title: str, body: str, head: str = "") -> str:
    return f"""<!DOCTYPE html>
<html lang="en" data-design="2025">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} — Demo Store</title>
{head}
<link rel="stylesheet" href="/static/ds-2025.css">
</head>
<body class="ds-body">
<div class="ds-app"><div class="ds-shell">
<div class="ds-masthead"><div class="ds-masthead__inner">
<a class="ds-logo" href="/"><span class="ds-logo__word">Demo</span>Store</a>
<div class="ds-masthead__tools"><a class="ds-basket" href="/cart" rel="nofollow">Basket</a></div>
</div></div>
<div class="ds-page" role="main"><div class="ds-page__inner">
{body}
</div></div>
<div class="ds-foot"><div class="ds-foot__inner"><span>© 2025 Demo Store</span></div></div>
</div></div>
</body>
</html>
"""


def _v3_card(product: Product) -> str:
    return (
        f'<div class="ds-card" data-sku="{product.sku}"><div class="ds-card__frame">'
        f'<a class="ds-card__link" href="{product.url}">'
        f'<div class="ds-card__media"><img src="{product.image}" alt="" loading="lazy"></div>'
        f'<div class="ds-card__body"><span class="ds-card__name">{escape(product.name)}</span>'
        f'<span class="ds-card__price">€ {_money(product.price)}</span>'
        f'<span class="ds-card__stock">{_AVAILABILITY_LABEL[product.availability]}</span>'
        f'<span class="ds-card__score">{product.rating:.1f} ★ · {product.review_count}</span>'
        "</div></a></div></div>"
    )


def _v3_home(catalog: Catalog, base: str) -> str:
    tiles = "\n".join(
        f'<div class="ds-dept"><a class="ds-dept__link" href="{category_path(c.slug)}">'
        f'<span class="ds-dept__name">{escape(c.name)}</span>'
        f'<span class="ds-dept__count">{len(catalog.by_category[c.slug])}</span></a></div>'
        for c in catalog.categories
    )
    featured = "\n".join(_v3_card(p) for p in catalog.products[:8])
    body = f"""<div class="ds-hero"><div class="ds-hero__copy">Welcome to the Demo Store</div></div>
<div class="ds-block ds-block--depts"><div class="ds-block__head">Departments</div>
<div class="ds-depts">
{tiles}
</div></div>
<div class="ds-block ds-block--featured"><div class="ds-block__head">Featured</div>
<div class="ds-cards">
{featured}
</div></div>"""
    return _v3_document("Home", body, f'<link rel="canonical" href="{base}/">')


def _v3_listing(catalog: Catalog, category: Category, page: int, base: str) -> str:
    products = catalog.by_category[category.slug]
    pages = page_count(len(products))
    chunk = products[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    steps = []
    for number in range(1, pages + 1):
        if number == page:
            steps.append(f'<span class="ds-pager__step is-active">{number}</span>')
        else:
            href = category_path(category.slug, number)
            steps.append(f'<a class="ds-pager__step" href="{href}">{number}</a>')
    if page < pages:
        nxt = category_path(category.slug, page + 1)
        steps.append(
            f'<a class="ds-pager__step ds-pager__step--next" rel="next" href="{nxt}">→</a>'
        )
    cards = "\n".join(_v3_card(p) for p in chunk)
    body = f"""<div class="ds-trail"><a class="ds-trail__item" href="/">Home</a>\
<span class="ds-trail__item">{escape(category.name)}</span></div>
<div class="ds-heading"><div class="ds-heading__title">{escape(category.name)}</div>
<div class="ds-heading__meta">{len(products)} products</div></div>
<div class="ds-cards ds-cards--grid">
{cards}
</div>
<div class="ds-pager" aria-label="Pages">{"".join(steps)}</div>"""
    head = f'<link rel="canonical" href="{base}{category_path(category.slug, page)}">'
    title = category.name if page == 1 else f"{category.name}, page {page}"
    return _v3_document(title, body, head)


def _v3_product(product: Product, base: str) -> str:
    head = "\n".join(
        (
            f'<link rel="canonical" href="{base}{product.url}">',
            '<script type="application/ld+json">'
            + _json_for_script(product_jsonld(product, base))
            + "</script>",
            '<script type="application/ld+json">'
            + _json_for_script(_breadcrumb_jsonld(product, base))
            + "</script>",
        )
    )
    availability = product.availability
    category_href = category_path(product.category_slug)
    body = f"""<div class="ds-trail"><a class="ds-trail__item" href="/">Home</a>\
<a class="ds-trail__item" href="{category_href}">{escape(product.category)}</a></div>
<div class="ds-pdp" itemscope itemtype="https://schema.org/Product">
<div class="ds-pdp__col ds-pdp__col--media"><div class="ds-pdp__frame">
<img class="ds-pdp__img" itemprop="image" src="{base}{product.image}" \
alt="{escape(product.name)}"></div></div>
<div class="ds-pdp__col ds-pdp__col--info"><div class="ds-pdp__stack">
<div class="ds-pdp__name" itemprop="name">{escape(product.name)}</div>
<div class="ds-pdp__meta"><span class="ds-pdp__ref" itemprop="sku">{product.sku}</span>
<span class="ds-pdp__maker" itemprop="brand" itemscope itemtype="https://schema.org/Brand">\
<span itemprop="name">{escape(product.brand)}</span></span>
<a class="ds-pdp__dept" href="{category_href}"><span itemprop="category">\
{escape(product.category)}</span></a></div>
<div class="ds-pdp__buy" itemprop="offers" itemscope itemtype="https://schema.org/Offer">
<div class="ds-pdp__price"><span itemprop="price" content="{_money(product.price)}">\
€ {_money(product.price)}</span></div>
<meta itemprop="priceCurrency" content="{product.currency}">
<link itemprop="availability" href="{SCHEMA}{availability}">
<div class="ds-pdp__stock">{_AVAILABILITY_LABEL[availability]}</div>
<div class="ds-pdp__cta"><button class="ds-button" type="button">Add to basket</button></div>
</div>
<div class="ds-pdp__score" itemprop="aggregateRating" itemscope \
itemtype="https://schema.org/AggregateRating"><span itemprop="ratingValue">\
{product.rating:.1f}</span> ★ · <span itemprop="reviewCount">{product.review_count}</span></div>
<div class="ds-pdp__text" itemprop="description">{escape(product.description)}</div>
</div></div></div>
<div class="ds-block ds-block--reviews"><div class="ds-block__head">Reviews</div>
<div class="ds-reviews" data-reviews-url="{reviews_api_path(product.sku)}"></div></div>"""
    return _v3_document(product.name, body, head)


# -- layout-independent -----------------------------------------------------------------


def home(catalog: Catalog, layout: str, base: str) -> str:
    if layout == "v3":
        return _v3_home(catalog, base)
    return _v2_home(catalog, base) if layout == "v2" else _v1_home(catalog, base)


def listing(catalog: Catalog, slug: str, page: int, layout: str, base: str) -> str | None:
    category = catalog.category_by_slug.get(slug)
    if category is None or not 1 <= page <= page_count(len(catalog.by_category[slug])):
        return None
    if layout == "v3":
        return _v3_listing(catalog, category, page, base)
    if layout == "v2":
        return _v2_listing(catalog, category, page, base)
    return _v1_listing(catalog, category, page, base)


def product_page(catalog: Catalog, sku: str, layout: str, base: str) -> str | None:
    product = catalog.by_sku.get(sku)
    if product is None:
        return None
    if layout == "v3":
        return _v3_product(product, base)
    return _v2_product(product, base) if layout == "v2" else _v1_product(product, base)


def reviews_json(catalog: Catalog, sku: str) -> bytes | None:
    product = catalog.by_sku.get(sku)
    if product is None:
        return None
    data = {
        "sku": product.sku,
        "count": product.review_count,
        "reviews": [review.to_dict() for review in product.reviews],
    }
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def robots_txt(base: str) -> str:
    return f"""User-agent: *
# Test hooks and per-visitor pages are not for crawlers.
Disallow: /__control
Disallow: /__control/
Disallow: /cart
Disallow: /checkout
Disallow: /account

Sitemap: {base}/sitemap.xml
"""


def sitemap_chunks(catalog: Catalog) -> int:
    return max(1, math.ceil(len(catalog.products) / SITEMAP_CHUNK))


def sitemap_index(catalog: Catalog, base: str) -> str:
    newest = max(catalog.lastmod.values())
    entries = [f"<sitemap><loc>{base}/sitemaps/categories.xml</loc><lastmod>{newest}</lastmod>"]
    for number in range(1, sitemap_chunks(catalog) + 1):
        chunk = catalog.products[(number - 1) * SITEMAP_CHUNK : number * SITEMAP_CHUNK]
        lastmod = max(catalog.lastmod[p.sku] for p in chunk)
        entries.append(
            f"<sitemap><loc>{base}/sitemaps/products-{number}.xml</loc><lastmod>{lastmod}</lastmod>"
        )
    body = "</sitemap>\n".join(entries) + "</sitemap>"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{body}\n</sitemapindex>\n"
    )


def _urlset(entries: list[tuple[str, str]]) -> str:
    urls = "\n".join(
        f"<url><loc>{escape(loc)}</loc><lastmod>{lastmod}</lastmod></url>"
        for loc, lastmod in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{urls}\n</urlset>\n"
    )


def products_sitemap(catalog: Catalog, number: int, base: str) -> str | None:
    if not 1 <= number <= sitemap_chunks(catalog):
        return None
    chunk = catalog.products[(number - 1) * SITEMAP_CHUNK : number * SITEMAP_CHUNK]
    return _urlset([(base + p.url, catalog.lastmod[p.sku]) for p in chunk])


def categories_sitemap(catalog: Catalog, base: str) -> str:
    entries = [(base + "/", max(catalog.lastmod.values()))]
    for category in catalog.categories:
        products = catalog.by_category[category.slug]
        lastmod = max(catalog.lastmod[p.sku] for p in products)
        for page in range(1, page_count(len(products)) + 1):
            entries.append((base + category_path(category.slug, page), lastmod))
    return _urlset(entries)


def image_svg(catalog: Catalog, sku: str) -> str | None:
    product = catalog.by_sku.get(sku)
    if product is None:
        return None
    hue = int(product.sku[-3:]) * 37 % 360
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320">'
        f'<rect width="320" height="320" fill="hsl({hue},45%,75%)"/>'
        f'<text x="160" y="165" font-size="14" text-anchor="middle">{escape(product.name)}</text>'
        "</svg>"
    )


def simple_page(layout: str, title: str, message: str) -> str:
    body = f'<h1 class="page-title">{escape(title)}</h1>\n<p>{escape(message)}</p>'
    if layout == "v3":
        return _v3_document(title, body)
    if layout == "v2":
        return _v2_document(title, body)
    return _v1_document(title, body)
