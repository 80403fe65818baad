"""The production spiders' shared helpers: numbers as sites print them, loopback replays."""

from __future__ import annotations

import logging

import pytest
from scrapy.http import HtmlResponse

from crawlers.spiders.common import (
    Money,
    coordinate,
    has_type,
    is_loopback,
    money,
    structured_nodes,
    to_float,
)


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


@pytest.mark.parametrize(
    ("printed", "currency", "value"),
    [
        ("€3,600,000", None, Money(3_600_000.0, "EUR")),
        ("1.234,56 €", None, Money(1234.56, "EUR")),
        ("CA$6,250", None, Money(6250.0, "CAD")),
        ("MX$\u00a01,450", None, Money(1450.0, "MXN")),
        ("BDT\u00a02,746", None, Money(2746.0, "BDT")),
        ("¥12,000", "JPY", Money(12_000.0, "JPY")),  # the data's currency wins
        ("$120", None, Money(120.0, None)),  # "$" alone names several currencies
        ("12.50", "EUR", Money(12.5, "EUR")),
        (None, None, Money(None, None)),
    ],
)
def test_prices_and_their_currency(printed: str | None, currency: str | None, value: Money) -> None:
    assert money(printed, currency) == value


def test_coordinates_keep_their_sign_and_decimals() -> None:
    assert coordinate("-3.6851") == -3.6851
    assert coordinate("40.416") == 40.416  # not thousands, as a printed price would be
    assert coordinate(-97.9227) == -97.9227
    assert coordinate("hidden") is None and coordinate("nan") is None


def test_loopback_hosts_are_replays() -> None:
    assert is_loopback("http://127.0.0.1:8011") and is_loopback("http://localhost:9")
    assert is_loopback("http://[::1]:80")
    assert not is_loopback("https://www.idealista.com")


def test_structured_data_helpers(caplog: pytest.LogCaptureFixture) -> None:
    body = b"""<html><body>
    <script type="application/ld+json">{"@graph": [{"@type": "Hotel", "name": "A"}]}</script>
    <script type="application/ld+json">{broken</script>
    <script type="application/ld+json"><!--
    {"@type": "Offer", "price": "3"}
    --></script>
    <div itemscope itemtype="https://schema.org/Product"><span itemprop="name">P</span>
      <div itemprop="review" itemscope itemtype="https://schema.org/Review">
        <span itemprop="name">R1</span></div>
      <div itemprop="review" itemscope itemtype="https://schema.org/Review">
        <span itemprop="name">R2</span></div></div></body></html>"""
    page = HtmlResponse(url="https://example.com/", body=body, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="crawlers.spiders.common"):
        nodes = structured_nodes(page, "json-ld")
    # A broken block is skipped, logged with the page's URL; the blocks around it are read.
    assert [n.get("name") for n in nodes] == [None, "A", None]
    assert nodes[-1] == {"@type": "Offer", "price": "3"}
    (record,) = caplog.records
    assert "https://example.com/" in record.getMessage() and "skipped 1" in record.getMessage()

    items = structured_nodes(page, "microdata")
    (product,) = [item for item in items if has_type(item, "Product")]
    assert product["name"] == "P"
    assert [r["name"] for r in product["review"]] == ["R1", "R2"]
    # Nested items are listed too, after the item that holds them.
    assert [item["name"] for item in items if has_type(item, "Review")] == ["R1", "R2"]
