"""The field map of a scaffolded site's item pages: per item field, its rules in the
profile schema (``FieldRule``), proposed from the sampled detail pages. Pure functions.

A table per item type maps schema.org property paths to item fields; a path is kept only
when the sampled pages' item nodes carry it. A field whose structured value is also the
exact text (or a ``data-*`` / ``src`` attribute) of one visible element on most pages gets
that element's CSS as a fallback; an HTML description is read from the page's paragraphs
first (both crawlers.scaffold.visible); a field the structured data lacks comes from the
key/value table row labelled like it, a missing rating from a star row
(crawlers.scaffold.rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crawlers.scaffold.classify import Page, PageType
from crawlers.scaffold.rows import star_count_css, table_rules
from crawlers.scaffold.visible import css_fallback, paragraph_css, scalar
from crawlers.spiders.rules import first_node, node_values

__all__ = [
    "FIELD_MAPS",
    "VALUE_MAPS",
    "FieldProposal",
    "main_node",
    "path_values",
    "propose_fields",
]

# (schema.org path, item field, value map) per item type; the first path found on most
# pages wins a field.
FIELD_MAPS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "product": (
        ("name", "name"),
        ("sku", "product_id"),
        ("productID", "product_id"),
        ("mpn", "product_id"),
        ("brand.name", "brand"),
        ("brand", "brand"),
        ("offers.price", "price"),
        ("offers.lowPrice", "price"),
        ("offers.priceCurrency", "currency"),
        ("offers.availability", "availability"),
        ("aggregateRating.ratingValue", "rating"),
        ("aggregateRating.reviewCount", "review_count"),
        ("aggregateRating.ratingCount", "review_count"),
        ("description", "description"),
        ("image", "images"),
        ("category", "category"),
        ("color", "color"),
        ("material", "material"),
    ),
    "job_posting": (
        ("identifier.value", "posting_id"),
        ("identifier", "posting_id"),
        ("title", "title"),
        ("hiringOrganization.name", "company"),
        ("hiringOrganization.sameAs", "company_url"),
        ("hiringOrganization.url", "company_url"),
        ("employmentType", "employment_type"),
        ("jobLocationType", "remote"),
        ("jobLocation.address.addressLocality", "city"),
        ("jobLocation.address.addressRegion", "region"),
        ("jobLocation.address.addressCountry", "country"),
        ("baseSalary.currency", "salary_currency"),
        ("baseSalary.value.minValue", "salary_min"),
        ("baseSalary.value.maxValue", "salary_max"),
        ("baseSalary.value.unitText", "salary_period"),
        ("datePosted", "date_posted"),
        ("validThrough", "valid_through"),
        ("description", "description"),
        ("skills", "skills"),
        ("experienceRequirements", "experience_level"),
        ("occupationalCategory", "category"),
        ("industry", "category"),
    ),
    "hotel": (
        ("identifier", "hotel_id"),
        ("name", "name"),
        ("address.streetAddress", "address"),
        ("address.addressLocality", "city"),
        ("address.addressCountry", "country"),
        ("starRating.ratingValue", "star_rating"),
        ("aggregateRating.ratingValue", "review_score"),
        ("aggregateRating.reviewCount", "review_count"),
        ("makesOffer.price", "price"),
        ("makesOffer.priceCurrency", "currency"),
        ("description", "description"),
        ("amenityFeature.name", "amenities"),
        ("image", "images"),
    ),
    "property_listing": (
        ("identifier", "listing_id"),
        ("name", "title"),
        ("offers.price", "price"),
        ("price", "price"),
        ("offers.priceCurrency", "currency"),
        ("priceCurrency", "currency"),
        ("address.streetAddress", "address"),
        ("address.addressLocality", "city"),
        ("address.addressRegion", "region"),
        ("address.addressCountry", "country"),
        ("numberOfRooms", "rooms"),
        ("numberOfBathroomsTotal", "bathrooms"),
        ("description", "description"),
        ("image", "images"),
        ("datePosted", "published_at"),
    ),
}
# Fields whose structured value is a code that needs a value map, not a copy: the map, and
# the value of a page whose item node lacks the property.
VALUE_MAPS: Mapping[tuple[str, str], tuple[Mapping[str, Any], Any]] = {
    ("job_posting", "remote"): ({"TELECOMMUTE": True}, False),
}
# Item fields the platform sets, never a page rule.
_NOT_RULED = frozenset({"url", "job_id", "incomplete"})


@dataclass
class FieldProposal:
    """The rules proposed for one item field, in the order the engine tries them."""

    name: str
    found: int  # detail pages where the main source has a value
    path: str | None = None  # structured data
    value_map: Mapping[str, Any] = field(default_factory=dict)
    default: Any = None
    css: str | None = None
    attr: str | None = None
    paragraphs: bool = False  # the CSS reads every paragraph (all = true), before the data
    count: bool = False  # the CSS's matches are counted (filled stars)
    table: str | None = None
    label: str | None = None
    # Pages without structured data (crawlers.scaffold.plain): every match (a list, a
    # gallery), an XPath (a card's own attribute), the text inside printed affixes.
    all: bool = False
    xpath: str | None = None
    regex: str | None = None

    def rules(self) -> list[dict[str, Any]]:
        data: dict[str, Any] | None = None
        if self.path:
            data = {"data": self.path}
            if self.value_map:
                data["map"] = dict(self.value_map)
            if self.default is not None:
                data["default"] = self.default
        css: dict[str, Any] | None = None
        if self.css:
            css = {"css": self.css}
            if self.attr:
                css["attr"] = self.attr
            if self.paragraphs or self.all:
                css["all"] = True
            if self.count:
                css["count"] = True
            if self.regex:
                css["re"] = self.regex
        if self.xpath:
            css = {"xpath": self.xpath}
        ordered = [css, data] if self.paragraphs else [data, css]
        if self.table:
            ordered.append({"table": self.table, "label": self.label})
        return [rule for rule in ordered if rule]

    @property
    def how(self) -> str:
        """The rules in a few words, for the report."""
        parts = []
        for rule in self.rules():
            if "data" in rule:
                parts.append(rule["data"] + (" (mapped)" if "map" in rule else ""))
            elif "table" in rule:
                parts.append(f"table {rule['table']} {rule['label']!r}")
            elif "xpath" in rule:
                parts.append(f"xpath {rule['xpath']}")
            else:
                shaped = " (all)" if rule.get("all") else " (count)" if rule.get("count") else ""
                parts.append(f"css {rule['css']}{shaped}")
        return " | ".join(parts)


def path_values(node: Any, path: str) -> list[Any]:
    """Every non-empty value at a dotted path of a structured-data node, as a ``data``
    rule reads it."""
    return [v for v in node_values(node, path) if v not in ("", [], {})]


def main_node(page: Page, schema_type: str) -> dict[str, Any] | None:
    """The page's item node (JSON-LD first, then microdata), as the rules engine reads it."""
    return first_node([*page.nodes["json-ld"], *page.nodes["microdata"]], schema_type)


def propose_fields(
    item_type: str, detail: PageType, item_fields: Sequence[str] = ()
) -> dict[str, FieldProposal]:
    """Item field -> its rules: the structured path most detail pages carry (with a value
    map where the item needs one), a CSS fallback where a visible element shows the same
    value (for an HTML description: its paragraphs, read first), and, for fields the
    structured data lacks, the row of a key/value table labelled with the field's name.
    ``item_fields``: the item type's fields (others are not proposed); empty: no check."""
    nodes = [
        (page, node)
        for page in detail.pages
        if (node := main_node(page, detail.schema_type or "")) is not None
    ]
    proposals: dict[str, FieldProposal] = {}
    for path, name in FIELD_MAPS.get(item_type, ()):
        if item_fields and name not in item_fields:
            continue
        found = sum(1 for _, node in nodes if scalar(path_values(node, path)) is not None)
        if not found or (name in proposals and proposals[name].found >= found):
            continue
        proposal = FieldProposal(name, found, path)
        if (item_type, name) in VALUE_MAPS:
            proposal.value_map, proposal.default = VALUE_MAPS[item_type, name]
        proposals[name] = proposal
    for proposal in proposals.values():
        if proposal.value_map or proposal.path is None:
            continue
        samples = [(page, path_values(node, proposal.path)) for page, node in nodes]
        if paragraphs := paragraph_css(samples):
            proposal.css, proposal.paragraphs = paragraphs, True
        elif found := css_fallback(samples):
            proposal.css, proposal.attr = found
    missing = [name for name in item_fields if name not in proposals and name not in _NOT_RULED]
    for name, (table, label, found) in table_rules(detail.pages, missing).items():
        proposals[name] = FieldProposal(name, found, table=table, label=label)
    rated = [name for name in missing if "rating" in name or "star" in name]
    if rated and rated[0] not in proposals and (stars := star_count_css(detail.pages)):
        # One star row per page: it is the first of the missing ratings', no other's.
        css, found = stars
        proposals[rated[0]] = FieldProposal(rated[0], found, css=css, count=True)
    return proposals
