"""The demo site served for real (``python -m standins.demo_site`` through ``DemoSite``)."""

from __future__ import annotations

import http.client
import json
import math
import re
import time
import urllib.robotparser
from pathlib import Path
from typing import Any

import pytest
from parsel import Selector

from harness.demo_site import DemoSite
from standins.demo_site.behaviours import selected
from standins.demo_site.catalog import Catalog, build_catalog

PRODUCT_TYPE = "https://schema.org/Product"


@pytest.fixture
def site(demo_site: DemoSite) -> DemoSite:
    return demo_site  # the session's demo shop, reset for each test


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog()


class Page:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    @property
    def selector(self) -> Selector:
        return Selector(text=self.text)


def fetch(site: DemoSite, path: str, *, client: str | None = None, **headers: str) -> Page:
    """One GET without following redirects."""
    if client is not None:
        headers["X-Demo-Client"] = client
    connection = http.client.HTTPConnection(site.host, site.port, timeout=30)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read()
        return Page(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        connection.close()


def jsonld_blocks(page: Page) -> list[dict[str, Any]]:
    return [
        json.loads(block)
        for block in page.selector.css('script[type="application/ld+json"]::text').getall()
    ]


def product_path(catalog: Catalog, index: int) -> str:
    return catalog.products[index].url


# -- pages ------------------------------------------------------------------------------


def test_home_links_every_category(site: DemoSite, catalog: Catalog) -> None:
    page = fetch(site, "/")
    assert page.status == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    links = page.selector.css("a.category-link::attr(href)").getall()
    assert links == [f"/category/{c.slug}" for c in catalog.categories]


def test_listings_paginate_over_every_product(site: DemoSite, catalog: Catalog) -> None:
    for category in catalog.categories:
        expected = [p.url for p in catalog.by_category[category.slug]]
        seen: list[str] = []
        path: str | None = f"/category/{category.slug}"
        pages = 0
        while path:
            page = fetch(site, path)
            assert page.status == 200
            cards = page.selector.css("li.product-card a.product-link::attr(href)").getall()
            assert 0 < len(cards) <= 24
            seen += cards
            pages += 1
            numbers = page.selector.css("nav.pagination .page-number::text").getall()
            assert numbers == [str(n) for n in range(1, math.ceil(len(expected) / 24) + 1)]
            path = page.selector.css('nav.pagination a[rel="next"]::attr(href)').get()
        assert seen == expected
        assert pages == math.ceil(len(expected) / 24)
    assert fetch(site, "/category/kitchen?page=99").status == 404
    assert fetch(site, "/category/kitchen?page=two").status == 404
    assert fetch(site, "/category/no-such-thing").status == 404


def test_product_page_has_jsonld_and_microdata(site: DemoSite, catalog: Catalog) -> None:
    product = next(p for p in catalog.products if p.reviews)
    page = fetch(site, product.url)
    assert page.status == 200
    base = site.url
    blocks = jsonld_blocks(page)
    jsonld = next(b for b in blocks if b["@type"] == "Product")
    assert jsonld["name"] == product.name
    assert jsonld["sku"] == product.sku
    assert jsonld["brand"]["name"] == product.brand
    assert jsonld["description"] == product.description
    assert jsonld["image"] == base + product.image
    assert jsonld["category"] == product.category
    assert jsonld["offers"]["price"] == f"{product.price:.2f}"
    assert jsonld["offers"]["priceCurrency"] == "EUR"
    assert jsonld["offers"]["availability"] == "https://schema.org/" + product.availability
    assert jsonld["aggregateRating"] == {
        "@type": "AggregateRating",
        "ratingValue": product.rating,
        "reviewCount": product.review_count,
    }

    scope = page.selector.css(f'[itemscope][itemtype="{PRODUCT_TYPE}"]')
    assert len(scope) == 1

    def prop(name: str, attr: str | None = None) -> str | None:
        query = f'[itemprop="{name}"]' + (f"::attr({attr})" if attr else "::text")
        return scope.css(query).get()

    assert prop("name") == product.name
    assert prop("sku") == product.sku
    assert scope.css('[itemprop="brand"] [itemprop="name"]::text').get() == product.brand
    assert prop("description") == product.description
    assert prop("category") == product.category
    assert prop("price", "content") == f"{product.price:.2f}"
    assert prop("priceCurrency", "content") == "EUR"
    assert prop("availability", "href") == "https://schema.org/" + product.availability
    assert prop("ratingValue") == f"{product.rating:.1f}"
    assert prop("reviewCount") == str(product.review_count)
    assert prop("image", "src") == base + product.image


def test_reviews_only_come_through_javascript(site: DemoSite, catalog: Catalog) -> None:
    product = next(p for p in catalog.products if len(p.reviews) >= 3)
    page = fetch(site, product.url)
    container = page.selector.css("#reviews")
    assert container.attrib["data-reviews-url"] == f"/api/products/{product.sku}/reviews"
    assert container.xpath("./node()").getall() == []  # empty for a non-JS client
    assert page.selector.css(".review").getall() == []
    for review in product.reviews:
        assert review.body not in page.text
    assert "fetch(" in page.text and "data-reviews-url" in page.text

    api = fetch(site, container.attrib["data-reviews-url"])
    assert api.status == 200
    assert api.headers["content-type"].startswith("application/json")
    data = json.loads(api.body)
    assert data == {
        "sku": product.sku,
        "count": product.review_count,
        "reviews": [r.to_dict() for r in product.reviews],
    }
    no_reviews = next(p for p in catalog.products if not p.reviews)
    assert json.loads(fetch(site, f"/api/products/{no_reviews.sku}/reviews").body)["reviews"] == []
    assert fetch(site, "/api/products/DM-99999/reviews").status == 404


def test_unknown_products_are_404(site: DemoSite) -> None:
    assert fetch(site, "/product/DM-99999").status == 404
    assert fetch(site, "/product/nonsense").status == 404
    assert fetch(site, "/nowhere").status == 404


def test_robots_txt(site: DemoSite) -> None:
    page = fetch(site, "/robots.txt")
    assert page.status == 200
    assert "Disallow: /__control/" in page.text
    assert "Disallow: /cart" in page.text
    assert f"Sitemap: {site.url}/sitemap.xml" in page.text
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(page.text.splitlines())
    assert not parser.can_fetch("any-bot", f"{site.url}/__control/reset")
    assert not parser.can_fetch("any-bot", f"{site.url}/cart")
    assert parser.can_fetch("any-bot", f"{site.url}/product/DM-00001")
    assert parser.can_fetch("any-bot", f"{site.url}/api/products/DM-00001/reviews")


def test_absolute_urls_follow_a_tls_front(site: DemoSite) -> None:
    # Behind a TLS-terminating front (harness.bot_defense, a CDN) the links name the
    # front: its Host and the scheme it says it serves, as real origins do.
    front = {"Host": "127.0.0.1:9443", "X-Forwarded-Proto": "https"}
    assert "Sitemap: https://127.0.0.1:9443/sitemap.xml" in fetch(site, "/robots.txt", **front).text
    index = fetch(site, "/sitemap.xml", **front).text
    assert all(loc.startswith("https://127.0.0.1:9443/") for loc in _locs(index))
    # Anything else than http/https is ignored, not echoed into links.
    odd = fetch(site, "/robots.txt", **{**front, "X-Forwarded-Proto": "javascript"}).text
    assert "Sitemap: http://127.0.0.1:9443/sitemap.xml" in odd


def _locs(xml: str) -> list[str]:
    return re.findall(r"<loc>([^<]+)</loc>", xml)


def test_sitemaps_cover_every_product(site: DemoSite, catalog: Catalog) -> None:
    index = fetch(site, "/sitemap.xml")
    assert index.status == 200 and "<sitemapindex" in index.text
    parts = _locs(index.text)
    assert f"{site.url}/sitemaps/categories.xml" in parts
    product_parts = [p for p in parts if "/sitemaps/products-" in p]
    assert len(product_parts) == math.ceil(len(catalog.products) / 500)
    urls: list[str] = []
    for part in product_parts:
        xml = fetch(site, part.removeprefix(site.url)).text
        locs = _locs(xml)
        assert 0 < len(locs) <= 500
        assert xml.count("<lastmod>") == len(locs)
        urls += locs
    assert sorted(urls) == sorted(site.url + p.url for p in catalog.products)
    categories = _locs(fetch(site, "/sitemaps/categories.xml").text)
    for category in catalog.categories:
        assert f"{site.url}/category/{category.slug}" in categories
    assert fetch(site, "/sitemaps/products-99.xml").status == 404


def test_v2_layout_changes_the_markup_not_the_data(site: DemoSite, catalog: Catalog) -> None:
    product = catalog.products[0]
    v1 = [fetch(site, path).text for path in ("/", "/category/kitchen", product.url)]
    assert site.control(layout="v2")["layout"] == "v2"
    home, listing, page = (fetch(site, p) for p in ("/", "/category/kitchen", product.url))
    for old, new in zip(v1, (home.text, listing.text, page.text), strict=True):
        assert old != new

    assert not home.selector.css("a.category-link")
    assert home.selector.css("a.mega-menu__link::attr(href)").getall() == [
        f"/category/{c.slug}" for c in catalog.categories
    ]
    assert not listing.selector.css('.product-card, nav.pagination, a[rel="next"]')
    assert len(listing.selector.css("article.tile")) == 24
    more = listing.selector.css("a.pager__btn--more::attr(href)").get()
    assert more == "/category/kitchen?page=2"

    assert "itemscope" not in page.text and "itemprop" not in page.text
    blocks = jsonld_blocks(page)
    assert [b["@type"] for b in blocks] == ["BreadcrumbList"]  # no Product any more
    state = json.loads(page.selector.css("script#__STATE__::text").get() or "{}")
    assert state["product"]["id"] == product.sku
    assert state["product"]["title"] == product.name
    assert state["product"]["pricing"]["amountCents"] == round(product.price * 100)
    assert page.selector.css("h2.pdp__title::text").get() == product.name
    assert not page.selector.css("h1")
    reviews = page.selector.css(".pdp__reviews")
    assert reviews.attrib["data-src"] == f"/api/products/{product.sku}/reviews"
    assert reviews.xpath("./node()").getall() == []

    site.reset()
    assert fetch(site, product.url).text == v1[2]


def test_v3_layout_changes_classes_and_wrappers_keeps_the_structured_data(
    site: DemoSite, catalog: Catalog
) -> None:
    product = catalog.products[0]
    v1 = fetch(site, product.url)
    assert site.control(layout="v3")["layout"] == "v3"
    home, listing, page = (fetch(site, p) for p in ("/", "/category/kitchen", product.url))

    # Every class the v1 markup had is gone, and so are its list and article wrappers.
    for response in (home, listing, page):
        assert not response.selector.css(
            "a.category-link, a.product-link, .product-card, nav.pagination, "
            "h1.product-title, .product-price, article, ul, h1"
        )
    assert home.selector.css('a[href*="/category/"]::attr(href)').getall() == [
        f"/category/{c.slug}" for c in catalog.categories
    ]
    assert len(listing.selector.css("div.ds-card")) == 24
    assert listing.selector.css('a[rel="next"]::attr(href)').get() == "/category/kitchen?page=2"

    # The data stays reachable: the same JSON-LD and microdata values, the reviews API.
    assert jsonld_blocks(page) == jsonld_blocks(v1)
    microdata = "//*[@itemprop]/@itemprop"
    assert sorted(page.selector.xpath(microdata).getall()) == sorted(
        v1.selector.xpath(microdata).getall()
    )
    assert page.selector.css("[data-reviews-url]").attrib["data-reviews-url"] == (
        f"/api/products/{product.sku}/reviews"
    )


def test_revision_switch_at_runtime(site: DemoSite, catalog: Catalog) -> None:
    revised = catalog.revised(1)
    state = site.control(revision=1)
    assert state["catalog"]["product_count"] == len(revised.products)
    assert state["catalog"]["changed_skus"] == sorted(revised.changed_skus)
    assert state["catalog"]["added_skus"] == sorted(revised.added_skus)
    changed = revised.by_sku[min(revised.changed_skus)]
    page = fetch(site, changed.url)
    jsonld = jsonld_blocks(page)[0]
    assert (jsonld["offers"]["price"], jsonld["description"]) == (
        f"{changed.price:.2f}",
        changed.description,
    )
    assert fetch(site, revised.by_sku[min(revised.added_skus)].url).status == 200
    site.reset()
    assert fetch(site, revised.by_sku[min(revised.added_skus)].url).status == 404


# -- behaviours -----------------------------------------------------------------------------


def is_captcha(page: Page) -> bool:
    return (
        page.status == 200
        and "captcha-delivery.com" in page.text
        and "Verify you are human" in page.text
        and 'class="captcha-form"' in page.text
    )


def test_captcha_blocks_the_first_attempt_only(site: DemoSite, catalog: Catalog) -> None:
    site.control(captcha={"rate": 1.0})
    path = product_path(catalog, 0)
    first, second = fetch(site, path), fetch(site, path)
    assert is_captcha(first)
    assert catalog.products[0].sku not in first.text
    assert second.status == 200 and not is_captcha(second)
    assert second.selector.css("h1::text").get() == catalog.products[0].name


def _blocked_paths(site: DemoSite, paths: list[str], client: str | None) -> set[str]:
    return {p for p in paths if fetch(site, p, client=client).status == 403}


def test_block_rate_is_deterministic_and_retry_succeeds(site: DemoSite, catalog: Catalog) -> None:
    paths = [p.url for p in catalog.products[:200]]
    site.control(client="proxy-a", forbidden={"rate": 0.3})
    blocked = _blocked_paths(site, paths, "proxy-a")
    assert 0.2 * len(paths) <= len(blocked) <= 0.4 * len(paths)
    # The documented rule, computed independently of the site.
    assert blocked == {p for p in paths if selected(7, "forbidden", p, 0.3)}
    # A retry of a blocked path succeeds; other clients are not affected at all.
    assert _blocked_paths(site, sorted(blocked), "proxy-a") == set()
    assert _blocked_paths(site, paths[:50], "proxy-b") == set()
    assert _blocked_paths(site, paths[:50], None) == set()

    site.reset()
    site.control(client="proxy-a", forbidden={"rate": 0.3})
    assert _blocked_paths(site, paths, "proxy-a") == blocked
    site.reset()
    site.control(client="proxy-a", forbidden={"rate": 0.3}, block_seed=99)
    assert _blocked_paths(site, paths, "proxy-a") != blocked


def test_block_attempts_and_paths(site: DemoSite, catalog: Catalog) -> None:
    path = product_path(catalog, 1)
    site.control(forbidden={"rate": 1.0, "attempts": 2, "paths": ["/product/"]})
    assert [fetch(site, path).status for _ in range(3)] == [403, 403, 200]
    assert fetch(site, "/category/kitchen").status == 200  # outside the prefixes
    site.control(forbidden={"rate": 1.0, "attempts": None})
    assert [fetch(site, path).status for _ in range(3)] == [403, 403, 403]
    page = fetch(site, path)
    assert "Access Denied" in page.text


def test_throttle_answers_429_with_retry_after(site: DemoSite, catalog: Catalog) -> None:
    site.control(throttle={"retry_after": 7})
    page = fetch(site, product_path(catalog, 2))
    assert page.status == 429
    assert page.headers["retry-after"] == "7"
    assert fetch(site, product_path(catalog, 2)).status == 200


def test_slow(site: DemoSite, catalog: Catalog) -> None:
    site.control(slow={"ms": 300})
    started = time.monotonic()
    assert fetch(site, product_path(catalog, 3)).status == 200
    assert time.monotonic() - started >= 0.3
    site.reset()
    started = time.monotonic()
    assert fetch(site, f"{product_path(catalog, 3)}?__behaviour=slow&__ms=200").status == 200
    assert time.monotonic() - started >= 0.2


def test_error_burst(site: DemoSite, catalog: Catalog) -> None:
    state = site.control(error_burst={"count": 3})
    assert state["error_burst_remaining"] == {"global": 3}
    statuses = [fetch(site, product_path(catalog, i)).status for i in range(5)]
    assert statuses == [503, 503, 503, 200, 200]


def test_unavailable_fails_chosen_paths_only(site: DemoSite, catalog: Catalog) -> None:
    reviews = f"/api/products/{catalog.products[0].sku}/reviews"
    other = f"/api/products/{catalog.products[1].sku}/reviews"
    site.control(unavailable={"attempts": 2, "paths": [reviews]})
    assert [fetch(site, reviews).status for _ in range(3)] == [503, 503, 200]
    assert fetch(site, other).status == 200
    # attempts null: the path stays down, even while an error burst comes and goes.
    site.control(unavailable={"attempts": None, "paths": [reviews]}, error_burst={"count": 1})
    assert [fetch(site, other).status, fetch(site, other).status] == [503, 200]
    assert [fetch(site, reviews).status for _ in range(3)] == [503, 503, 503]
    assert "Service Unavailable" in fetch(site, reviews).text
    logged = [(e["status"], e["behaviour"]) for e in site.access_log() if e["path"] == reviews]
    assert logged == [(503, "unavailable")] * 2 + [(200, None)] + [(503, "unavailable")] * 4


def test_malformed_html_keeps_the_data(site: DemoSite, catalog: Catalog) -> None:
    product = catalog.products[4]
    site.control(malformed_html={})
    page = fetch(site, product.url)
    assert page.status == 200
    assert "</li>" not in page.text and "</p>" not in page.text
    assert "<b><i>Summer sale!</b></i>" in page.text and "</body>" not in page.text
    # Still all there for a lenient parser.
    assert page.selector.css('[itemprop="name"]::text').get() == product.name
    blocks = jsonld_blocks(page)
    assert blocks[0]["offers"]["price"] == f"{product.price:.2f}"


def test_bad_encoding_is_cp1252_labelled_utf8(site: DemoSite, catalog: Catalog) -> None:
    site.control(bad_encoding={})
    page = fetch(site, product_path(catalog, 5))
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert b'<meta charset="utf-8">' in page.body
    with pytest.raises(UnicodeDecodeError):
        page.body.decode("utf-8")
    assert "€" in page.body.decode("cp1252")


def test_redirect_loop(site: DemoSite, catalog: Catalog) -> None:
    path = product_path(catalog, 6)
    site.control(redirect_loop={})
    first = fetch(site, path)
    assert first.status == 302 and first.headers["location"] == path + "?__loop=1"
    second = fetch(site, first.headers["location"])
    assert second.status == 302 and second.headers["location"] == path


def test_offsite_redirect_goes_to_the_other_loopback_name(site: DemoSite, catalog: Catalog) -> None:
    path = product_path(catalog, 6)
    site.control(offsite_redirect={"paths": [path]})
    moved = fetch(site, path)
    assert moved.status == 302
    other = "localhost" if site.host == "127.0.0.1" else "127.0.0.1"
    assert moved.headers["location"] == f"http://{other}:{site.port}{path}"
    # The same server under its other name: the path itself answers there.
    back = fetch(site, path, Host=f"{other}:{site.port}")
    assert (
        back.status == 302 and back.headers["location"] == f"http://{site.host}:{site.port}{path}"
    )
    assert fetch(site, product_path(catalog, 7)).status == 200  # only the paths given


def test_unreadable_keeps_the_text_and_loses_every_handle(site: DemoSite, catalog: Catalog) -> None:
    product = catalog.products[8]
    site.control(unreadable={"paths": [product.url]})
    page = fetch(site, product.url)
    assert page.status == 200
    assert product.name in page.body.decode()  # the text is all there
    assert b"<script" not in page.body and b"class=" not in page.body
    assert b"itemprop" not in page.body and b"data-reviews-url" not in page.body
    assert not page.selector.css("h1") and not page.selector.css("[itemtype]")
    clean = fetch(site, catalog.products[9].url)
    assert clean.selector.css("h1.product-title")  # only the paths given


def test_huge_page(site: DemoSite, catalog: Catalog) -> None:
    product = catalog.products[7]
    site.control(huge_page={"mb": 2})
    page = fetch(site, product.url)
    assert len(page.body) >= 2 * 1024 * 1024
    assert page.body.index(b'id="filler"') > page.body.index(product.sku.encode())


def test_query_forced_behaviours(site: DemoSite, catalog: Catalog) -> None:
    path = product_path(catalog, 8)
    for _ in range(2):  # forced on every request, no attempt counting
        assert is_captcha(fetch(site, path + "?__behaviour=captcha"))
    assert fetch(site, path + "?__behaviour=forbidden").status == 403
    assert fetch(site, path + "?__behaviour=error_burst").status == 503
    assert fetch(site, path + "?__behaviour=nonsense").status == 400
    assert fetch(site, path).status == 200


def test_client_settings_override_global_ones(site: DemoSite, catalog: Catalog) -> None:
    path = product_path(catalog, 9)
    site.control(throttle={"attempts": None})
    site.control(client="vip", throttle=None, forbidden={"attempts": None})
    assert fetch(site, path).status == 429
    assert fetch(site, path, client="vip").status == 403
    assert fetch(site, path, client="other").status == 429


def test_invalid_control_requests_are_rejected(site: DemoSite) -> None:
    payloads: list[dict[str, Any]] = [
        {"behaviours": {"teleport": {}}},
        {"behaviours": {"captcha": {"rate": 2}}},
        {"behaviours": {"slow": {"speed": 1}}},
        {"layout": "v9"},
        {"revision": -1},
        {"surprise": True},
    ]
    for payload in payloads:
        connection = http.client.HTTPConnection(site.host, site.port, timeout=10)
        connection.request("POST", "/__control", body=json.dumps(payload))
        response = connection.getresponse()
        assert response.status == 400, payload
        assert "error" in json.loads(response.read())
        connection.close()
    assert site.state()["behaviours"] == {}


def test_edge_urls(site: DemoSite, catalog: Catalog) -> None:
    first = catalog.products[0]
    malformed = fetch(site, "/edge/malformed")
    assert malformed.status == 200 and "</li>" not in malformed.text
    assert malformed.selector.css("h1::text").get() == first.name

    encoded = fetch(site, "/edge/bad-encoding")
    assert encoded.headers["content-type"] == "text/html; charset=utf-8"
    with pytest.raises(UnicodeDecodeError):
        encoded.body.decode("utf-8")

    hop = fetch(site, "/edge/redirect-loop")
    assert hop.status == 302
    back = fetch(site, hop.headers["location"])
    assert back.status == 302 and back.headers["location"] == "/edge/redirect-loop"

    huge = fetch(site, "/edge/huge")
    assert huge.status == 200 and len(huge.body) >= 20 * 1024 * 1024
    assert fetch(site, "/edge/error").status == 503


# -- access log -----------------------------------------------------------------------------


def test_access_log(site: DemoSite, catalog: Catalog) -> None:
    assert site.access_log() == []
    fetch(site, "/", client="proxy-1", **{"User-Agent": "agent/1"})
    fetch(site, "/product/DM-99999?x=1")
    site.control(captcha={})
    fetch(site, product_path(catalog, 10), client="proxy-2")
    site.state()  # control traffic is not logged

    log = site.access_log()
    assert [(e["i"], e["path"], e["status"], e["client"]) for e in log] == [
        (0, "/", 200, "proxy-1"),
        (1, "/product/DM-99999?x=1", 404, None),
        (2, product_path(catalog, 10), 200, "proxy-2"),
    ]
    assert log[0]["user_agent"] == "agent/1" and log[0]["method"] == "GET"
    assert log[2]["behaviour"] == "captcha" and log[0]["behaviour"] is None
    assert all(isinstance(e["ts"], float) for e in log)
    assert site.access_log(since=2) == log[2:]
    assert site.access_log(client="proxy-1") == log[:1]

    lines = [json.loads(line) for line in _jsonl(site).read_text().splitlines()]
    assert lines[-3:] == log

    site.reset()
    assert site.access_log() == []


def test_the_access_log_keeps_request_heads_when_asked(site: DemoSite) -> None:
    fetch(site, "/", **{"User-Agent": "agent/1"})
    assert "headers" not in site.access_log()[0]  # off by default: entries stay small
    assert site.control(log_headers=True)["log_headers"] is True
    fetch(site, "/", **{"User-Agent": "agent/2", "sec-ch-ua": '"B";v="1"'})
    headers = site.access_log()[1]["headers"]
    names = [name for name, _ in headers]
    assert ["sec-ch-ua", '"B";v="1"'] in headers  # spelled as sent
    assert names.index("User-Agent") < names.index("sec-ch-ua")  # in the order received
    site.reset()
    assert site.state()["log_headers"] is False


def _jsonl(site: DemoSite) -> Path:
    assert site.access_log_path is not None
    return site.access_log_path


def test_state_shape(site: DemoSite) -> None:
    state: dict[str, Any] = site.control(client="c1", slow={"ms": 10})
    assert state["clients"] == {"c1": {"slow": {"rate": 1.0, "ms": 10, "paths": None}}}
    assert {"seed", "products", "revision", "layout", "block_seed", "behaviours"} <= set(state)
    assert site.control(client="c1", slow=None)["clients"] == {}
