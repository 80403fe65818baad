"""The ``demo`` spider: a real ``scrapy crawl`` against the real demo site, plus fallbacks."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.test import get_crawler

from crawlers.items import DemoProduct
from crawlers.spiders.demo import DemoSpider, extract_product, listing_links
from crawlers.spiders.demo_cards import CARD_FIELDS, CARD_MARKUPS, extract_cards
from harness.demo_site import DemoSite
from standins.demo_site import pages
from standins.demo_site.catalog import Catalog, build_catalog

REPO_ROOT = Path(__file__).resolve().parents[3]
BASE = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    with DemoSite(run_dir=tmp_path_factory.mktemp("demo-site")) as server:
        yield server


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog()


def test_crawl_extracts_every_product_exactly(
    site: DemoSite, catalog: Catalog, tmp_path: Path
) -> None:
    out = tmp_path / "items.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    command = [sys.executable, "-m", "scrapy", "crawl", "demo", "-O", str(out)]
    result = subprocess.run(
        [*command, "-a", f"base_url={site.url}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    log = result.stderr
    assert result.returncode == 0, log[-3000:]
    assert " ERROR: " not in log, [line for line in log.splitlines() if " ERROR: " in line][:5]
    # Local mode is not a misconfiguration: no WARNING, one INFO line saying what is off.
    assert [line for line in log.splitlines() if " WARNING: " in line] == []
    assert sum(" INFO: local mode: no frontier" in line for line in log.splitlines()) == 1

    items = [json.loads(line) for line in out.read_text().splitlines()]
    counts = Counter(item["sku"] for item in items)
    assert [sku for sku, n in counts.items() if n > 1] == []
    assert set(counts) == {p.sku for p in catalog.products}
    by_sku = {item["sku"]: item for item in items}
    mismatches = {}
    for product in catalog.products:
        expected = product.to_dict(site.url)
        got = by_sku[product.sku]
        wrong = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
        if wrong:
            mismatches[product.sku] = wrong
    assert mismatches == {}, list(mismatches.items())[:3]
    # Every item carries the job it was scraped in (one job for this one crawl).
    assert len({item["job_id"] for item in items}) == 1
    assert items[0]["job_id"].startswith("demo-")

    # robots.txt first and obeyed; each page fetched once.
    paths = [entry["path"] for entry in site.access_log()]
    assert paths[0] == "/robots.txt"
    assert not [p for p in paths if p.startswith(("/cart", "/__control"))]
    product_hits = Counter(p for p in paths if p.startswith(("/product/", "/api/products/")))
    assert len(product_hits) == 2 * len(catalog.products)
    assert set(product_hits.values()) == {1}


# -- extraction fallbacks, on pages rendered by the site's own code --------------------------


def _response(html: str, sku: str) -> HtmlResponse:
    return HtmlResponse(url=f"{BASE}/product/{sku}", body=html.encode(), encoding="utf-8")


def _expected(catalog: Catalog, sku: str) -> dict[str, Any]:
    expected = catalog.by_sku[sku].to_dict(BASE)
    del expected["reviews"]
    return expected


def _v1_page(catalog: Catalog, sku: str) -> str:
    html = pages.product_page(catalog, sku, "v1", BASE)
    assert html is not None
    return html


def _without_jsonld(html: str) -> str:
    return re.sub(r'<script type="application/ld\+json">.*?</script>', "", html, flags=re.S)


def _without_microdata(html: str) -> str:
    return re.sub(r'\s(itemscope|itemtype="[^"]*"|itemprop="[^"]*")', "", html)


@pytest.mark.parametrize(
    "strip",
    [
        pytest.param(lambda html: html, id="jsonld"),
        pytest.param(_without_jsonld, id="microdata"),
        pytest.param(lambda html: _without_microdata(_without_jsonld(html)), id="css"),
    ],
)
def test_each_extraction_layer_alone_gives_the_full_product(catalog: Catalog, strip: Any) -> None:
    for product in catalog.products[:40]:
        html = strip(_v1_page(catalog, product.sku))
        assert extract_product(_response(html, product.sku)) == _expected(catalog, product.sku)


def test_broken_jsonld_falls_back_field_by_field(catalog: Catalog) -> None:
    product = catalog.products[3]
    html = _v1_page(catalog, product.sku).replace(
        '"@type":"Product"', '"@type":"Product","broken":', 1
    )
    assert extract_product(_response(html, product.sku)) == _expected(catalog, product.sku)


def _spider() -> DemoSpider:
    crawler = get_crawler(DemoSpider)
    spider = DemoSpider.from_crawler(crawler, base_url=BASE)
    assert isinstance(spider, DemoSpider)
    return spider


def test_product_then_reviews_carry_the_partial_product(catalog: Catalog) -> None:
    product = next(p for p in catalog.products if p.reviews)
    spider = _spider()
    html = _without_jsonld(_v1_page(catalog, product.sku))
    (request,) = list(spider.parse_product(_response(html, product.sku)))
    assert isinstance(request, scrapy.Request)
    assert request.url == f"{BASE}/api/products/{product.sku}/reviews"
    assert request.cb_kwargs["product"] == _expected(catalog, product.sku)

    body = pages.reviews_json(catalog, product.sku)
    assert body is not None
    api = TextResponse(url=request.url, body=body, encoding="utf-8", request=request)
    (item,) = list(spider.parse_reviews(api, **request.cb_kwargs))
    assert item == DemoProduct(**product.to_dict(BASE))


def test_unparseable_pages_are_logged_not_dropped_silently(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    spider = _spider()
    sku = catalog.products[0].sku
    v2 = pages.product_page(catalog, sku, "v2", BASE)
    assert v2 is not None
    assert list(spider.parse_product(_response(v2, sku))) == []
    assert spider.crawler.stats is not None
    assert spider.crawler.stats.get_value("demo/product_unparsed") == 1
    assert any(sku in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)

    failed = TextResponse(
        url=f"{BASE}/api/products/{sku}/reviews", body=b"<html>", encoding="utf-8"
    )
    (item,) = list(spider.parse_reviews(failed, product=_expected(catalog, sku)))
    assert item.reviews is None and item.name == catalog.products[0].name
    assert item.incomplete == ["reviews"]
    assert spider.crawler.stats.get_value("demo/reviews_failed") == 1


# -- listing cards ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", pages.LAYOUTS)
def test_cards_of_every_layout_read_as_the_product_pages_give_them(
    catalog: Catalog, layout: str
) -> None:
    """Every card of every listing page, in the three layouts: URL, SKU and the card
    fields equal to what the product page's extraction gives (prices as floats,
    availability as schema.org names), so a card hashes the same as its product."""
    seen = []
    for category in catalog.categories:
        count = pages.page_count(len(catalog.by_category[category.slug]))
        for number in range(1, count + 1):
            path = pages.category_path(category.slug, number)
            html = pages.listing(catalog, category.slug, number, layout, BASE)
            assert html is not None
            response = HtmlResponse(url=BASE + path, body=html.encode(), encoding="utf-8")
            for card in extract_cards(response):
                product = catalog.by_sku[card["sku"]].to_dict(BASE)
                assert card == {name: product[name] for name in ("url", "sku", *CARD_FIELDS)}
                seen.append(card["sku"])
    assert sorted(seen) == sorted(p.sku for p in catalog.products)


@pytest.mark.parametrize("layout", pages.LAYOUTS)
def test_a_listing_read_in_one_streamed_pass_reads_as_its_tree(
    catalog: Catalog, layout: str
) -> None:
    """The listing's links and cards read by crawlers.limits.links (no tree) are those the
    page's tree gives."""
    spider = _spider()
    category = catalog.categories[0].slug
    html = pages.listing(catalog, category, 1, layout, BASE)
    assert html is not None
    response = HtmlResponse(url=f"{BASE}/category/{category}", body=html.encode(), encoding="utf-8")
    listing = listing_links(spider.selectors("listing"))
    page = spider._read(response, listing, {m.card: m.card for m in CARD_MARKUPS})
    for kind, links in listing.items():
        from_tree = response.css(links.css).getall() or response.css(links.fallback or "").getall()
        assert page.links[kind] == list(dict.fromkeys(from_tree)) and page.links[kind]
    assert extract_cards(response, page.elements) == extract_cards(response) != []


def test_a_page_without_known_cards_has_none() -> None:
    html = "<html><body><a href='/product/DM-00001'>x</a></body></html>"
    response = HtmlResponse(url=f"{BASE}/category/x", body=html.encode(), encoding="utf-8")
    assert extract_cards(response) == []


def test_without_redis_every_card_is_a_request(catalog: Catalog) -> None:
    """No REDIS_URL: the listing yields every product's request (no Redis call), with
    no re-crawl context, and the category's other pages."""
    spider = _spider()
    html = pages.listing(catalog, "kitchen", 1, "v1", BASE)
    assert html is not None
    response = HtmlResponse(url=f"{BASE}/category/kitchen", body=html.encode(), encoding="utf-8")

    async def outputs() -> list[Any]:
        return [output async for output in spider.parse_listing(response)]

    got = asyncio.run(outputs())
    products = [r for r in got if r.callback == spider.parse_product]
    assert len(products) == pages.PAGE_SIZE and all(isinstance(r, scrapy.Request) for r in got)
    assert all("recrawl" not in r.meta for r in products)
    assert {r.url for r in got if r.callback == spider.parse_listing} == {
        f"{BASE}/category/kitchen?page={n}"
        for n in range(2, pages.page_count(len(catalog.by_category["kitchen"])) + 1)
    }
