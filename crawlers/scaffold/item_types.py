"""Which item type a site's items are, by evidence, and the types the scaffold declares
when none of crawlers/items.py fits (``item_types.toml``: article, quote,
customer_review, and ``item`` last).

Evidence, per unit (a detail page, or a card of a list): the structured data's types; a
price printed by the name; labels naming a type's fields (Salary, Job type, Bedrooms,
Floor area, SKU, Availability); a byline, a date and a long body; a rating and a text on
a card. A type needs its own evidence on most units: two job labels make a job posting,
a name and a price a product, an author or a date with a long body an article; a card
with a rating and a text is a review, one with a text and an author a quote."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlers.declared_items import declare_item_type
from crawlers.items import registered_types
from crawlers.profile_schema import ItemField

__all__ = [
    "DECLARED",
    "Evidence",
    "decide",
    "declared_fields",
    "register_declared",
]

# schema.org types -> the platform's item type.
SCHEMA_TYPES: Mapping[str, tuple[str, ...]] = {
    "product": ("Product", "ProductModel", "IndividualProduct", "Book", "Vehicle", "Course"),
    "job_posting": ("JobPosting",),
    "hotel": ("Hotel", "LodgingBusiness", "Hostel", "Motel", "Resort", "BedAndBreakfast"),
    "property_listing": ("RealEstateListing", "Apartment", "House", "SingleFamilyResidence"),
    "article": ("Article", "NewsArticle", "BlogPosting", "Report", "TechArticle", "Recipe"),
    "customer_review": ("Review",),
    "quote": ("Quotation",),
}
JOB_FIELDS = {"salary", "employment_type", "company", "valid_through", "experience_level",
              "date_posted", "remote"}  # fmt: skip
PROPERTY_FIELDS = {"rooms", "bathrooms", "area_m2", "property_type", "price_per_m2", "floor"}
PRODUCT_FIELDS = {"@id", "brand", "availability", "color", "material", "review_count"}
MOST = 0.5  # share of units a piece of evidence must be on


@functools.cache
def _vocabulary() -> dict[str, dict[str, dict[str, Any]]]:
    return tomllib.loads(Path(__file__).with_name("item_types.toml").read_text(encoding="utf-8"))


DECLARED = tuple(_vocabulary())


def declared_fields(item_type: str) -> dict[str, dict[str, Any]]:
    """The declared type's fields as ``item_types.toml`` has them."""
    return {name: dict(spec) for name, spec in _vocabulary()[item_type].items()}


def register_declared(item_type: str, fields: Mapping[str, Mapping[str, Any]]) -> None:
    """Make a declared type (with ``fields``, as [item_fields] writes them) known to this
    process, so the rules engine reads its fields while the scaffold measures them."""
    declare_item_type(item_type, {name: ItemField(**spec) for name, spec in fields.items()})


def full_declaration(item_type: str) -> dict[str, dict[str, Any]]:
    """Every field of a declared type, as [item_fields] entries (no key chosen yet)."""
    out = {}
    for name, spec in declared_fields(item_type).items():
        out[name] = {k: v for k, v in spec.items() if k not in ("key", "key_fallback")}
    return out


@dataclass
class Evidence:
    """What the units show, counted: ``units`` seen, and per clue the units showing it."""

    units: int = 0
    schema: dict[str, int] = field(default_factory=dict)  # platform type -> units
    clues: dict[str, int] = field(default_factory=dict)  # "price", "author", "label:<field>"

    def add(self, clues: set[str], schema_types: Sequence[str]) -> None:
        self.units += 1
        for clue in clues:
            self.clues[clue] = self.clues.get(clue, 0) + 1
        found = {t for t, names in SCHEMA_TYPES.items() if set(names) & set(schema_types)}
        for item_type in found:
            self.schema[item_type] = self.schema.get(item_type, 0) + 1

    def share(self, clue: str) -> float:
        return self.clues.get(clue, 0) / self.units if self.units else 0.0

    def labels(self, fields: set[str]) -> int:
        return sum(self.share(f"label:{name}") >= MOST for name in fields)


def decide(evidence: Evidence, cards: bool, wanted: str | None = None) -> tuple[str, str]:
    """(item type, why). ``cards``: the units are cards of a list, not pages."""
    if wanted:
        return wanted, "--item-type"
    if evidence.schema:
        item_type, n = max(evidence.schema.items(), key=lambda kv: kv[1])
        if n >= MOST * evidence.units and (
            item_type in registered_types() or item_type in DECLARED
        ):
            return item_type, f"structured data on {n}/{evidence.units}"
    share = evidence.share
    if cards:
        if share("rating") >= MOST and share("text") >= MOST:
            return "customer_review", "cards with a rating and a text"
        if share("text") >= MOST and share("author") >= MOST:
            return "quote", "cards with a text and its author"
        if share("price") >= MOST and share("name") >= MOST:
            return "product", "cards with a name and a price"
        return "item", "cards of no known kind"
    jobs, homes = evidence.labels(JOB_FIELDS), evidence.labels(PROPERTY_FIELDS)
    if jobs >= 2 and jobs >= homes:
        return "job_posting", f"{jobs} job facts labelled"
    if homes >= 2:
        return "property_listing", f"{homes} property facts labelled"
    if share("price") >= MOST and share("name") >= MOST:
        return "product", "a name and a price"
    if share("body") >= MOST and (share("author") >= MOST or share("date") >= MOST):
        return "article", "a byline or date over a long text"
    return "item", "no known kind"
