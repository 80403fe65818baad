"""Item schemas the spiders yield: one dataclass per vertical.

Fields a page may fail to provide are optional, so a partial item still reaches the
pipelines (which decide what is good enough) instead of vanishing inside a spider.

An item whose parts (reviews API, the detail page behind a listing card) could not be
fetched is still yielded, with ``incomplete`` naming them: stored, counted and shown in
the job's report, never passed off as complete.

Each class is declared once and that declaration is its schema (``core.items_schema``):
annotations give the validated types and the Elasticsearch mapping, ``@item_schema``
gives the item type name, the field holding the site's own id (else the canonical URL
keys the item), the fields an item is invalid without, volatile fields that are
stored but do not count as a content change, and the history fields whose old and new
values a change records in ``changes-<site>`` (``core.recrawl.history``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypedDict

from core import items_schema
from core.items_schema import (
    Count,
    CountryCode,
    Currency,
    GeoPoint,
    IsoDate,
    ItemSchema,
    Keyword,
    LanguageCode,
    LongText,
    Money,
    Text,
    Url,
    item_schema,
)

__all__ = [
    "DemoProduct",
    "DemoReview",
    "GeoPoint",
    "Hotel",
    "JobPosting",
    "MarketplaceListing",
    "Product",
    "PropertyListing",
    "Review",
    "ReviewSubject",
]

FiveStars = Annotated[float, Field(ge=0, le=5)]
TenPoints = Annotated[float, Field(ge=0, le=10)]


class DemoReview(TypedDict):
    """A review as the demo shop's API returns it (plain dicts in ``DemoProduct.reviews``)."""

    author: Text
    rating: Annotated[int, Field(ge=1, le=5)]
    title: Text
    body: LongText
    date: IsoDate


@item_schema(
    "demo_product",
    id_field="sku",
    required=("url", "name", "price", "currency"),
    history=("price", "currency", "availability", "rating", "review_count"),
)
@dataclass
class DemoProduct:
    """A product of the demo store (``standins.demo_site``), reviews included."""

    sku: Keyword
    url: Url
    name: Text | None = None
    brand: Text | None = None
    category: Text | None = None  # display name, e.g. "Kitchen & Dining"
    category_slug: Keyword | None = None  # e.g. "kitchen"
    price: Money | None = None
    currency: Currency | None = None  # ISO 4217, e.g. "EUR"
    availability: Keyword | None = None  # schema.org name: InStock, OutOfStock, PreOrder
    rating: FiveStars | None = None
    review_count: Count | None = None
    description: LongText | None = None
    image: Url | None = None  # absolute URL
    # Each: {"author", "rating", "title", "body", "date"}; None when they could not be
    # fetched (as opposed to [] for a product without reviews).
    reviews: list[DemoReview] | None = None
    job_id: Keyword | None = None  # set by JobTagMiddleware
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


@item_schema(
    "product",
    id_field="product_id",
    required=("url", "name"),
    history=("price", "currency", "availability", "rating", "review_count"),
)
@dataclass
class Product:
    """A shop's product page (e.g. hermes): the site's product reference keys it."""

    url: Url
    product_id: Keyword | None = None  # the site's reference/SKU
    name: Text | None = None
    brand: Text | None = None
    category: Text | None = None
    breadcrumbs: list[Text] | None = None
    price: Money | None = None
    currency: Currency | None = None
    availability: Keyword | None = None  # schema.org name
    color: Text | None = None
    material: Text | None = None
    variants: list[Text] | None = None  # the choices it is sold in: sizes, colours, sets
    description: LongText | None = None
    images: list[Url] | None = None
    rating: FiveStars | None = None
    review_count: Count | None = None
    attributes: dict[str, Any] | None = None  # anything else the page lists (flattened)
    job_id: Keyword | None = None
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


@item_schema(
    "property_listing",
    id_field="listing_id",
    required=("url", "price", "currency"),
    history=("price", "currency", "price_per_m2"),
)
@dataclass
class PropertyListing:
    """A real-estate listing (e.g. idealista): sale or rent, with its place and features."""

    url: Url
    listing_id: Keyword | None = None
    title: Text | None = None
    operation: Literal["sale", "rent"] | None = None
    property_type: Keyword | None = None  # flat, house, room, office, garage, land, ...
    price: Money | None = None
    currency: Currency | None = None
    price_per_m2: Money | None = None
    area_m2: Annotated[float, Field(gt=0)] | None = None
    rooms: Count | None = None
    bathrooms: Count | None = None
    floor: Keyword | None = None  # as the site says it: "3", "ground", "bajo"
    address: Text | None = None
    neighbourhood: Text | None = None
    city: Text | None = None
    region: Text | None = None
    country: CountryCode | None = None
    location: GeoPoint | None = None
    description: LongText | None = None
    features: list[Keyword] | None = None  # e.g. "lift", "terrace", "air_conditioning"
    images: list[Url] | None = None
    agency: Text | None = None
    published_at: IsoDate | None = None
    updated_at: IsoDate | None = None
    job_id: Keyword | None = None
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


@dataclass
class ReviewSubject:
    """What a review is about: a business (trustpilot) or a product (g2)."""

    kind: Literal["business", "product"]
    name: Text
    subject_id: Keyword | None = None  # the site's id or slug, e.g. "example.com"
    url: Url | None = None
    category: Text | None = None


@item_schema(
    "review",
    id_field="review_id",
    required=("url", "subject", "rating"),
    # Votes and the subject's aggregate move daily without the review changing.
    volatile=("helpful_count", "subject_rating", "subject_review_count"),
    # The subject's aggregate: recorded when the review itself changes (a change of
    # volatile fields alone is no change of the review).
    history=("rating", "subject_rating", "subject_review_count"),
)
@dataclass
class Review:
    """One review, with the business or product it reviews (``subject``)."""

    url: Url
    review_id: Keyword | None = None
    subject: ReviewSubject | None = None
    author: Text | None = None
    author_country: CountryCode | None = None
    rating: TenPoints | None = None
    rating_scale: Annotated[float, Field(gt=0, le=10)] | None = None  # 5 or 10
    title: Text | None = None
    body: LongText | None = None
    pros: LongText | None = None  # g2's "what do you like best"
    cons: LongText | None = None
    language: LanguageCode | None = None
    published_at: IsoDate | None = None
    experienced_at: IsoDate | None = None
    verified: bool | None = None
    reply: LongText | None = None  # the business's answer
    helpful_count: Count | None = None
    # The subject's aggregate on the page (trustpilot's TrustScore, g2's star rating), on
    # the review's scale; kept per review so a search hit carries it.
    subject_rating: TenPoints | None = None
    subject_review_count: Count | None = None
    job_id: Keyword | None = None
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


@item_schema(
    "hotel",
    id_field="hotel_id",
    required=("url", "name"),
    history=("price", "currency", "review_score", "review_count", "star_rating"),
)
@dataclass
class Hotel:
    """A hotel page (e.g. booking.com); price is for ``checkin``..``checkout`` when given."""

    url: Url
    hotel_id: Keyword | None = None
    name: Text | None = None
    property_type: Keyword | None = None  # hotel, apartment, hostel, ...
    address: Text | None = None
    city: Text | None = None
    country: CountryCode | None = None
    location: GeoPoint | None = None
    star_rating: FiveStars | None = None
    review_score: TenPoints | None = None
    review_count: Count | None = None
    price: Money | None = None
    currency: Currency | None = None
    checkin: IsoDate | None = None
    checkout: IsoDate | None = None
    description: LongText | None = None
    amenities: list[Keyword] | None = None
    images: list[Url] | None = None
    job_id: Keyword | None = None
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


@item_schema(
    "marketplace_listing",
    id_field="listing_id",
    required=("url", "title"),
    history=("price", "currency", "is_sold"),
)
@dataclass
class MarketplaceListing:
    """A classified ad (e.g. facebook marketplace)."""

    url: Url
    listing_id: Keyword | None = None
    title: Text | None = None
    price: Money | None = None
    currency: Currency | None = None
    condition: Keyword | None = None  # new, used_like_new, used_good, ...
    category: Text | None = None
    location_name: Text | None = None
    location: GeoPoint | None = None
    seller_id: Keyword | None = None
    seller_name: Text | None = None
    description: LongText | None = None
    images: list[Url] | None = None
    listed_at: IsoDate | None = None
    is_sold: bool | None = None
    job_id: Keyword | None = None
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


@item_schema(
    "job_posting",
    id_field="posting_id",
    required=("url", "title", "company"),
    history=("salary_min", "salary_max", "valid_through"),
)
@dataclass
class JobPosting:
    """A job posting (e.g. the local jobs board, ``standins.job_board_site``; schema.org
    JobPosting).

    ``posting_id`` is the site's id of the posting: ``job_id`` is the platform's, the crawl
    job that stored it (as on every item type).
    """

    url: Url
    posting_id: Keyword | None = None
    title: Text | None = None
    company: Text | None = None
    company_url: Url | None = None
    employment_type: Keyword | None = None  # schema.org: FULL_TIME, PART_TIME, CONTRACTOR, ...
    remote: bool | None = None  # schema.org jobLocationType TELECOMMUTE
    city: Text | None = None
    region: Text | None = None
    country: CountryCode | None = None
    salary_min: Money | None = None
    salary_max: Money | None = None
    salary_currency: Currency | None = None
    salary_period: Keyword | None = None  # schema.org unitText: YEAR, MONTH, HOUR
    date_posted: IsoDate | None = None
    valid_through: IsoDate | None = None
    description: LongText | None = None
    skills: list[Keyword] | None = None
    experience_level: Keyword | None = None  # as the site says it: Junior, Senior, ...
    team: Text | None = None
    company_rating: Annotated[int, Field(ge=0, le=5)] | None = None  # the company's stars
    category: Text | None = None
    job_id: Keyword | None = None
    # Parts it was stored without (e.g. ["reviews"]): their requests failed through every
    # retry of the job (``SiteSpider.retry_part``); None when complete.
    incomplete: list[Keyword] | None = None


# -- the registry, explicitly -------------------------------------------------------------------
# Code that looks item types up (validation, the store's mappings, coverage, Kibana
# objects, repair) asks these lookups, which hold the platform's classes, instead of
# importing this module for the side effect of their declaration. Types a site profile declares
# (crawlers.declared_items) join the same registry when their profile is loaded.
ITEM_CLASSES: tuple[type, ...] = (
    DemoProduct,
    Product,
    PropertyListing,
    Review,
    Hotel,
    MarketplaceListing,
    JobPosting,
)


def schema_for(item: Any) -> ItemSchema:
    """The schema of an item instance or class (``UnknownItemType`` if undeclared)."""
    return items_schema.schema_for(item)


def schema_by_type(item_type: str) -> ItemSchema:
    """The schema of the item type ``item_type`` (``UnknownItemType`` if none)."""
    return items_schema.schema_by_type(item_type)


def registered_types() -> dict[str, ItemSchema]:
    """Every declared item type by name: the platform's (``ITEM_CLASSES``) and any a
    loaded profile declared."""
    return items_schema.registered_types()
