"""booking.com hotel pages: each field from the most precise layer that has it (pure
functions: tests feed them saved pages)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from parsel import Selector, SelectorList
from scrapy.http import TextResponse

from crawlers.profiles import PageSelectors
from crawlers.spiders.base import page_selectors
from crawlers.spiders.booking_com.pages import (
    NUMBER,
    TYPES,
    apollo,
    page_market,
    point,
    stay_of,
)
from crawlers.spiders.common import (
    Money,
    absolute,
    css_text,
    find_key,
    has_type,
    json_object,
    long_text,
    money,
    structured_nodes,
    text,
    to_float,
    to_int,
    unique,
)
from crawlers.spiders.currency import Market
from crawlers.spiders.fallbacks import Picked, pick

SITE = "booking_com"
_HOTEL_ID = re.compile(r"\bb_hotel_id\s*[:=]\s*'?(\d+)")
_LAT = re.compile(r"\bb_map_center_latitude\s*[:=]\s*'?(-?[\d.]+)")
_LON = re.compile(r"\bb_map_center_longitude\s*[:=]\s*'?(-?[\d.]+)")
_STARS = re.compile(r"ratings_stars_(\d)")
# The stay a hotel page was loaded for: empty strings on a page loaded without dates.
_PAGE_DATE = re.compile(r"\bb_check(in|out)_date\s*[:=]\s*'([^']*)'")
# The tracking data layer both layouts print (``city_name: 'Mumbai'``, ``hotel_class: 5``)
# and the accommodation type of the page.
_LAYER = re.compile(r"(?<![\w.\"'{])(city_name|hotel_class|atid|b_acc_type)\s*:\s*'?([^',\n]*)")
_PHOTO_ID = re.compile(r"/(\d+)\.(?:jpe?g|webp|png)\b", re.IGNORECASE)
_PHOTO_SIZES = ("max1024x768", "max500", "max300", "max200")
# ASSUMED (the saved hotel pages are undated): the room table of a dated page.
_ROOM_PRICE = "#hprt-table .bui-price-display__value, #hprt-table .prco-valign-middle-helper"

# Where each hotel field is read, most precise first (layers: ``store`` the Apollo store,
# ``json-ld``, ``shown`` the visible blocks, ``vars`` inline variables and the URL,
# ``old`` the 2016-18 layout). Why the order differs per field:
# - city: never JSON-LD (its addressLocality holds the street); breadcrumbs, then the
#   data layer's city_name.
# - review_count: the store's is the figure the page shows; JSON-LD's may lag a few.
# - description: JSON-LD's is cut after a sentence or two; the visible block is whole.
_HOTEL_SOURCES: dict[str, tuple[str, ...]] = {
    "hotel_id": ("store", "vars"),
    "name": ("store", "json-ld", "shown", "old"),
    "property_type": ("store", "vars"),
    "address": ("store", "json-ld", "shown", "old"),
    "city": ("store", "shown", "vars"),
    "country": ("store", "vars"),
    "location": ("store", "shown", "vars"),
    "star_rating": ("store", "shown", "vars", "old"),
    "review_score": ("store", "json-ld", "shown", "old"),
    "review_count": ("store", "json-ld", "shown", "old"),
    "description": ("store", "shown", "json-ld", "old"),
    "amenities": ("shown", "old"),
}


def extract_hotel(response: TextResponse, selectors: PageSelectors | None = None) -> dict[str, Any]:
    """A hotel page's fields: ``read_hotel``'s."""
    return read_hotel(response, selectors).fields


def read_hotel(response: TextResponse, selectors: PageSelectors | None = None) -> Picked:
    """A hotel page: each field from the first layer of ``_HOTEL_SOURCES`` whose value
    fits the field (``crawlers.spiders.fallbacks``); photos from every layer, once each; a
    price only when the page is dated. ``selectors``: the profile's ``hotel`` selectors
    (the spider's; default the shipped profile's)."""
    scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    store = apollo(response)
    layers = {
        "store": _hotel_store(store),
        "json-ld": _hotel_jsonld(response),
        "shown": _hotel_blocks(response, page_selectors(SITE, "hotel", selectors)),
        "vars": _hotel_vars(response, scripts),
        "old": _old_layout(response),
    }
    picked = pick("hotel", list(layers.items()), names=_HOTEL_SOURCES, order=_HOTEL_SOURCES)
    fields = dict(picked.fields)
    fields["images"] = _photos(
        [*layers["shown"]["images"], *layers["json-ld"]["images"], *layers["old"]["images"]],
        _store_photos(store),
    )
    checkin, checkout = _page_stay(response.url, scripts)
    where = page_market(response, scripts)
    price = _room_price(response, where) if checkin and checkout else Money(None, None)
    fields.update(
        price=price.amount,
        currency=price.currency if price.amount else None,
        checkin=checkin if price.amount else None,
        checkout=checkout if price.amount else None,
    )
    return dataclasses.replace(picked, fields=fields)


def _ref(store: dict[str, Any], value: Any) -> dict[str, Any]:
    """An Apollo cache reference (``{"__ref": "Type:id"}``) resolved; dicts as they are."""
    if isinstance(value, dict) and "__ref" in value:
        found = store.get(value["__ref"])
        return found if isinstance(found, dict) else {}
    return value if isinstance(value, dict) else {}


def _entity(
    store: dict[str, Any], parent: dict[str, Any], key: str, typename: str
) -> dict[str, Any]:
    """``parent[key]`` resolved (``null``: the page has none); without a parent, the
    store's only entity of ``typename``."""
    if key in parent:
        return _ref(store, parent[key])
    matches = [v for v in store.values() if isinstance(v, dict) and v.get("__typename") == typename]
    return matches[0] if len(matches) == 1 else {}


def _hotel_store(store: dict[str, Any]) -> dict[str, Any]:
    if not store:
        return {}
    root = store.get("ROOT_QUERY") or {}
    extended = next((v for v in find_key(root, "propertyFullExtended") if isinstance(v, dict)), {})
    data = _entity(store, extended, "basicPropertyData", "BasicPropertyData")
    location = data.get("location") or {}
    country = text(location.get("countryCode"))
    score = _entity(store, extended, "propertyReview", "PropertyReview").get("totalScore") or {}
    stars = to_float(_entity(store, extended, "starRating", "StarRating").get("value"))
    return {
        "hotel_id": str(data["id"]) if data.get("id") else None,
        "name": text(data.get("name")),
        "property_type": TYPES.get(data.get("accommodationTypeId")),
        "address": text(location.get("formattedAddress")),
        "city": text(location.get("city")),
        "country": country.upper() if country else None,
        "location": point(location.get("latitude"), location.get("longitude")),
        "star_rating": stars or None,
        "review_score": to_float(score.get("score")) if score.get("reviewsCount") else None,
        # The score's count, else the property's own (a property nobody reviewed yet may
        # carry no score summary at all, and a count of 0 there).
        "review_count": to_int(score.get("reviewsCount"))
        if score.get("reviewsCount") is not None
        else _property_reviews(store, data.get("id")),
        "description": long_text(
            _entity(store, extended, "translation", "HotelTranslation").get("description")
        ),
    }


def _property_reviews(store: dict[str, Any], hotel_id: Any) -> int | None:
    """``Property:{"id":N}.reviews.reviewsCount``: the count of the page's own property."""
    for value in store.values():
        own = isinstance(value, dict) and value.get("__typename") == "Property"
        if own and hotel_id is not None and str(value.get("id")) == str(hotel_id):
            reviews = json_object(value, "reviews")
            return to_int(reviews.get("reviewsCount"))
    return None


def _store_photos(store: dict[str, Any]) -> dict[str, str]:
    """Photo id -> its largest URL, for every photo of the page's store."""
    photos: dict[str, str] = {}
    for value in store.values():
        if not isinstance(value, dict) or value.get("__typename") != "AccommodationPhoto":
            continue
        for size in _PHOTO_SIZES:
            url = (value.get(f'resource({{"size":"{size}"}})') or {}).get("absoluteUrl")
            if isinstance(url, str) and value.get("id"):
                photos[str(value["id"])] = url
                break
    return photos


def _photos(shown: Iterable[str | None], store: dict[str, str]) -> list[str] | None:
    """Photos in page order, then the store's others; each once (by booking.com's photo
    id, whatever the size in its URL), at the largest size the store names."""
    found: dict[str, str] = {}
    for url in [*shown, *store.values()]:
        if not url:
            continue
        photo = _PHOTO_ID.search(url)
        key = photo.group(1) if photo else url
        found.setdefault(key, store.get(key, url))
    return list(found.values()) or None


def _hotel_jsonld(response: TextResponse) -> dict[str, Any]:
    nodes = structured_nodes(response, "json-ld")
    hotel = next((n for n in nodes if has_type(n, "Hotel", "LodgingBusiness")), {})
    address = json_object(hotel, "address")
    rating = json_object(hotel, "aggregateRating")
    return {
        "name": text(hotel.get("name")),
        "address": text(address.get("streetAddress")),
        "review_score": to_float(rating.get("ratingValue")),
        "review_count": to_int(rating.get("reviewCount")),
        "description": long_text(hotel.get("description")),
        "images": [absolute(response, hotel.get("image"))],
    }


def _hotel_blocks(response: TextResponse, shown: PageSelectors) -> dict[str, Any]:
    """What the current layout shows (``data-testid`` blocks, the profile's selectors)."""
    header = response.css('[data-testid="PropertyHeaderDesktop-wrapper"]')
    score_text = css_text(response, f"{shown['review_score']} ::text") or ""
    numbers = NUMBER.findall(score_text.replace("\u00a0", " "))
    latlng = response.css(shown["coordinates"]).attrib.get("data-atlas-latlng") or ""
    lat, _, lon = latlng.partition(",")
    description = response.css(shown["description"])
    return {
        "name": css_text(header, "h2 ::text") or css_text(response, "h2.pp-header__title ::text"),
        "address": text(response.css(f"{shown['address']} button > div::text").get()),
        "city": css_text(response, f'{shown["breadcrumbs"]} a[href*="/city/"] ::text'),
        "location": point(lat, lon),
        "star_rating": _star_icons(
            header.css('[data-testid="rating-stars"], [data-testid="rating-squares"]')
        ),
        "review_score": to_float(numbers[0]) if numbers else None,
        "review_count": to_int(numbers[-1]) if len(numbers) > 1 else None,
        "description": long_text("".join(description.css("::text").getall())),
        "amenities": unique(
            text(t) for t in response.css(f"{shown['facilities']} ::text").getall()
        ),
        "images": response.css(f"{shown['gallery']}::attr(src)").getall(),
    }


def _star_icons(blocks: SelectorList[Selector]) -> float | None:
    """Stars (or squares) as the block labels them ("5 out of 5 stars"), else counted."""
    for block in blocks:
        label = NUMBER.search(block.attrib.get("aria-label") or "")
        if label:
            return to_float(label.group(0))
        icons = block.xpath("./*")
        if icons:
            return float(len(icons))
    return None


def _hotel_vars(response: TextResponse, scripts: str) -> dict[str, Any]:
    """Inline variables (both layouts) and the hotel URL's country."""
    layer: dict[str, str] = {}
    for name, value in _LAYER.findall(scripts):
        layer.setdefault(name, value.strip())
    hotel_id = _HOTEL_ID.search(scripts)
    lat, lon = _LAT.search(scripts), _LON.search(scripts)
    path = urlparse(response.url).path.split("/")
    type_id = to_int(layer.get("b_acc_type") or layer.get("atid"))
    return {
        "hotel_id": hotel_id.group(1) if hotel_id else None,
        "property_type": TYPES.get(type_id) if type_id else None,
        "city": text(layer.get("city_name")),
        "country": path[2].upper() if len(path) > 3 and path[1] == "hotel" else None,
        "location": point(lat.group(1), lon.group(1)) if lat and lon else None,
        "star_rating": to_float(layer.get("hotel_class")) or None,
    }


def _old_layout(response: TextResponse) -> dict[str, Any]:
    """The 2016-18 hotel page."""
    score_box = response.css("#js--hp-gallery-scorecard")
    count = re.search(r"(\d[\d,.]*)\s+reviews", css_text(score_box, "::text") or "")
    stars = _STARS.search(" ".join(response.css("i.stars::attr(class)").getall()))
    return {
        "name": css_text(response, "#hp_hotel_name::text"),
        "address": css_text(response, "#hp_address_subtitle::text"),
        "star_rating": float(stars.group(1)) if stars else None,
        "review_score": to_float(css_text(score_box, ".js--hp-scorecard-scoreval::text")),
        "review_count": to_int(count.group(1)) if count else None,
        "description": long_text(css_text(response, "#summary p ::text")),
        # The facilities checklist, by section ("Outdoors: Terrace", ...): each item.
        "amenities": unique(
            text(t) for t in response.css(".facilitiesChecklistSection li ::text").getall()
        ),
        "images": [
            absolute(response, url)
            for url in response.css(
                "#photo_wrapper img::attr(data-lazy), #photo_wrapper img::attr(src)"
            ).getall()
            if "/images/hotel/" in url  # the slides also show landmarks nearby
        ],
    }


def _page_stay(url: str, scripts: str) -> tuple[str | None, str | None]:
    """The stay the page was loaded for: its own ``b_checkin_date``/``b_checkout_date``
    (empty when loaded without dates, whatever the URL asked), else the URL's."""
    stated = dict(_PAGE_DATE.findall(scripts))
    if "in" in stated and "out" in stated:
        return stated["in"] or None, stated["out"] or None
    return stay_of(url)


def _room_price(response: TextResponse, where: Market) -> Money:
    """The cheapest room of a dated page's room table (ASSUMED structure)."""
    prices = [money(css_text(cell, "::text"), where=where) for cell in response.css(_ROOM_PRICE)]
    priced = [price for price in prices if price.amount]
    return min(priced, key=lambda price: price.amount or 0.0) if priced else Money(None, None)
