"""Item schemas: validation reasons, keys, content hashes, and mappings a real node accepts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from core.items_schema import (
    FieldError,
    Text,
    UnknownItemType,
    content_hash,
    item_schema,
    plain_fields,
    registered_types,
    schema_by_type,
    schema_for,
)
from crawlers.items import (
    DemoProduct,
    GeoPoint,
    Hotel,
    MarketplaceListing,
    Product,
    PropertyListing,
    Review,
    ReviewSubject,
)
from standins.demo_site.catalog import build_catalog

BASE = "http://shop.example"


@pytest.fixture(scope="module")
def catalog_products() -> list[DemoProduct]:
    return [DemoProduct(**p.to_dict(BASE)) for p in build_catalog(n_products=60).products]


def reasons(item: object) -> set[tuple[str, str]]:
    return {(e.field, e.reason) for e in schema_for(item).validate(item).errors}


def test_every_demo_catalog_product_is_valid(catalog_products: list[DemoProduct]) -> None:
    for product in catalog_products:
        result = schema_for(product).validate(product)
        assert result.ok, (product.sku, result.errors)
        assert result.item == product


def test_missing_required_and_wrong_types_are_reported_per_field() -> None:
    product = DemoProduct(
        sku="DM-1",
        url="ftp://shop.example/p",
        name="  ",
        price="12.50",  # type: ignore[arg-type]  # a spider bug: not coerced
        currency="eur",
        rating=7.0,
        review_count=True,  # type: ignore[arg-type]
        reviews=[{"author": "A", "rating": 9, "title": "t", "body": "b", "date": "yesterday"}],  # type: ignore[list-item]
    )
    assert reasons(product) == {
        ("name", "missing"),
        ("url", "value_error"),
        ("price", "float_type"),
        ("currency", "string_pattern_mismatch"),
        ("rating", "less_than_equal"),
        ("review_count", "int_type"),
        ("reviews.rating", "less_than_equal"),
        ("reviews.date", "value_error"),
    }


def test_none_in_a_required_field_is_missing_not_a_type_error() -> None:
    product = DemoProduct(sku="DM-1", url=BASE + "/p", name="N", price=None, currency=None)
    assert reasons(product) == {("price", "missing"), ("currency", "missing")}


def test_an_item_without_id_and_url_cannot_be_keyed() -> None:
    product = Product(url=None, name="Bag")  # type: ignore[arg-type]
    assert ("url", "missing") in reasons(product)


def test_every_vertical_validates_a_complete_item_and_rejects_a_broken_one() -> None:
    good = [
        Product(url=BASE + "/bag", product_id="H1", name="Bag", price=10.0, currency="EUR"),
        PropertyListing(
            url=BASE + "/l/1",
            listing_id="1",
            operation="rent",
            price=950.0,
            currency="EUR",
            area_m2=55.5,
            location=GeoPoint(40.4, -3.7),
            published_at="2026-02-01",
        ),
        Review(
            url=BASE + "/r/1",
            review_id="r1",
            subject=ReviewSubject(kind="business", name="Shop", subject_id="shop.example"),
            rating=4.0,
            rating_scale=5.0,
            body="Fine.",
            published_at="2025-05-01T10:00:00Z",
            language="en",
        ),
        Hotel(url=BASE + "/h/1", hotel_id="h1", name="Inn", review_score=8.7, country="DE"),
        MarketplaceListing(url=BASE + "/m/1", listing_id="m1", title="Bike", price=80.0),
    ]
    for item in good:
        assert schema_for(item).validate(item).ok, item
    assert reasons(PropertyListing(url=BASE, price=1.0, currency="EUR", operation="swap")) == {  # type: ignore[arg-type]
        ("operation", "literal_error")
    }
    assert reasons(Review(url=BASE, subject=None, rating=11.0)) == {
        ("subject", "missing"),
        ("rating", "less_than_equal"),
    }
    assert ("subject.kind", "literal_error") in reasons(
        Review(url=BASE, subject=ReviewSubject(kind="shop", name="x"), rating=1.0)  # type: ignore[arg-type]
    )
    assert ("location.lat", "less_than_equal") in reasons(
        Hotel(url=BASE, name="Inn", location=GeoPoint(91.0, 0.0))
    )


def test_normalised_item_hashes_like_the_float_it_means() -> None:
    as_int = DemoProduct(sku="DM-1", url=BASE + "/p", name="N", price=10, currency="EUR")  # type: ignore[arg-type]
    as_float = DemoProduct(sku="DM-1", url=BASE + "/p", name="N", price=10.0, currency="EUR")
    schema = schema_for(as_int)
    normalised = schema.validate(as_int).item
    assert isinstance(normalised.price, float)
    assert schema.content_hash(plain_fields(normalised)) == schema.content_hash(
        plain_fields(as_float)
    )


def test_keys_use_the_site_id_else_the_canonical_url() -> None:
    schema = schema_by_type("product")
    assert schema.key("hermes", {"product_id": " H0123 ", "url": BASE}) == "hermes:product:H0123"
    by_url = schema.key("hermes", {"product_id": None, "url": "HTTP://Shop.Example/p?b=2&a=1#x"})
    assert by_url == "hermes:product:url:http://shop.example/p?a=1&b=2"


def test_content_hash_ignores_job_id_volatile_fields_and_key_order() -> None:
    schema = schema_by_type("review")
    base = {"url": BASE, "rating": 4.0, "body": "ok", "job_id": "j1", "helpful_count": 3}
    same = {"helpful_count": 90, "job_id": "j2", "body": "ok", "rating": 4.0, "url": BASE}
    assert schema.content_hash(base) == schema.content_hash(same)
    assert schema.content_hash(base) != schema.content_hash({**base, "rating": 3.0})
    assert content_hash({"a": [1, {"b": "é"}]}) == content_hash({"a": [1, {"b": "é"}]})


def test_plain_fields_turns_nested_dataclasses_into_dicts() -> None:
    review = Review(url=BASE, subject=ReviewSubject(kind="product", name="CRM"), rating=4.5)
    fields = plain_fields(review)
    assert fields["subject"] == {
        "kind": "product",
        "name": "CRM",
        "subject_id": None,
        "url": None,
        "category": None,
    }
    assert fields["rating"] == 4.5


def test_unknown_items_and_bad_declarations_are_refused() -> None:
    with pytest.raises(UnknownItemType):
        schema_for({"url": BASE})

    @dataclasses.dataclass
    class Clash:
        url: str
        first_seen: str | None = None

    with pytest.raises(TypeError, match="reserved"):
        item_schema("clash", id_field=None)(Clash)

    @dataclasses.dataclass
    class Typo:
        url: Text

    with pytest.raises(TypeError, match="unknown fields"):
        item_schema("typo", id_field="sku")(Typo)


def test_mappings_use_text_keyword_dates_numbers_and_nested() -> None:
    demo = schema_by_type("demo_product").es_properties
    assert demo["name"]["type"] == "text" and demo["name"]["fields"]["keyword"]
    assert demo["sku"]["type"] == "keyword"
    assert demo["price"] == {"type": "double"}
    assert demo["review_count"] == {"type": "long"}
    assert demo["reviews"]["type"] == "nested"
    assert demo["reviews"]["properties"]["date"]["type"] == "date"
    review = schema_by_type("review").es_properties
    assert review["subject"]["type"] == "object"
    assert review["verified"] == {"type": "boolean"}
    assert schema_by_type("hotel").es_properties["location"] == {"type": "geo_point"}
    assert schema_by_type("product").es_properties["attributes"] == {"type": "flattened"}


@pytest.fixture
def scratch_index(es: Elasticsearch) -> Iterator[str]:
    name = "schema-mapping-check"
    yield name
    es.indices.delete(index=name, ignore_unavailable=True)


def test_every_declared_mapping_is_accepted_by_the_node(
    es: Elasticsearch, scratch_index: str
) -> None:
    """Only analyzers and field types this node has (no analysis-common, no x-pack)."""
    assert set(registered_types()) >= {
        "demo_product",
        "product",
        "property_listing",
        "review",
        "hotel",
        "marketplace_listing",
    }
    for schema in registered_types().values():
        es.indices.create(
            index=scratch_index,
            mappings={"dynamic": "strict", "properties": schema.es_properties},
            settings={"number_of_replicas": 0},
        )
        es.indices.delete(index=scratch_index)


def test_field_error_reads_well() -> None:
    assert str(FieldError("price", "float_type", "Input should be a valid number")) == (
        "price: float_type (Input should be a valid number)"
    )


def test_one_field_is_judged_alone_as_the_item_judges_it() -> None:
    schema = schema_for(DemoProduct)
    assert schema.field_error("price", 9.99) is None
    assert schema.field_error("price", 9) is None  # an int fits a float field, as in validate
    assert schema.field_error("name", None) is None  # absent is not invalid
    assert schema.field_error("name", "  ") is None
    refused = {
        ("price", -1.0): "greater_than_equal",
        ("price", "9.99"): "float_type",
        ("currency", "eur"): "string_pattern_mismatch",
        ("image", "javascript:alert(1)"): "value_error",
        ("rating", 9.0): "less_than_equal",
    }
    for (name, value), reason in refused.items():
        error = schema.field_error(name, value)
        assert error is not None and (error.field, error.reason) == (name, reason)
        # The same reason the whole item's validation gives.
        item = DemoProduct(sku="S", url="https://x.test/p", name="n", price=1.0, currency="EUR")
        item = dataclasses.replace(item, **{name: value})
        assert [(e.field, e.reason) for e in schema.validate(item).errors] == [(name, reason)]
    review = {"author": "a", "rating": 9, "title": "t", "body": "b", "date": "2024-01-01"}
    nested = schema.field_error("reviews", [review])
    assert nested is not None and (nested.field, nested.reason) == (
        "reviews.rating",
        "less_than_equal",
    )
