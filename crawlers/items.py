"""Item schemas the spiders yield: one dataclass per vertical.

Fields a page may fail to provide are optional, so a partial item still reaches the
pipelines (which decide what is good enough) instead of vanishing inside a spider.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class DemoProduct:
    """A product of the demo store (``demo_site``), reviews included."""

    sku: str
    url: str
    name: str | None = None
    brand: str | None = None
    category: str | None = None  # display name, e.g. "Kitchen & Dining"
    category_slug: str | None = None  # e.g. "kitchen"
    price: float | None = None
    currency: str | None = None  # ISO 4217, e.g. "EUR"
    availability: str | None = None  # schema.org name: InStock, OutOfStock, PreOrder
    rating: float | None = None
    review_count: int | None = None
    description: str | None = None
    image: str | None = None  # absolute URL
    # Each: {"author", "rating", "title", "body", "date"}; None when they could not be
    # fetched (as opposed to [] for a product without reviews).
    reviews: list[dict[str, Any]] | None = None
    job_id: str | None = None  # set by JobTagMiddleware
