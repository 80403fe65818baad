"""The item type by evidence, and the declared types' vocabulary."""

from __future__ import annotations

import pytest

from crawlers.items import ITEM_CLASSES, schema_for
from crawlers.scaffold.item_types import DECLARED, Evidence, decide, declared_fields


def evidence(*clues: set[str], schema: tuple[str, ...] = ()) -> Evidence:
    found = Evidence()
    for unit in clues:
        found.add(unit, list(schema))
    return found


@pytest.mark.parametrize(
    ("clues", "cards", "expected"),
    [
        ({"name", "price", "label:@id"}, False, "product"),
        ({"name", "label:salary", "label:employment_type", "label:city"}, False, "job_posting"),
        ({"name", "price", "label:rooms", "label:area_m2"}, False, "property_listing"),
        ({"name", "author", "date", "body"}, False, "article"),
        ({"name"}, False, "item"),
        ({"text", "author"}, True, "quote"),
        ({"text", "rating", "author"}, True, "customer_review"),
        ({"name", "price"}, True, "product"),
    ],
)
def test_evidence_decides(clues: set[str], cards: bool, expected: str) -> None:
    item_type, why = decide(evidence(clues, clues, {"name"}), cards)
    assert item_type == expected and why


def test_structured_data_on_most_units_decides_first() -> None:
    found = evidence({"name"}, {"name"}, schema=("JobPosting",))
    assert decide(found, False)[0] == "job_posting"
    assert decide(found, False, "product") == ("product", "--item-type")


def test_declared_types_name_fields_as_the_platform_does() -> None:
    assert set(DECLARED) == {"article", "quote", "customer_review", "item"}
    assert not set(DECLARED) & {schema_for(cls).item_type for cls in ITEM_CLASSES}
    article = declared_fields("article")
    assert {"title", "author", "published_at", "body"} <= set(article)
    assert article["title"]["required"] and article["body"]["required"]
    assert declared_fields("quote")["text"]["key_fallback"]
