"""trustpilot.com: the reviews of monitored businesses, newest first, page by page.

``scrapy crawl trustpilot -O reviews.jsonl [-a base_url=http://127.0.0.1:8011]``

Start entries are company review pages (``/review/<domain>``, the profile's
``start_paths``). Each page is Next.js server HTML: ``__NEXT_DATA__`` carries the
business and its reviews in full, JSON-LD a ``LocalBusiness`` with ``aggregateRating``
and one ``Review`` per card, and the DOM the same cards. The spider reads
``__NEXT_DATA__`` first, then JSON-LD, then the cards, field by field and keyed by review
id, so a partial change of the site still yields complete items where any layer has
the data. A card prints the date of experience ("Date of experience: March 1, 2024")
also when the state holds ``experiencedDate: null``: it is read with dateparser in the
page's language (``<html lang>``). Pagination: ``filters.pagination`` in the state,
else ``a[name=pagination-button-next]`` / ``<link rel=next>``, up to
``MAX_LISTING_PAGES`` pages per business.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlparse

import scrapy
from scrapy.http import Response, TextResponse

from crawlers.items import Review, ReviewSubject
from crawlers.profiles import PageSelectors
from crawlers.spiders.base import page_selectors
from crawlers.spiders.common import (
    ProductionSpider,
    css_text,
    has_type,
    json_object,
    long_text,
    script_json,
    structured_nodes,
    text,
    to_float,
    to_int,
)
from crawlers.spiders.fallbacks import Picked, pick
from crawlers.spiders.printed import printed_date

REVIEW_FIELDS = ("author", "rating", "title", "body", "published_at", "language")
_NEXT_DATA = '//script[@id="__NEXT_DATA__"]/text()'
# Cards of the main review list (the "relevant reviews" carousel has no rating block).
_CARDS_XPATH = "//article[@data-service-review-card-paper][.//*[@data-service-review-rating]]"
# Where a card prints its date of experience: the typography's data attribute, else the
# paragraph its label starts (a layout without the attribute).
_EXPERIENCE = (
    ".//*[@data-service-review-date-of-experience-typography]"
    ' | .//p[starts-with(normalize-space(), "Date of experience")]'
)
# The label inside that paragraph (``<b>Date of experience:</b> March 1, 2024``).
_EXPERIENCE_DATE = "./text()[normalize-space()] | ./*[not(self::b or self::strong)]//text()"


@dataclass
class CompanyPage:
    """What one company review page says: the business, its reviews, the next page."""

    subject: ReviewSubject | None
    rating: float | None = None
    review_count: int | None = None
    reviews: list[dict[str, Any]] = field(default_factory=list)
    current_page: int | None = None
    total_pages: int | None = None
    next_url: str | None = None
    layers: tuple[str, ...] = ()  # which sources had data, for diagnostics
    picked: list[Picked] = field(default_factory=list)  # each review's, its sources named


class TrustpilotSpider(ProductionSpider):
    name = "trustpilot"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Review | scrapy.Request]:
        """A company review page: its reviews, then the next page."""
        if not isinstance(response, TextResponse):
            self.fail(response, "company", "not a text response")
            return
        page = extract_company_page(response, self.selectors("company_reviews"))
        if page.subject is None and not page.reviews:
            self.fail(response, "company", "no business and no reviews on the page")
            return
        if "next_data" not in page.layers:
            self.logger.warning("%s: no __NEXT_DATA__, read %s", response.url, page.layers)
            self.count("layout_fallback")
        if page.subject is None:
            self.fail(response, "company", "reviews without the business they are about")
            return
        for picked in page.picked:
            fields = self.picked(response.url, picked)
            self.note_missing(response.url, fields, REVIEW_FIELDS)
            self.count("reviews")
            yield Review(
                **fields,
                subject=page.subject,
                subject_rating=page.rating,
                subject_review_count=page.review_count,
            )
        number = int(response.meta.get("listing_page", page.current_page or 1))
        if page.next_url and number < self.max_pages:
            yield response.follow(
                page.next_url,
                callback=self.parse,
                errback=self.on_error,
                meta={"listing_page": number + 1},
            )


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


def extract_company_page(
    response: TextResponse, selectors: PageSelectors | None = None
) -> CompanyPage:
    """The page's business and reviews: ``__NEXT_DATA__``, then JSON-LD, then the cards.
    ``selectors``: the profile's ``company_reviews`` selectors (default: the shipped
    profile's), which the cards and the visible header are read by."""
    shown = page_selectors("trustpilot", "company_reviews", selectors)
    layers = []
    state = script_json(response, _NEXT_DATA)
    props = _dig(state, "props", "pageProps") if isinstance(state, dict) else None
    page = CompanyPage(subject=None)
    # Each review's sources in order (its id, else its URL, keys it): each of its fields
    # from the first source whose value fits (crawlers.spiders.fallbacks).
    reviews: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    def merge(found: list[dict[str, Any]], source: str) -> None:
        for fields in found:
            key = fields.get("review_id") or fields.get("url")
            if key:
                reviews.setdefault(key, []).append((source, fields))

    if isinstance(props, dict):
        layers.append("next_data")
        unit = json_object(props, "businessUnit")
        page.subject = _subject_from_state(unit, response)
        page.rating = to_float(unit.get("trustScore"))
        page.review_count = to_int(unit.get("numberOfReviews"))
        merge([_review_from_state(r, response) for r in props.get("reviews") or []], "state")
        pagination = _dig(props, "filters", "pagination") or {}
        page.current_page = to_int(pagination.get("currentPage"))
        page.total_pages = to_int(pagination.get("totalPages"))

    business, ld_reviews = _from_jsonld(response)
    if business or ld_reviews:
        layers.append("jsonld")
    if business:
        if page.subject is None:
            page.subject = business["subject"]
        page.rating = page.rating if page.rating is not None else business["rating"]
        if page.review_count is None:
            page.review_count = business["review_count"]
    merge(ld_reviews, "json-ld")

    card_reviews = _from_cards(response, shown)
    if card_reviews:
        layers.append("cards")
    merge(card_reviews, "dom")
    if page.subject is None:
        page.subject = _subject_from_dom(response, shown)
        if page.rating is None:
            page.rating = to_float(css_text(response, f"{shown['trust_score']}::text"))

    page.picked = [pick("review", sources, names=_ALL_FIELDS) for sources in reviews.values()]
    page.reviews = [picked.fields for picked in page.picked]
    page.next_url = _next_url(response, page)
    page.layers = tuple(layers)
    return page


_ALL_FIELDS = (
    "url",
    "review_id",
    "author",
    "author_country",
    "rating",
    "rating_scale",
    "title",
    "body",
    "language",
    "published_at",
    "experienced_at",
    "verified",
    "reply",
    "helpful_count",
)


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def review_url(response: TextResponse, review_id: str) -> str:
    """Each review has its own page on the site: ``/reviews/<id>``."""
    return response.urljoin(f"/reviews/{review_id}")


def _subject_from_state(unit: dict[str, Any], response: TextResponse) -> ReviewSubject | None:
    name = text(unit.get("displayName"))
    if not name:
        return None
    slug = text(unit.get("identifyingName"))
    categories = unit.get("categories") or []
    primary = next((c for c in categories if isinstance(c, dict) and c.get("isPrimary")), None)
    category = text((primary or (categories[0] if categories else {}) or {}).get("name"))
    if category is None:
        category = text(_dig(unit, "breadcrumb", "bottomLevelDisplayName"))
    return ReviewSubject(
        kind="business",
        name=name,
        subject_id=slug,
        url=response.urljoin(f"/review/{slug}") if slug else _page_url(response),
        category=category,
    )


def _review_from_state(entry: dict[str, Any], response: TextResponse) -> dict[str, Any]:
    if not isinstance(entry, dict) or not entry.get("id"):
        return {}
    review_id = str(entry["id"])
    consumer = json_object(entry, "consumer")
    dates = json_object(entry, "dates")
    verification = _dig(entry, "labels", "verification") or {}
    reply = json_object(entry, "reply")
    country = text(consumer.get("countryCode"))
    return {
        "url": review_url(response, review_id),
        "review_id": review_id,
        "author": text(consumer.get("displayName")),
        "author_country": country.upper() if country else None,
        "rating": to_float(entry.get("rating")),
        "rating_scale": 5.0,
        "title": text(entry.get("title")),
        "body": long_text(entry.get("text")),
        "language": text(entry.get("language")),
        "published_at": text(dates.get("publishedDate")),
        "experienced_at": text(dates.get("experiencedDate")),
        "verified": verification.get("isVerified")
        if isinstance(verification.get("isVerified"), bool)
        else None,
        "reply": long_text(reply.get("message")),
        "helpful_count": to_int(entry.get("likes")),
    }


def _from_jsonld(
    response: TextResponse,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    nodes = structured_nodes(response, "json-ld")
    business = None
    for node in nodes:
        if has_type(node, "LocalBusiness", "Organization") and node.get("aggregateRating"):
            rating = node["aggregateRating"] if isinstance(node["aggregateRating"], dict) else {}
            name = text(node.get("name"))
            if not name:
                continue
            url = text(node.get("url")) or _page_url(response)
            slug = urlparse(url).path.rstrip("/").rsplit("/", 1)[-1] or None
            business = {
                "subject": ReviewSubject(
                    kind="business",
                    name=name,
                    subject_id=slug,
                    url=response.urljoin(url),
                ),
                "rating": to_float(rating.get("ratingValue")),
                "review_count": to_int(rating.get("reviewCount")),
            }
            break
    reviews = []
    for node in nodes:
        if not has_type(node, "Review"):
            continue
        review_id = str(node.get("@id") or "").rstrip("/").rsplit("/", 1)[-1]
        if not review_id:
            continue
        author = json_object(node, "author")
        rating = json_object(node, "reviewRating")
        best = to_float(rating.get("bestRating"))
        reviews.append(
            {
                "url": review_url(response, review_id),
                "review_id": review_id,
                "author": text(author.get("name")),
                "rating": to_float(rating.get("ratingValue")),
                "rating_scale": best or 5.0,
                "title": text(node.get("headline")),
                "body": long_text(node.get("reviewBody")),
                "language": text(node.get("inLanguage")),
                "published_at": text(node.get("datePublished")),
            }
        )
    return business, reviews


def _experienced(card: Any, languages: tuple[str, ...]) -> str | None:
    """The date of experience the card prints, as an ISO date (the page's language)."""
    for node in card.xpath(_EXPERIENCE):
        value = text(" ".join(node.xpath(_EXPERIENCE_DATE).getall()))
        found = printed_date(value, languages) if value else None
        found = found or printed_date(" ".join(node.xpath(".//text()").getall()), languages)
        if found:
            return found[:10]
    return None


def _from_cards(response: TextResponse, shown: PageSelectors) -> list[dict[str, Any]]:
    reviews = []
    lang = text(response.xpath("/html/@lang").get())
    languages = (lang,) if lang else ()
    for card in response.xpath(_CARDS_XPATH):
        href = card.css('a[href*="/reviews/"]::attr(href)').get() or ""
        review_id = href.rstrip("/").rsplit("/", 1)[-1] if "/reviews/" in href else None
        if not review_id:
            continue
        country = text(card.css("[data-consumer-country-typography]::text").get())
        body = card.css("[data-service-review-text-typography]")
        reply = card.css("[data-service-review-business-reply-text-typography]")
        reviews.append(
            {
                "url": review_url(response, review_id),
                "review_id": review_id,
                "author": css_text(card, "[data-consumer-name-typography]::text"),
                "author_country": country.upper() if country and len(country) == 2 else None,
                "rating": to_float(
                    card.css("[data-service-review-rating]::attr(data-service-review-rating)").get()
                ),
                "rating_scale": 5.0,
                "title": css_text(card, f"{shown['review_title']} ::text"),
                "body": long_text("\n".join(body.css("::text").getall())) if body else None,
                "published_at": text(
                    card.css("time[data-service-review-date-time-ago]::attr(datetime)").get()
                ),
                "experienced_at": _experienced(card, languages),
                "reply": long_text("\n".join(reply.css("::text").getall())) if reply else None,
            }
        )
    return reviews


def _subject_from_dom(response: TextResponse, shown: PageSelectors) -> ReviewSubject | None:
    name = css_text(response, f"{shown['business_name']}::text")
    if not name:
        return None
    path = urlparse(response.url).path.rstrip("/")
    slug = path.rsplit("/", 1)[-1] if path.startswith("/review/") else None
    return ReviewSubject(kind="business", name=name, subject_id=slug, url=_page_url(response))


def _page_url(response: TextResponse) -> str:
    """The company page without its page number (the business's own URL)."""
    parsed = urlparse(response.url)
    return response.urljoin(parsed.path)


def _next_url(response: TextResponse, page: CompanyPage) -> str | None:
    if page.current_page is not None and page.total_pages is not None:
        if page.current_page >= page.total_pages:
            return None
        return f"{_page_url(response)}?{urlencode({'page': page.current_page + 1})}"
    href = response.css('a[name="pagination-button-next"]::attr(href)').get()
    href = href or response.css('link[rel="next"]::attr(href)').get()
    return response.urljoin(href) if href else None
