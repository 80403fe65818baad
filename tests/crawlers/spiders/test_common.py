"""The production spiders' shared helpers: numbers as sites print them, loopback replays."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse

from crawlers.spiders.common import is_loopback, jsonld_nodes, microdata_items, to_float


@pytest.mark.parametrize(
    ("printed", "value"),
    [
        ("3,600,000", 3_600_000.0),
        ("2.700.000 €", 2_700_000.0),
        ("1.234,50", 1234.5),
        ("1,234.50", 1234.5),
        ("Puntuación: 8,3", 8.3),
        ("CA$6,250", 6250.0),
        ("4.5/5", 4.5),
        ("13,187 €/m²", 13_187.0),
        ("€ 1 200", 1200.0),
        ("no number", None),
        (7, 7.0),
    ],
)
def test_numbers_as_sites_print_them(printed: object, value: float | None) -> None:
    assert to_float(printed) == value


def test_loopback_hosts_are_replays() -> None:
    assert is_loopback("http://127.0.0.1:8011") and is_loopback("http://localhost:9")
    assert is_loopback("http://[::1]:80")
    assert not is_loopback("https://www.idealista.com")


def test_structured_data_helpers() -> None:
    body = b"""<html><body>
    <script type="application/ld+json">{"@graph": [{"@type": "Hotel", "name": "A"}]}</script>
    <script type="application/ld+json">{broken</script>
    <div itemscope itemtype="https://schema.org/Product"><span itemprop="name">P</span>
      <div itemprop="review" itemscope itemtype="https://schema.org/Review">
        <span itemprop="name">R1</span></div>
      <div itemprop="review" itemscope itemtype="https://schema.org/Review">
        <span itemprop="name">R2</span></div></div></body></html>"""
    page = HtmlResponse(url="https://example.com/", body=body, encoding="utf-8")
    assert [n.get("name") for n in jsonld_nodes(page)] == [None, "A"]
    (product,) = microdata_items(page, "Product")
    assert product["name"] == ["P"]
    assert [r["name"] for r in product["review"]] == [["R1"], ["R2"]]
