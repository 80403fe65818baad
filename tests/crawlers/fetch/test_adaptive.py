"""RENDER_MODE=auto on the demo shop: the product pages (reviews only after the page's
script ran) are found to need the browser, the listings not; every item is whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.demo_site import DemoSite
from tests.crawlers.fetch.support import REPO_ROOT, expected_products, mismatches, run_crawl

SPIDER = REPO_ROOT / "tests" / "crawlers" / "fetch" / "auto_render_spider.py"
PRODUCTS = 120


def test_auto_renders_the_page_types_that_need_it_and_no_other(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    site = start_site(products=PRODUCTS)
    result = run_crawl(
        tmp_path,
        spider_file=SPIDER,
        base_url=site.url,
        settings={
            "RENDER_MODE": "auto",
            "RENDER_AUTO_SAMPLE": 2,
            "RENDER_AUTO_RECHECK": 0,
            # Few pages in flight: most listing pages are asked for after the verdict.
            "CONCURRENT_REQUESTS": 2,
        },
    )
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(site.catalog(), site.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)  # no probe's
    assert mismatches(result.items, expected) == {}  # reviews included: from the browser
    stats = result.stats
    assert stats["render/auto/mode/parse_product"] == "render"
    assert stats["render/auto/mode/parse_listing"] == "plain"
    assert stats["render/auto/differ"] >= 1 and stats["render/auto/same"] >= 2
    # Listings were rendered only while their page type was learning (pages asked for
    # before the verdict); most went plain.
    listings = sum(1 for entry in site.access_log() if entry["path"].startswith("/category/"))
    rendered_listings = stats["render/requests"] - PRODUCTS - 1  # the start page: once
    assert rendered_listings < listings / 2
    assert "Traceback" not in result.log


def test_always_renders_pages_but_never_an_api_call(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    """The demo spider's reviews come from its JSON API: RENDER_MODE=always renders the
    pages and leaves the API call plain (it is no page), so every product has its reviews."""
    site = start_site(products=8)
    result = run_crawl(tmp_path, base_url=site.url, settings={"RENDER_MODE": "always"})
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(site.catalog(), site.url)
    assert mismatches(result.items, expected) == {}
    assert result.stat("demo/reviews_failed") == 0
    # Every response but the 8 API answers and robots.txt came from the browser.
    assert result.stat("render/requests") == result.stat("responses/classified") - 8 - 1


def test_learning_renders_the_samples_and_holds_the_rest(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    """The demo spider reads reviews from the shop's API, so plain HTTP loses nothing: each
    page type renders its samples only (3 of each, the home page its one), the other pages
    of a type still learning wait for its verdict where their callback yielded them, and
    then go plain; a plain type is not checked again within the day."""
    site = start_site(products=PRODUCTS)
    result = run_crawl(tmp_path, base_url=site.url, settings={"RENDER_MODE": "auto"})
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(site.catalog(), site.url)
    assert mismatches(result.items, expected) == {}
    stats = result.stats
    assert stats["render/auto/mode/parse_product"] == "plain"
    assert stats["render/auto/mode/parse_listing"] == "plain"
    assert stats["render/auto/held"] > PRODUCTS / 2  # held, not rendered
    assert stats.get("render/auto/hold_expired", 0) == 0
    assert stats["render/requests"] == stats["render/auto/probes"] <= 1 + 3 + 3
