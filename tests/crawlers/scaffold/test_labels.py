"""Labels naming fields in six languages, and labelled values in their idioms."""

from __future__ import annotations

import pytest

from crawlers.scaffold.fields import compose
from crawlers.scaffold.labels import field_for, label_maps, labelled
from crawlers.scaffold.synth import read
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading
from tests.crawlers.scaffold.support import unit

EN = Reading(("en",), market(language="en"))


@pytest.mark.parametrize(
    ("label", "field"),
    [
        ("Price (excl. tax)", "price"),
        ("Number of reviews", "review_count"),
        ("UPC", "@id"),
        ("Codice:", "@id"),
        ("Salary range", "salary"),
        ("Job type", "employment_type"),
        ("Closing date", "valid_through"),
        ("Habitaciones", "rooms"),
        ("Superficie", "area_m2"),
        ("Marke", "brand"),
        ("Disponibilità", "availability"),
        ("Marketed by", "agency"),
        ("Veröffentlicht am", "published_at"),
        ("Warranty", None),
        ("A long sentence that is not a label at all, surely", None),
    ],
)
def test_labels_name_fields(label: str, field: str | None) -> None:
    wanted = ["price", "review_count", "@id", "salary", "employment_type", "valid_through",
              "rooms", "area_m2", "brand", "availability", "agency", "published_at"]  # fmt: skip
    assert field_for(label, wanted) == field


IDIOMS = [
    "<dl class='facts'><dt>Brand</dt><dd>Acme</dd></dl>",
    "<table><tr><th>Brand</th><td>Acme</td></tr></table>",
    "<table class='f'><tr><td>Brand</td><td>Acme</td></tr></table>",
    "<p><strong>Brand:</strong> Acme</p>",
    "<div>Made in 2020<br>Brand: Acme<br>Colour: Red</div>",
    "<div><p>Brand</p><h3>Acme</h3></div>",
]


@pytest.mark.parametrize("markup", IDIOMS)
def test_labelled_values_in_their_idioms(markup: str) -> None:
    u = unit(f"<body><main><h1>Lamp</h1>{markup}</main></body>")
    found = [pair for pair in labelled(u.root, True) if field_for(pair.label, ["brand"])]
    assert found, markup
    pair = found[0]
    assert read(u, "product", "brand", pair.exact, EN) == "Acme"
    assert any(read(u, "product", "brand", rule, EN) == "Acme" for rule in pair.rules)


def test_a_labels_rule_and_the_fields_shaping_make_one_expression() -> None:
    u = unit("<body><div>Availability: In stock (22 available)</div></body>")
    (pair,) = [p for p in labelled(u.root, True) if field_for(p.label, ["availability"])]
    table = label_maps(("en",))["availability"]
    alternation = "|".join(sorted(table, key=len, reverse=True))
    shaping = {"re": rf"(?i)^\W*({alternation})(?!\w)", "map": dict(table)}
    rule = compose(pair.rules[0], shaping)
    assert rule["re"].startswith("(?i)^\\s*Availability:\\s*")
    assert read(u, "product", "availability", rule, EN) == "InStock"


def test_maps_hold_english_and_the_sites_language() -> None:
    italian = label_maps(("it",))["availability"]
    assert italian["esaurito"] == "OutOfStock" and italian["in stock"] == "InStock"
    assert "ausverkauft" not in italian
