"""Structured data per field: the schema.org properties (JSON-LD, else microdata) that
hold each item field, for the item node of a detail page. A field the page's node
carries is read from it (``data`` rules), the rest from the page itself; a page with a
little structured data (a microdata ``CreativeWork`` with only its text) is never
refused for it. Pure functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crawlers.scaffold.item_types import SCHEMA_TYPES
from crawlers.scaffold.page import Page
from crawlers.spiders.common import has_type
from crawlers.spiders.rules import first_node, node_values

__all__ = ["FIELD_MAPS", "VALUE_MAPS", "data_rules", "main_node", "schema_type"]

# (schema.org path, item field) per item type; the first path a page carries wins.
FIELD_MAPS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "product": (
        ("name", "name"), ("sku", "product_id"), ("productID", "product_id"),
        ("mpn", "product_id"), ("gtin13", "product_id"), ("isbn", "product_id"),
        ("brand.name", "brand"), ("brand", "brand"), ("offers.price", "price"),
        ("offers.lowPrice", "price"), ("offers.priceCurrency", "currency"),
        ("offers.availability", "availability"), ("aggregateRating.ratingValue", "rating"),
        ("aggregateRating.reviewCount", "review_count"),
        ("aggregateRating.ratingCount", "review_count"), ("description", "description"),
        ("image", "images"), ("category", "category"), ("color", "color"),
        ("material", "material"),
    ),
    "job_posting": (
        ("identifier.value", "posting_id"), ("identifier", "posting_id"), ("title", "title"),
        ("hiringOrganization.name", "company"), ("hiringOrganization.sameAs", "company_url"),
        ("hiringOrganization.url", "company_url"), ("employmentType", "employment_type"),
        ("jobLocationType", "remote"), ("jobLocation.address.addressLocality", "city"),
        ("jobLocation.address.addressRegion", "region"),
        ("jobLocation.address.addressCountry", "country"),
        ("baseSalary.currency", "salary_currency"),
        ("baseSalary.value.minValue", "salary_min"), ("baseSalary.value.value", "salary_min"),
        ("baseSalary.value.maxValue", "salary_max"),
        ("baseSalary.value.unitText", "salary_period"), ("datePosted", "date_posted"),
        ("validThrough", "valid_through"), ("description", "description"),
        ("skills", "skills"), ("experienceRequirements", "experience_level"),
        ("occupationalCategory", "category"), ("industry", "category"),
    ),
    "hotel": (
        ("identifier", "hotel_id"), ("name", "name"), ("address.streetAddress", "address"),
        ("address.addressLocality", "city"), ("address.addressCountry", "country"),
        ("starRating.ratingValue", "star_rating"), ("aggregateRating.ratingValue", "review_score"),
        ("aggregateRating.reviewCount", "review_count"), ("makesOffer.price", "price"),
        ("makesOffer.priceCurrency", "currency"), ("description", "description"),
        ("amenityFeature.name", "amenities"), ("image", "images"),
    ),
    "property_listing": (
        ("identifier", "listing_id"), ("name", "title"), ("offers.price", "price"),
        ("price", "price"), ("offers.priceCurrency", "currency"),
        ("priceCurrency", "currency"), ("address.streetAddress", "address"),
        ("address.addressLocality", "city"), ("address.addressRegion", "region"),
        ("address.addressCountry", "country"), ("numberOfRooms", "rooms"),
        ("numberOfBedrooms", "rooms"), ("numberOfBathroomsTotal", "bathrooms"),
        ("floorSize.value", "area_m2"), ("description", "description"), ("image", "images"),
        ("datePosted", "published_at"),
    ),
    "article": (
        ("headline", "title"), ("name", "title"), ("author.name", "author"),
        ("author", "author"), ("datePublished", "published_at"),
        ("dateModified", "updated_at"), ("description", "summary"),
        ("articleBody", "body"), ("articleSection", "category"), ("keywords", "tags"),
        ("image.url", "image"), ("image", "image"),
    ),
    "quote": (("text", "text"), ("author.name", "author"), ("author", "author"),
              ("keywords", "tags"), ("datePublished", "published_at")),
    "customer_review": (
        ("reviewBody", "body"), ("name", "title"), ("author.name", "author"),
        ("author", "author"), ("reviewRating.ratingValue", "rating"),
        ("datePublished", "published_at"),
    ),
}  # fmt: skip
# Fields whose structured value is a code that needs a value map, and the value of a
# page whose node lacks the property.
VALUE_MAPS: Mapping[tuple[str, str], tuple[Mapping[str, Any], Any]] = {
    ("job_posting", "remote"): ({"TELECOMMUTE": True}, False),
}
# An Offer of one of these is a property listing (schema.org's way for rentals and sales).
ACCOMMODATION_TYPES = ("Accommodation", "Apartment", "House", "Room", "SingleFamilyResidence")


def schema_type(pages: Sequence[Page], item_type: str) -> str | None:
    """The schema.org type of the item's node on most of ``pages`` (None: none)."""
    counts: dict[str, int] = {}
    for page in pages:
        for name in SCHEMA_TYPES.get(item_type, ()):
            if any(has_type(node, name) for nodes in page.nodes.values() for node in nodes):
                counts[name] = counts.get(name, 0) + 1
                break
    if not counts:
        return None
    name, n = max(counts.items(), key=lambda kv: kv[1])
    return name if n >= len(pages) / 2 else None


def main_node(page: Page, schema: str) -> dict[str, Any] | None:
    """The page's item node (JSON-LD first, then microdata), as the rules engine reads
    it; a page holding several (a list's cards) has no one item node."""
    for syntax in ("json-ld", "microdata"):
        nodes = [n for n in page.nodes[syntax] if has_type(n, schema)]
        if len(nodes) == 1:
            return nodes[0]
        if nodes:
            return None
    return first_node([], schema)


def data_rules(item_type: str, name: str, node: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ``data`` rules reading ``name`` from ``node`` (those of its paths it carries)."""
    if node is None:
        return []
    out = []
    for path, field in FIELD_MAPS.get(item_type, ()):
        if field != name:
            continue
        values = [v for v in node_values(node, path) if v not in ("", [], {})]
        if values:
            rule: dict[str, Any] = {"data": path}
            if (item_type, name) in VALUE_MAPS:
                table, default = VALUE_MAPS[item_type, name]
                rule |= {"map": dict(table), "default": default}
            out.append(rule)
    return out
