"""The profile-only path on the two local sites without structured data (standins.plain_sites):
``scrapy crawl <site>`` with the shipped profile against the real loopback server, and
every stored field compared with the site's own generator.

What it shows: values as printed (``1.132,74 €`` -> 1132.74 EUR in the profile's German
market, ``53,0K Bewertungen`` -> 53000, ``Published on Apr 24, 2022`` -> ``2022-04-24``,
``339K likes`` -> 339000), many items per page from a repeated container with
pagination through the next page's link, variants (the choices a product is sold in,
without the prompt option), and an item type the profile declares (``quote``, by the
platform's field names). Both profiles are the scaffold's (``python -m crawlers.scaffold``)
with one edited line each (their descriptions; tests/crawlers/scaffold/test_plain_sites.py
measures it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness.plain_site import PlainSite
from standins.plain_sites import data
from standins.plain_sites.server import PlainSiteConfig
from tests.crawlers.support import REPO_ROOT, crawl_env

SEED, ITEMS = PlainSiteConfig.seed, 60


def crawl(site: str, url: str, output: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", site, "-a", f"base_url={url}",
         "-O", str(output), "-s", "LOG_LEVEL=INFO"],
        cwd=REPO_ROOT, env=crawl_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in output.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def shop_items(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    run_dir = Path(tmp_path_factory.mktemp("werkstatt"))
    with PlainSite("werkstatt", seed=SEED, items=ITEMS, run_dir=run_dir) as site:
        yield crawl("werkstatt", site.url, run_dir / "items.jsonl")


@pytest.fixture(scope="module")
def quote_items(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    run_dir = Path(tmp_path_factory.mktemp("sayings"))
    with PlainSite("sayings", seed=SEED, items=ITEMS, run_dir=run_dir) as site:
        yield crawl("sayings", site.url, run_dir / "items.jsonl")


def expected_product(product: data.Product) -> dict[str, Any]:
    return {
        "product_id": product.sku,
        "name": product.name,
        "brand": product.brand,
        "category": product.category.title(),
        "breadcrumbs": ["Startseite", product.category.title(), product.name],
        "price": product.price,
        "currency": "EUR",
        "color": product.colour,
        "material": product.material,
        "variants": list(product.variants),
        "description": "\n\n".join(product.description),
        "rating": float(product.rating),
        "review_count": product.reviews,
        "images": [f"/bilder/{product.sku}-{n}.jpg" for n in range(1, product.images + 1)],
    }


def test_every_shop_field_is_read_as_printed(shop_items: list[dict[str, Any]]) -> None:
    truth = {p.sku: expected_product(p) for p in data.products(SEED, ITEMS)}
    by_id = {item["product_id"]: item for item in shop_items}
    assert set(by_id) == set(truth)  # every product, through listings and their pages
    wrong = []
    for sku, expected in truth.items():
        item = dict(by_id[sku])
        item["images"] = [urlsplit(url).path for url in item["images"]]
        wrong += [(sku, k, item[k], v) for k, v in expected.items() if item[k] != v]
    assert wrong == []
    # Grouped German amounts, suffixed counts and several variants were on the pages.
    assert any(len(p.variants) > 1 for p in data.products(SEED, ITEMS))
    assert any(p.price >= 1000 for p in data.products(SEED, ITEMS))
    assert any(p.reviews >= 1000 for p in data.products(SEED, ITEMS))


def test_many_quotes_per_page_with_pagination_dates_and_suffixes(
    quote_items: list[dict[str, Any]],
) -> None:
    truth = {q.quote_id: q for q in data.quotes(SEED, ITEMS)}
    by_id = {item["quote_id"]: item for item in quote_items}
    assert set(by_id) == set(truth)  # the later pages too: pagination was followed
    assert len({item["url"] for item in quote_items}) > 1
    wrong = []
    for quote_id, quote in truth.items():
        item = by_id[quote_id]
        expected = {
            "text": quote.text,
            "author": quote.author,
            "tags": list(quote.tags),
            "published_at": f"{quote.year}-{quote.month:02d}-{quote.day:02d}",
            "like_count": quote.likes,
        }
        wrong += [(quote_id, k, item[k], v) for k, v in expected.items() if item[k] != v]
    assert wrong == []
    assert any(q.likes >= 1000 for q in truth.values())  # "339K likes" was read
