"""booking.com: hotels of monitored destinations, with score, reviews, address and price.

``scrapy crawl booking_com -O hotels.jsonl [-a base_url=http://127.0.0.1:8015]``

Start entries are dated search result pages: the profile's ``start_paths`` carry
``{checkin}``/``{checkout}`` placeholders, filled when the request is built (today +
``BOOKING_CHECKIN_DAYS_AHEAD``, for ``BOOKING_NIGHTS``), so every run prices the same
kind of stay. Search pages embed their data in the Apollo store
(``<script data-capla-store-data="apollo">``: ``ROOT_QUERY.searchQueries.search(...)``
with ``results[]`` and ``pagination``), read first; the property cards
(``[data-testid=property-card]``) are the fallback. Each result is followed to its hotel
page for the address, description, amenities and coordinates; if that page fails, the
search result is yielded alone, never dropped.

Hotel pages: ASSUMED modern structure (no 2020s hotel page was available): JSON-LD
``Hotel`` (name, address, aggregateRating, description), the inline ``b_hotel_id``,
``data-atlas-latlng`` and ``data-testid`` blocks; the old layout (``#hp_hotel_name``,
``#hp_address_subtitle``, ``#js--hp-gallery-scorecard``, ``b_map_center_latitude``,
seen on a saved page) stays as the last fallback.

Pagination: ``nbResultsTotal`` / ``nbResultsPerPage`` of the store give the next
``offset``; else a ``[data-testid=pagination-next]`` link (ASSUMED: the saved page was a
one-page region list).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import scrapy
from scrapy import Request
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import GeoPoint, Hotel
from crawlers.spiders.common import (
    ProductionSpider,
    absolute,
    coordinate,
    css_text,
    find_key,
    first,
    has_type,
    long_text,
    money,
    script_json,
    structured_nodes,
    text,
    to_float,
    to_int,
    unique,
)

HOTEL_FIELDS = ("name", "address", "review_score", "review_count", "price")
_APOLLO = '//script[@data-capla-store-data="apollo"]/text()'
_HOTEL_ID = re.compile(r"\bb_hotel_id\s*[:=]\s*'?(\d+)")
_LAT = re.compile(r"\bb_map_center_latitude\s*[:=]\s*'?(-?[\d.]+)")
_LON = re.compile(r"\bb_map_center_longitude\s*[:=]\s*'?(-?[\d.]+)")
_STARS = re.compile(r"ratings_stars_(\d)")
_CDN = "https://cf.bstatic.com"
# booking.com country codes in hotel URLs are ISO 3166 alpha-2 (lower case).
_TYPES = {
    204: "hotel",
    201: "apartment",
    203: "hostel",
    208: "bed_and_breakfast",
    216: "guest_house",
}


class BookingComSpider(ProductionSpider):
    name = "booking_com"

    # -- dated start entries -------------------------------------------------------------
    def stay_dates(self) -> tuple[str, str]:
        ahead = int(self.settings.getint("BOOKING_CHECKIN_DAYS_AHEAD", 30))
        nights = int(self.settings.getint("BOOKING_NIGHTS", 1))
        checkin = dt.date.today() + dt.timedelta(days=ahead)
        return checkin.isoformat(), (checkin + dt.timedelta(days=nights)).isoformat()

    def make_request_from_entry(self, entry: dict[str, Any]) -> Request:
        # Placeholders are filled when the request is built, on the worker, so entries that
        # waited in the frontier (and the gate's samples) still ask for future dates.
        url = str(entry["url"])
        if "{checkin}" in url or "{checkout}" in url:
            checkin, checkout = self.stay_dates()
            url = url.replace("{checkin}", checkin).replace("{checkout}", checkout)
        return super().make_request_from_entry({**entry, "url": url})

    # -- callbacks -----------------------------------------------------------------------
    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        """A search result page: every property's page, then the next offset."""
        if not isinstance(response, TextResponse):
            self.fail(response, "search", "not a text response")
            return
        page = extract_search(response)
        if not page["hotels"]:
            self.fail(response, "search", "no properties in the store nor in the cards")
            return
        if page["source"] != "apollo":
            self.logger.warning("%s: no Apollo store, read the cards", response.url)
            self.count("layout_fallback")
        for hotel in page["hotels"]:
            yield response.follow(
                hotel["url"],
                callback=self.parse_hotel,
                errback=self.on_hotel_error,
                cb_kwargs={"partial": hotel},
            )
        number = int(response.meta.get("listing_page", 1))
        if page["next_url"] and number < self.max_pages:
            yield response.follow(
                page["next_url"],
                callback=self.parse,
                errback=self.on_error,
                meta={"listing_page": number + 1},
            )

    def parse_hotel(self, response: Response, partial: dict[str, Any]) -> Iterator[Hotel]:
        fields = dict(partial)
        if isinstance(response, TextResponse):
            found = extract_hotel(response)
            if not found.get("name"):
                self.logger.warning("%s: hotel page unreadable, search data only", response.url)
                self.count("hotel_page_unparsed")
            for name, value in found.items():
                if value not in (None, "", []) and (
                    fields.get(name) in (None, "", []) or name in _PAGE_WINS
                ):
                    fields[name] = value
        self.note_missing(response.url, fields, HOTEL_FIELDS)
        self.count("hotels")
        yield Hotel(**fields)

    def on_hotel_error(self, failure: Failure) -> Iterator[scrapy.Request | Hotel]:
        """The hotel page again later in the job; once its rounds are spent, the search
        card's data marked incomplete."""
        request = failure.request  # type: ignore[attr-defined]
        self.logger.warning("hotel page failed: %s (%s)", request.url, failure.getErrorMessage())
        self.count("hotel_page_failed")
        retry = self.retry_part(request, "hotel_page", failure)
        if retry is not None:
            yield retry
            return
        yield Hotel(**request.cb_kwargs["partial"], incomplete=["hotel_page"])


# The hotel page is more precise than a search card for these.
_PAGE_WINS = ("address", "description", "amenities", "location", "images")


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


def stay_of(url: str) -> tuple[str | None, str | None]:
    query = parse_qs(urlparse(url).query)
    return (query.get("checkin") or [None])[0], (query.get("checkout") or [None])[0]


def hotel_url(response: TextResponse, href: str, checkin: str | None, checkout: str | None) -> str:
    """The hotel page without tracking parameters, with the search's stay."""
    parsed = urlparse(response.urljoin(href))
    query = {"checkin": checkin, "checkout": checkout} if checkin and checkout else {}
    return urlunparse(parsed._replace(query=urlencode(query), fragment=""))


def extract_search(response: TextResponse) -> dict[str, Any]:
    checkin, checkout = stay_of(response.url)
    store = script_json(response, _APOLLO)
    hotels: list[dict[str, Any]] = []
    pagination: dict[str, Any] = {}
    source = "apollo"
    if isinstance(store, dict):
        for search in find_key(store, "searchQueries"):
            for key, output in (search or {}).items() if isinstance(search, dict) else []:
                if not key.startswith("search(") or not isinstance(output, dict):
                    continue
                pagination = output.get("pagination") or {}
                hotels += [
                    h
                    for r in output.get("results") or []
                    if (h := _from_store(r, response, checkin, checkout))
                ]
    if not hotels:
        source = "cards"
        hotels = _from_cards(response, checkin, checkout)
    return {
        "hotels": hotels,
        "source": source,
        "next_url": _next_url(response, pagination, len(hotels)),
    }


def _from_store(
    result: Any, response: TextResponse, checkin: str | None, checkout: str | None
) -> dict[str, Any]:
    if not isinstance(result, dict):
        return {}
    data = result.get("basicPropertyData") or {}
    hotel_id, page_name = data.get("id"), data.get("pageName")
    location = data.get("location") or {}
    country = text(location.get("countryCode"))
    if not hotel_id or not page_name or not country:
        return {}
    reviews = data.get("reviews") or {}
    stars = (data.get("starRating") or {}).get("value")
    price = ((result.get("priceDisplayInfoIrene") or {}).get("displayPrice") or {}).get(
        "amountPerStay"
    ) or {}
    lat, lon = coordinate(location.get("latitude")), coordinate(location.get("longitude"))
    photo = first(list(find_key(data.get("photos") or {}, "relativeUrl")))
    return {
        "url": hotel_url(response, f"/hotel/{country}/{page_name}.html", checkin, checkout),
        "hotel_id": str(hotel_id),
        "name": text((result.get("displayName") or {}).get("text")),
        "property_type": _TYPES.get(data.get("accommodationTypeId")),
        "address": text(location.get("address")),
        "city": text(location.get("city")),
        "country": country.upper(),
        "location": GeoPoint(lat=lat, lon=lon) if lat is not None and lon is not None else None,
        "star_rating": to_float(stars) if stars else None,
        "review_score": to_float(reviews.get("totalScore"))
        if reviews.get("reviewsCount")
        else None,
        "review_count": to_int(reviews.get("reviewsCount")),
        "price": to_float(price.get("amountUnformatted")),
        "currency": text(price.get("currency")),
        "checkin": checkin,
        "checkout": checkout,
        "images": [_CDN + photo] if isinstance(photo, str) else None,
    }


def _from_cards(
    response: TextResponse, checkin: str | None, checkout: str | None
) -> list[dict[str, Any]]:
    hotels = []
    for card in response.css('[data-testid="property-card"]'):
        href = card.css(
            'a[data-testid="title"]::attr(href), a[data-testid="title-link"]::attr(href)'
        ).get()
        if not href:
            continue
        url = hotel_url(response, href, checkin, checkout)
        path = urlparse(url).path.split("/")
        score_text = css_text(card, '[data-testid="review-score"] ::text') or ""
        numbers = re.findall(r"\d+(?:[.,]\d+)?", score_text.replace("\u00a0", " "))
        stars = card.css(
            '[data-testid="rating-stars"] > div, [data-testid="rating-stars"] > span,'
            ' [data-testid="rating-squares"] > div, [data-testid="rating-squares"] > span'
        )
        price = money(css_text(card, '[data-testid="price-and-discounted-price"] ::text'))
        image = re.search(
            r'url\("?([^")]+)',
            card.css('[data-testid="lazy-image-image"]::attr(style)').get() or "",
        )
        hotels.append(
            {
                "url": url,
                "hotel_id": card.attrib.get("data-id") or None,
                "name": css_text(card, '[data-testid="title"] ::text'),
                "address": css_text(card, '[data-testid="address"] ::text'),
                "city": css_text(card, '[data-testid="location"] ::text'),
                "country": path[2].upper() if len(path) > 3 and path[1] == "hotel" else None,
                "star_rating": float(len(stars)) if stars else None,
                "review_score": to_float(numbers[0]) if numbers else None,
                "review_count": to_int(numbers[-1]) if len(numbers) > 1 else None,
                "price": price.amount,
                "currency": price.currency,
                "checkin": checkin,
                "checkout": checkout,
                "images": [image.group(1).replace("&amp;", "&")] if image else None,
            }
        )
    return hotels


def _next_url(response: TextResponse, pagination: dict[str, Any], count: int) -> str | None:
    query = parse_qs(urlparse(response.url).query)
    offset = to_int((query.get("offset") or ["0"])[0]) or 0
    total = to_int(pagination.get("nbResultsTotal"))
    per_page = to_int(pagination.get("nbResultsPerPage")) or count
    if total is not None:
        if offset + per_page >= total or not count:
            return None
        query["offset"] = [str(offset + per_page)]
        parsed = urlparse(response.url)
        return urlunparse(parsed._replace(query=urlencode(query, doseq=True)))
    href = response.css('[data-testid="pagination-next"]::attr(href)').get()
    return response.urljoin(href) if href else None


def extract_hotel(response: TextResponse) -> dict[str, Any]:
    """A hotel page: JSON-LD Hotel, inline variables, data-testid blocks, the old layout."""
    scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    nodes = structured_nodes(response, "json-ld")
    hotel = next((n for n in nodes if has_type(n, "Hotel", "LodgingBusiness")), {})
    address = hotel.get("address") if isinstance(hotel.get("address"), dict) else {}
    rating = hotel.get("aggregateRating") if isinstance(hotel.get("aggregateRating"), dict) else {}
    hotel_id = re.search(_HOTEL_ID, scripts)
    latlng = response.css("[data-atlas-latlng]::attr(data-atlas-latlng)").get()
    lat = lon = None
    if latlng and "," in latlng:
        lat, lon = (coordinate(v) for v in latlng.split(",", 1))
    if lat is None and (m_lat := _LAT.search(scripts)) and (m_lon := _LON.search(scripts)):
        lat, lon = coordinate(m_lat.group(1)), coordinate(m_lon.group(1))
    stars = response.css('.property-header [data-testid="rating-stars"] > span')
    old_stars = _STARS.search(" ".join(response.css("i.stars::attr(class)").getall()))
    score_box = response.css('[data-testid="review-score-component"], #js--hp-gallery-scorecard')
    old_score = css_text(score_box, ".review-score-badge::text, .js--hp-scorecard-scoreval::text")
    old_count = re.search(r"(\d[\d,.]*)\s+reviews", css_text(score_box, "::text") or "")
    name = (
        text(hotel.get("name"))
        or css_text(response, '[data-testid="property-name"]::text')
        or css_text(response, "#hp_hotel_name::text")
    )
    images = [absolute(response, u) for u in ([hotel.get("image")] if hotel.get("image") else [])]
    images += [
        absolute(response, u) for u in response.css("img.hp-gallery-image::attr(src)").getall()
    ]
    return {
        "hotel_id": hotel_id.group(1) if hotel_id else None,
        "name": name,
        "address": text(address.get("streetAddress"))
        or css_text(response, ".hp_address_subtitle::text")
        or css_text(response, "#hp_address_subtitle::text"),
        "city": text(address.get("addressLocality")),
        "location": GeoPoint(lat=lat, lon=lon) if lat is not None and lon is not None else None,
        "star_rating": float(len(stars))
        if stars
        else (float(old_stars.group(1)) if old_stars else None),
        "review_score": to_float(rating.get("ratingValue")) or to_float(old_score),
        "review_count": to_int(rating.get("reviewCount"))
        or (to_int(old_count.group(1)) if old_count else None),
        "description": long_text(hotel.get("description"))
        or long_text(css_text(response, '[data-testid="property-description"] ::text'))
        or long_text(css_text(response, "#summary p ::text")),
        "amenities": unique(
            text(t)
            for t in response.css(
                '[data-testid="property-most-popular-facilities-wrapper"] li ::text'
            ).getall()
        )
        or None,
        "images": unique(images) or None,
    }
