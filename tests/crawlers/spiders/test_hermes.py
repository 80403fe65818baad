"""hermes: hermes-state on the saved category page, assumed product pages, a replay crawl."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlers.spiders.hermes import extract_category, extract_product, read_product
from harness.replay_site import ReplaySite
from tests.sites.support import (
    crawl,
    fixture,
    fixture_response,
    real_page,
    real_response,
    response,
    verdict,
)

SITE = "hermes"
HOST = "https://www.hermes.com"
BAGS = "/ca/en/category/women/bags-and-small-leather-goods/bags-and-clutches/"
NO_STATE = rb'<script id="hermes-state".*?</script>'


def test_real_category_page_products_prices_and_availability() -> None:
    category = extract_category(real_response("hermes/category_ca_2025.html", HOST + BAGS))
    assert (category["name"], category["total"], category["source"]) == (
        "Women's Bags and Clutches",
        62,
        "state",
    )
    products = category["products"]
    assert len(products) == 48  # the first 48 of 62: the rest is behind "Load more items"
    first = products[0]
    assert first == {
        "url": f"{HOST}/ca/en/product/p-tit-arcon-toile-and-cuir-bag-H086394CKAB/",
        "product_id": "H086394CKAB",
        "name": "P'tit Arcon Toile & Cuir bag",
        "brand": "Hermès",
        "category": "Women's Bags and Clutches",
        "price": 6250.0,
        "currency": "CAD",
        "availability": "InStock",
        "color": "Beige/Natural",
        "images": first["images"],
    }
    assert first["images"][0].startswith(
        "https://assets.hermes.com/is/image/hermesproduct/086394CKAB_front_wm_1"
    )
    assert len(first["images"]) == 5
    by_sku = {p["product_id"]: p for p in products}
    assert (by_sku["H085735CKAA"]["price"], by_sku["H085003CKP0"]["availability"]) == (
        11200.0,
        "InStoreOnly",
    )
    assert sum(p["availability"] == "InStock" for p in products) == 34


def test_the_grid_alone_gives_the_same_products_on_the_real_page() -> None:
    path = real_page("hermes/category_ca_2025.html")
    full = extract_category(response(path, HOST + BAGS))
    grid = extract_category(
        response(path, HOST + BAGS, re.sub(NO_STATE, b"", path.read_bytes(), flags=re.S))
    )
    assert grid["source"] == "grid"
    keys = ("url", "product_id", "name", "price", "currency")
    assert [tuple(p[k] for k in keys) for p in grid["products"]] == [
        tuple(p[k] for k in keys) for p in full["products"]
    ]


def test_assumed_product_page_layers_agree() -> None:
    url = f"{HOST}/ca/en/product/canvas-and-leather-tote-H900103CKAC/"
    relative = "fixtures/product/canvas-and-leather-tote-H900103CKAC.html"
    full = extract_product(fixture_response(SITE, relative, url))
    assert full["availability"] == "InStoreOnly"
    assert full["material"] == "Toile H and Barenia calfskin"
    assert full["attributes"] == {"dimensions": "L 38 x H 30 x D 14 cm", "made in": "France"}
    body = fixture(SITE, relative).read_bytes()
    no_state = re.sub(NO_STATE, b"", body, flags=re.S)
    jsonld = extract_product(response(fixture(SITE, relative), url, no_state))
    markup = extract_product(
        response(
            fixture(SITE, relative),
            url,
            re.sub(rb'<script type="application/ld\+json">.*?</script>', b"", no_state, flags=re.S),
        )
    )
    keys = ("name", "price", "currency", "color", "material", "description")
    assert {k: jsonld[k] for k in keys} == {k: full[k] for k in keys}
    assert {k: markup[k] for k in keys} == {k: full[k] for k in keys}


def test_a_product_page_value_that_does_not_fit_is_taken_from_the_next_source() -> None:
    """The state's price negative: the JSON-LD's, the other fields still the state's;
    no page source with a fitting price: the category's, with its currency."""
    url = f"{HOST}/ca/en/product/canvas-and-leather-tote-H900103CKAC/"
    relative = "fixtures/product/canvas-and-leather-tote-H900103CKAC.html"
    body = fixture(SITE, relative).read_bytes().replace(b'"price": 2950', b'"price": -2950')
    picked = read_product(response(fixture(SITE, relative), url, body))
    assert (picked.fields["price"], picked.fields["currency"]) == (2950.0, "CAD")
    assert picked.sources["price"] == "json-ld" and picked.sources["name"] == "state"
    assert [(r.field, r.source, r.reason) for r in picked.rejected] == [
        ("price", "state", "greater_than_equal")
    ]
    # Nothing on the page fits (structured prices negative, none printed): the category's
    # price and its currency, the page's values refused.
    everywhere = body.replace(b'"price": "2950"', b'"price": -2950').replace(b"CA$2,950", b"")
    listing = {"url": url, "name": "Tote", "price": 2900.0, "currency": "CAD", "brand": "Hermès"}
    picked = read_product(response(fixture(SITE, relative), url, everywhere), listing=listing)
    assert (picked.fields["price"], picked.fields["currency"]) == (2900.0, "CAD")
    assert picked.sources["price"] == "listing" and picked.fields["brand"] == "Hermès"
    assert {(r.source, r.reason) for r in picked.rejected if r.field == "price"} == {
        ("state", "greater_than_equal"),
        ("json-ld", "greater_than_equal"),
    }


def test_block_pages_are_recognised_and_real_pages_are_not() -> None:
    assert verdict(SITE, fixture(SITE, "blocked/datadome-captcha.html").read_bytes(), 403).kind == (
        "captcha"
    )
    real_block = real_page("idealista/datadome_block_page.html").read_bytes()
    assert verdict(SITE, real_block, 200).kind == "captcha"
    assert verdict(SITE, real_page("hermes/category_ca_2025.html").read_bytes()).ok
    for page in sorted(fixture(SITE, "fixtures").glob("*/*.html")):
        assert verdict(SITE, page.read_bytes()).ok, page.name


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    with ReplaySite(SITE, run_dir=tmp_path_factory.mktemp("replay")) as site:
        yield site


def test_crawl_of_the_replay_pages_and_completes_products(
    replay: ReplaySite, tmp_path: Path
) -> None:
    replay.clear_log()
    result = crawl(SITE, replay, tmp_path)
    assert result.returncode == 0, result.log[-3000:]
    by_id = {item["product_id"]: item for item in result.items}
    assert sorted(by_id) == [
        "H900101CKAA",
        "H900102CKAB",
        "H900103CKAC",
        "H900201CKAA",
        "H900202CKAB",
    ]
    assert result.stat("validation/valid/product") == 5
    from_page_two = by_id["H900103CKAC"]  # only on ?page=2 of the bags category
    assert (
        from_page_two["url"] == f"{replay.url}/ca/en/product/canvas-and-leather-tote-H900103CKAC/"
    )
    assert (from_page_two["price"], from_page_two["currency"], from_page_two["material"]) == (
        2950.0,
        "CAD",
        "Toile H and Barenia calfskin",
    )
    # The Etrier page is not in the replay: its request fails and the category data is kept.
    etrier = by_id["H900102CKAB"]
    assert (etrier["name"], etrier["price"], etrier["description"]) == (
        "Etrier Mini crossbody bag",
        3875.0,
        None,
    )
    assert etrier["incomplete"] == ["product_page"]  # a 404: final at once, not retried
    assert result.stat("hermes/product_page_failed") == 1
    errors = result.errors()
    assert len(errors) == 1 and "etrier-mini-crossbody-bag" in errors[0]
    paths = [entry["path"] for entry in replay.access_log()]
    assert f"{BAGS}?page=2" in paths
