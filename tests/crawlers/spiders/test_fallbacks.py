"""Field-level fallbacks: each field from the first source whose value fits its declared
type; every refused value counted under the field, the source and the reason."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawlers.items import DemoProduct, schema_for
from crawlers.spiders.common import script_json, structured_nodes, to_float
from crawlers.spiders.demo import from_jsonld, from_microdata, read_product
from crawlers.spiders.fallbacks import Picked, Rejected, pick, report

URL = "http://127.0.0.1:8000/product/DM-00042"

# A product page whose microdata rates it 9 (of 5: it does not fit), whose embedded state
# rates it 4.5, and whose JSON-LD states no rating at all.
MICRODATA_BAD_STATE_GOOD = """<!doctype html><html lang="en"><head>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product",
 "name": "Kettle", "sku": "DM-00042",
 "offers": {"@type": "Offer", "price": "24.50", "priceCurrency": "EUR"}}</script>
<script id="state" type="application/json">{"product": {"sku": "DM-00042", "rating": 4.5,
 "reviewCount": 12}}</script></head><body>
<div itemscope itemtype="https://schema.org/Product">
  <span itemprop="name">Kettle</span>
  <div itemprop="aggregateRating" itemscope itemtype="https://schema.org/AggregateRating">
    <span itemprop="ratingValue">9</span><span itemprop="reviewCount">12</span></div>
</div>
<h1 class="product-title">Kettle</h1>
<div class="product-rating"><span class="rating-value">4.5</span></div>
</body></html>"""


def page(body: str, url: str = URL) -> HtmlResponse:
    return HtmlResponse(url, body=body.encode(), encoding="utf-8")


def state_layer(response: HtmlResponse) -> dict[str, Any]:
    product = (script_json(response, '//script[@id="state"]/text()') or {}).get("product") or {}
    return {"rating": to_float(product.get("rating")), "sku": product.get("sku")}


def test_invalid_microdata_falls_back_to_the_embedded_state() -> None:
    response = page(MICRODATA_BAD_STATE_GOOD)
    picked = pick(
        "demo_product",
        [
            ("json-ld", from_jsonld(response)),
            ("microdata", from_microdata(response)),
            ("state", state_layer(response)),
        ],
        names=("name", "price", "currency", "rating"),
    )
    assert picked.fields == {"name": "Kettle", "price": 24.5, "currency": "EUR", "rating": 4.5}
    assert picked.sources["rating"] == "state" and picked.sources["price"] == "json-ld"
    (refused,) = picked.rejected
    assert (refused.field, refused.source, refused.reason) == (
        "rating",
        "microdata",
        "less_than_equal",
    )
    assert "9.0" in refused.detail


def test_the_first_fitting_source_wins_and_later_sources_are_not_read() -> None:
    read: list[str] = []

    def layer(name: str, fields: dict[str, Any]) -> tuple[str, Any]:
        return name, lambda: read.append(name) or fields

    picked = pick(
        "demo_product",
        [layer("json-ld", {"name": "A", "price": 3.0}), layer("dom", {"name": "B", "price": 4.0})],
        names=("name", "price"),
    )
    assert picked.fields == {"name": "A", "price": 3.0}
    assert read == ["json-ld"] and picked.rejected == () and picked.no_valid == ()


def test_damaged_text_yields_to_a_clean_source_and_is_kept_without_one() -> None:
    damaged = "Product \ufffd p1"
    clean = pick("demo_product", [("json-ld", {"name": damaged}), ("dom", {"name": "Product p1"})])
    assert clean.fields["name"] == "Product p1" and clean.sources["name"] == "dom"
    assert [(r.source, r.reason) for r in clean.rejected] == [("json-ld", "replacement_character")]
    alone = pick("demo_product", [("json-ld", {"name": damaged}), ("dom", {"name": None})])
    assert alone.fields["name"] == damaged and alone.rejected == ()  # marked, not lost


def test_a_required_field_without_a_valid_source_keeps_its_value_for_the_pipeline() -> None:
    picked = pick(
        "demo_product",
        [("json-ld", {"price": -9.99, "image": "javascript:alert(1)"}), ("dom", {"price": None})],
    )
    # Required: the first value stays, so validation drops the item naming why.
    assert picked.fields["price"] == -9.99 and "price" not in picked.no_valid
    # Optional: left empty, the item kept.
    assert picked.fields["image"] is None and picked.no_valid == ("image",)
    reasons = {(r.field, r.reason) for r in picked.rejected}
    assert reasons == {("price", "greater_than_equal"), ("image", "value_error")}
    item = DemoProduct(sku="S", url=URL, name="n", currency="EUR", **picked.fields)
    errors = schema_for(item).validate(item).errors
    assert [(e.field, e.reason) for e in errors] == [("price", "greater_than_equal")]


def test_a_currency_goes_with_its_amount_s_source_first() -> None:
    layers = [
        ("json-ld", {"price": -5.0, "currency": "USD"}),
        ("dom", {"price": 5.0, "currency": "EUR"}),
        ("url", {"price": 7.0}),
    ]
    picked = pick("demo_product", layers, together={"price": ("currency",)})
    assert (picked.fields["price"], picked.fields["currency"]) == (5.0, "EUR")
    # The amount's source states no currency: the first source that does.
    layers[1][1].pop("currency")
    picked = pick("demo_product", layers, together={"price": ("currency",)})
    assert (picked.fields["price"], picked.fields["currency"]) == (5.0, "USD")
    assert list(picked.fields) == ["price", "currency"]


def test_a_field_s_own_order_names_the_sources_it_tries() -> None:
    layers = [
        ("store", {"name": "Store name", "description": "short"}),
        ("dom", {"name": "Shown name", "description": "The whole description."}),
    ]
    picked = pick("hotel", layers, order={"description": ("dom", "store")})
    assert picked.fields == {"name": "Store name", "description": "The whole description."}


def test_refusals_are_counted_per_type_field_source_and_reason_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler()
    picked = Picked(
        "demo_product",
        {"price": 9.99, "image": None},
        {"price": "dom"},
        (
            Rejected("price", "json-ld", "greater_than_equal", "price: ...; got -9.99"),
            Rejected("price", "microdata", "float_type", "price: ...; got 'x'"),
            Rejected("image", "json-ld", "value_error", "image: not a URL"),
        ),
        ("image",),
    )
    logger = logging.getLogger("test.fallbacks")
    with caplog.at_level(logging.WARNING, logger="test.fallbacks"):
        report(picked, URL, crawler.stats, logger)
        report(
            Picked("demo_product", {"price": 1.0}, {"price": "json-ld"}), URL, crawler.stats, logger
        )
    stats = crawler.stats.get_stats()
    assert {k: v for k, v in stats.items() if k.startswith("fields/")} == {
        "fields/fallback/demo_product/price/json-ld/greater_than_equal": 1,
        "fields/fallback/demo_product/price/microdata/float_type": 1,
        "fields/fallback/demo_product/image/json-ld/value_error": 1,
        "fields/no_valid/demo_product/image": 1,
    }
    (line,) = caplog.messages  # one per item, none for an item that needed no fallback
    assert line.startswith(f"{URL}: demo_product field(s) refused a source's value: ")
    assert "price taken from dom, refused json-ld: greater_than_equal" in line
    assert "image left empty, refused json-ld: value_error" in line


def test_the_demo_product_reads_each_field_from_its_first_fitting_source() -> None:
    """A page whose JSON-LD price is negative and name damaged: the markup's price and
    name; the rest from JSON-LD; nothing refused on a clean page."""
    ld = (
        '{"@context": "https://schema.org", "@type": "Product", "name": "Kettle \\ud800",'
        ' "sku": "DM-00042", "offers": {"@type": "Offer", "price": -24.5,'
        ' "priceCurrency": "EUR"}}'
    )
    body = (
        f'<html><head><script type="application/ld+json">{ld}</script></head><body>'
        '<h1 class="product-title">Kettle</h1>'
        '<div class="product-price" data-currency="EUR"><span class="price-value">'
        "24,50 \u20ac</span></div></body></html>"
    )
    picked = read_product(page(body))
    assert (picked.fields["name"], picked.fields["price"]) == ("Kettle", 24.5)
    assert picked.sources == {
        "sku": "json-ld",
        "name": "dom",
        "price": "dom",
        "currency": "dom",  # with its amount: the markup's EUR
    }
    assert {(r.field, r.source, r.reason) for r in picked.rejected} == {
        ("name", "json-ld", "replacement_character"),
        ("price", "json-ld", "greater_than_equal"),
    }
    assert picked.fields["url"] == URL
    clean = read_product(page(MICRODATA_BAD_STATE_GOOD.replace(">9<", ">4<")))
    assert clean.rejected == () and clean.fields["rating"] == 4.0
    # JSON-LD's lone surrogate was marked (U+FFFD) when read: damaged, not invalid.
    assert structured_nodes(page(body), "json-ld")[0]["name"] == "Kettle \ufffd"
