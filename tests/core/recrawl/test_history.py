"""Change history without services: which values changed, each change's kind, the
change documents' writes and the summary text."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from core.items_schema import item_schema
from core.recrawl.history import Change, change_kind, decode, diff, encode, notable_text, values_of
from core.store.changes import change_action, change_doc_id
from crawlers.items import schema_by_type

PRODUCT = ("price", "currency", "availability", "rating", "review_count")


def test_item_types_declare_their_history_fields() -> None:
    assert schema_by_type("demo_product").history == PRODUCT
    assert schema_by_type("hotel").history[0] == "price"
    assert "is_sold" in schema_by_type("marketplace_listing").history


def test_history_names_only_fields_the_type_has() -> None:
    with pytest.raises(TypeError, match="price"):

        @item_schema("history_bad", id_field=None, history=("price",))
        @dataclass
        class Bad:
            url: str


def test_values_leave_out_what_the_page_did_not_give() -> None:
    fields = {"price": 12.5, "currency": "EUR", "availability": None, "name": "x"}
    assert values_of(fields, PRODUCT) == {"price": 12.5, "currency": "EUR"}
    assert encode({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert decode(encode({"price": 4.333333333333333})) == {"price": 4.333333333333333}
    assert decode("") is None and decode(None) is None and decode(b'{"a":1}') == {"a": 1}


def test_diff_gives_exact_old_and_new_values_in_declared_order() -> None:
    old = {"price": 20.0, "currency": "EUR", "availability": "InStock", "rating": 4.2}
    new = {"price": 18.5, "currency": "EUR", "availability": "OutOfStock", "rating": 4.2}
    assert diff(old, new, PRODUCT) == [
        Change("price", 20.0, 18.5, "price_drop"),
        Change("availability", "InStock", "OutOfStock", "out_of_stock"),
    ]


def test_nothing_known_before_and_missing_values_are_no_change() -> None:
    new = {"price": 10.0}
    assert diff(None, new, PRODUCT) == []
    assert diff({"price": 9.0, "rating": 4.0}, {"rating": 4.0}, PRODUCT) == []
    assert diff({"rating": 4.0}, {"price": 9.0, "rating": 4.0}, PRODUCT) == []
    assert diff({"price": 12}, {"price": 12.0}, PRODUCT) == []  # one price


def test_kinds() -> None:
    assert change_kind("price", 10.0, 12.0) == "price_rise"
    assert change_kind("price", 12.0, 10.0) == "price_drop"
    assert change_kind("price", 12.0, 10.0, currency_changed=True) == "price_changed"
    assert change_kind("availability", "OutOfStock", "InStock") == "back_in_stock"
    assert change_kind("availability", "PreOrder", "https://schema.org/InStock") == "back_in_stock"
    assert change_kind("availability", "InStock", "SoldOut") == "out_of_stock"
    assert change_kind("availability", "InStock", "InStoreOnly") == "availability_changed"
    assert change_kind("availability", "InStock", "PreOrder") == "availability_changed"
    assert change_kind("rating", 4.1, 4.3) == "rating_up"
    assert change_kind("review_score", 8.4, 8.1) == "rating_down"
    assert change_kind("review_count", 10, 12) == "review_count_up"
    assert change_kind("subject_review_count", 12, 10) == "review_count_down"
    assert change_kind("is_sold", False, True) == "sold"
    assert change_kind("is_sold", True, False) == "relisted"
    assert change_kind("currency", "EUR", "USD") == "currency_changed"
    assert change_kind("price_per_m2", 3000.0, 3100.0) == "price_per_m2_up"
    # A price and its currency moving together: not a drop in the new currency's terms.
    changes = diff({"price": 100.0, "currency": "EUR"}, {"price": 90.0, "currency": "GBP"}, PRODUCT)
    assert [c.kind for c in changes] == ["price_changed", "currency_changed"]
    # A boolean is not the number 1.
    assert diff({"is_sold": True}, {"is_sold": 1}, ("is_sold",)) != []


def test_change_action_is_an_idempotent_index_of_typed_values() -> None:
    action = change_action(
        site="demo",
        item_type="demo_product",
        key="demo:demo_product:DM-00001",
        job_id="j1",
        seen_ms=1_700_000_000_123,
        field="price",
        old=20.0,
        new=18.5,
        kind="price_drop",
    )
    assert action.index == "changes-demo" and action.item_type == "demo_product"
    assert action.doc_id == "demo:demo_product:DM-00001:j1:price"
    assert action.version == 1_700_000_000_123
    assert action.document == {
        "item_key": "demo:demo_product:DM-00001",
        "site": "demo",
        "item_type": "demo_product",
        "job_id": "j1",
        "time": "2023-11-14T22:13:20.123Z",
        "field": "price",
        "kind": "price_drop",
        "old": "20.0",
        "new": "18.5",
        "old_number": 20.0,
        "new_number": 18.5,
    }
    stock = change_action(
        site="demo",
        item_type="demo_product",
        key="k",
        job_id="j",
        seen_ms=1,
        field="is_sold",
        old=False,
        new=True,
        kind="sold",
    ).document
    assert (stock["old"], stock["new"]) == ("false", "true") and "new_number" not in stock
    assert change_doc_id("x" * 600, "j", "price").startswith("sha256:")


def test_notable_text_names_kinds_in_a_fixed_order_then_removed() -> None:
    counts = {"out_of_stock": 2, "price_drop": 14, "back_in_stock": 3, "weird_kind": 1}
    assert notable_text(counts, removed=5) == (
        "14 price drops, 3 back in stock, 2 out of stock, 1 weird kind, 5 removed"
    )
    assert notable_text({"price_rise": 1, "rating_up": 1}) == "1 price rise, 1 rating up"
    assert notable_text({}, removed=None) == "" and notable_text({}, removed=0) == ""
    assert notable_text({}, removed=2) == "2 removed"
