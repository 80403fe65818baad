"""Marketplace search and item pages, read from their Relay query results (pure
functions: tests feed them saved pages)."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from scrapy.http import Response, TextResponse

from crawlers.items import GeoPoint
from crawlers.spiders.common import (
    Money,
    coordinate,
    find_key,
    first,
    long_text,
    money,
    text,
    to_float,
    unique,
)
from crawlers.spiders.currency import NO_MARKET, Market, market

_ITEM_ID = re.compile(r"/marketplace/item/(\d+)")
_DTSG = re.compile(r'"DTSGInitialData",\s*\[\],\s*\{"token":\s*"([^"]+)"')
_TITLE = re.compile(r"^\s*(?:\(\d+\)\s*)?Marketplace\s*[-\u2013]\s*(.+?)\s*\|\s*Facebook\s*$")
_SEARCH_PRELOADER = re.compile(r"MarketplaceSearch", re.IGNORECASE)
_LOGIN_MARKERS = ('id="login_form"', "/login/?next=", "login_form")
# The viewer's locale, which prices are formatted for: ["IntlCurrentLocale",[],{"code":"en_US"}
_LOCALE = re.compile(r'"IntlCurrentLocale",\s*\[\],\s*\{"code":\s*"([A-Za-z_]+)"')
# The "Condition" attribute's values (new, used_like_new, used_good, used_fair,
# refurbished): recognised whatever the UI language calls the attribute.
_CONDITION_VALUE = re.compile(r"^(?:new|refurbished|used(?:_[a-z]+)*)$")


def is_login_page(response: TextResponse) -> bool:
    head = response.text[:200_000]
    return any(marker in head for marker in _LOGIN_MARKERS) and "marketplace_" not in head


def relay_blobs(response: TextResponse) -> list[Any]:
    """The page's JSON blobs that carry Marketplace data (others are skipped unparsed)."""
    blobs = []
    for raw in response.xpath('//script[@type="application/json"]/text()').getall():
        if "marketplace_" not in raw:
            continue
        try:
            blobs.append(json.loads(raw))
        except ValueError:
            continue
    return blobs


def listing_url(response: Response, listing_id: str) -> str:
    return response.urljoin(f"/marketplace/item/{listing_id}/")


def page_locale(response: TextResponse) -> str | None:
    """The viewer's locale the page is formatted for (``en_US``)."""
    found = _LOCALE.search(response.text)
    return found.group(1) if found else None


def locale_market(locale: str | None) -> Market:
    """Where prices of a page in ``locale`` are read: as that locale prints currency
    signs. The viewer's locale is no market the listing is priced in, so a bare amount
    gets no currency from it."""
    return Market(market(language=locale).locales) if locale else NO_MARKET


def extract_search(response: TextResponse) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    listings: list[dict[str, Any]] = []
    page_info: dict[str, Any] = {}
    where = locale_market(page_locale(response))
    for blob in relay_blobs(response):
        found, info = listings_from(blob, response, where)
        listings += found
        page_info = page_info or info
    return unique_by_id(listings), page_info


def unique_by_id(listings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for listing in listings:
        seen.setdefault(listing["listing_id"], listing)
    return list(seen.values())


def listings_from(
    data: Any, response: Response, where: Market = NO_MARKET
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    listings: list[dict[str, Any]] = []
    page_info: dict[str, Any] = {}
    for search in find_key(data, "marketplace_search"):
        units = (search or {}).get("feed_units") if isinstance(search, dict) else None
        if not isinstance(units, dict):
            continue
        page_info = units.get("page_info") or page_info
        for edge in units.get("edges") or []:
            listing = ((edge or {}).get("node") or {}).get("listing")
            if isinstance(listing, dict) and (
                fields := _from_search_listing(listing, response, where)
            ):
                listings.append(fields)
    return listings, page_info


def _from_search_listing(
    listing: dict[str, Any], response: Response, where: Market
) -> dict[str, Any]:
    listing_id = text(listing.get("id"))
    if not listing_id:
        return {}
    price = listing_money(listing.get("listing_price"), where)
    seller = listing.get("marketplace_listing_seller") or {}
    image = ((listing.get("primary_listing_photo") or {}).get("image") or {}).get("uri")
    return {
        "url": listing_url(response, listing_id),
        "listing_id": listing_id,
        "title": text(listing.get("marketplace_listing_title")),
        "price": price.amount,
        "currency": price.currency,
        "location_name": location_name(listing),
        "seller_id": text(seller.get("id")),
        "seller_name": text(seller.get("name")),
        "images": [image] if image else None,
        "is_sold": listing.get("is_sold") if isinstance(listing.get("is_sold"), bool) else None,
    }


def pagination_query(response: TextResponse) -> dict[str, Any] | None:
    """The search query to page with: its doc_id and variables, and the fb_dtsg token."""
    token = _DTSG.search(response.text)
    for blob in response.xpath('//script[@type="application/json"]/text()').getall():
        if "expectedPreloaders" not in blob:
            continue
        try:
            data = json.loads(blob)
        except ValueError:
            continue
        for preloaders in find_key(data, "expectedPreloaders"):
            for preloader in preloaders if isinstance(preloaders, list) else []:
                if not isinstance(preloader, dict):
                    continue
                if _SEARCH_PRELOADER.search(str(preloader.get("preloaderID") or "")):
                    return {
                        "doc_id": str(preloader.get("queryID")),
                        "variables": preloader.get("variables") or {},
                        "fb_dtsg": token.group(1) if token else None,
                        # The continuation is JSON: its prices are read in the page's locale.
                        "locale": page_locale(response),
                    }
    return None


def extract_item(response: TextResponse) -> dict[str, Any]:
    match = _ITEM_ID.search(response.url)
    # Several preloaded queries describe the listing (details, media viewer, seller...):
    # each carries part of it, so their targets are merged, first value wins.
    target: dict[str, Any] = {}
    for blob in relay_blobs(response):
        for page in find_key(blob, "marketplace_product_details_page"):
            part = page.get("target") if isinstance(page, dict) else None
            if not isinstance(part, dict):
                continue
            if match and part.get("id") and str(part["id"]) != match.group(1):
                continue  # another listing (recommendations)
            for key, value in part.items():
                if target.get(key) in (None, "", [], {}):
                    target[key] = value
    title_tag = _TITLE.match(response.css("title::text").get() or "")
    if not target:
        # Without the data only the page title is left: enough to know the listing.
        return {
            "listing_id": match.group(1) if match else None,
            "title": title_tag.group(1) if title_tag else None,
        }
    price = listing_money(target.get("listing_price"), locale_market(page_locale(response)))
    location = target.get("location") or target.get("item_location") or {}
    lat, lon = coordinate(location.get("latitude")), coordinate(location.get("longitude"))
    seller = target.get("marketplace_listing_seller") or {}
    actor = first(((target.get("story") or {}).get("actors")) or []) or {}
    created = target.get("creation_time")
    photos = [
        (p.get("image") or {}).get("uri")
        for p in target.get("listing_photos") or []
        if isinstance(p, dict)
    ]
    photos.append(
        ((target.get("primary_listing_photo") or {}).get("listing_image") or {}).get("uri")
    )
    return {
        "listing_id": text(target.get("id")) or (match.group(1) if match else None),
        "title": text(target.get("marketplace_listing_title"))
        or (title_tag.group(1) if title_tag else None),
        "price": price.amount,
        "currency": price.currency,
        "condition": condition(target),
        "category": listing_category(target),
        "location_name": location_name(target),
        "location": GeoPoint(lat=lat, lon=lon) if lat is not None and lon is not None else None,
        "seller_id": text(seller.get("id")) or text(actor.get("id")),
        "seller_name": text(seller.get("name")) or text(actor.get("name")),
        "description": long_text((target.get("redacted_description") or {}).get("text")),
        "images": unique(photos) or None,
        "listed_at": dt.datetime.fromtimestamp(created, dt.UTC).isoformat()
        if isinstance(created, int | float)
        else None,
        "is_sold": target.get("is_sold") if isinstance(target.get("is_sold"), bool) else None,
    }


# Where a listing names its category, most precise first: the name beside the category id
# (items; rentals carry it in the logged-out renderable), the category object, the
# virtual-taxonomy leaf, the SEO taxonomy path's last entry.
_CATEGORY_NAMES = ("marketplace_listing_category_name", "marketplace_listing_leaf_vt_category_name")
# Parts of a listing that describe other things (the seller, its story, recommendations).
_NOT_THE_LISTING = ("marketplace_listing_seller", "story", "related_listings", "parent_listing")


def listing_category(target: dict[str, Any]) -> str | None:
    """The listing's category name, for every listing kind (an item, a vehicle, a rental):
    a ``*category_name`` key of the listing or of its logged-out renderable, else the name
    of its ``marketplace_listing_category``, else its SEO taxonomy path's last entry."""
    own = {k: v for k, v in target.items() if k not in _NOT_THE_LISTING}
    for key in _CATEGORY_NAMES:
        for value in find_key(own, key, limit=5_000):
            if name := text(value) if isinstance(value, str) else None:
                return name
    for value in find_key(own, "marketplace_listing_category", limit=5_000):
        if isinstance(value, dict) and (name := text(value.get("name"))):
            return name
    for value in find_key(own, "seo_virtual_category", limit=5_000):
        path = value.get("taxonomy_path") if isinstance(value, dict) else None
        names = [text(p.get("name")) for p in path or [] if isinstance(p, dict)]
        if names := [n for n in names if n]:
            return names[-1]
    return None


def listing_money(price: Any, where: Market) -> Money:
    """A listing's ``listing_price``: its exact ``amount``, in the ``currency`` it states,
    else the one its formatted amount's sign names in the viewer's locale (``$200``)."""
    if not isinstance(price, dict):
        return Money(None, None)
    printed = price.get("formatted_amount_zeros_stripped") or price.get("formatted_amount")
    found = money(printed if printed else price.get("amount"), price.get("currency"), where)
    amount = to_float(price.get("amount"))
    return Money(amount if amount is not None else found.amount, found.currency)


def condition(target: dict[str, Any]) -> str | None:
    """The listing's condition as a keyword: an item's "Condition" attribute
    (``used_good``), else a vehicle's ``vehicle_condition`` (``VERY_GOOD`` ->
    ``very_good``), else the listing's own ``condition`` (``USED`` -> ``used``)."""
    for attribute in target.get("attribute_data") or []:
        if not isinstance(attribute, dict):
            continue
        value = _keyword(attribute.get("value"))
        named = str(attribute.get("attribute_name") or "").strip().lower() == "condition"
        if value and (named or _CONDITION_VALUE.match(value)):
            return value
    return _keyword(target.get("vehicle_condition")) or _keyword(target.get("condition"))


def _keyword(value: Any) -> str | None:
    value = text(value)
    return re.sub(r"[\s-]+", "_", value.lower()) if isinstance(value, str) else None


def location_name(listing: dict[str, Any]) -> str | None:
    """The place a listing names: its ``location_text`` ("Houston, TX"), else the city and
    state its location is reverse-geocoded to (rentals name no location_text), else a
    rental's street (``home_address``)."""
    shown = listing.get("location_text")
    if isinstance(shown, dict) and text(shown.get("text")):
        return text(shown.get("text"))
    places = [listing.get("location"), listing.get("item_location")]
    for key in ("reverse_geocode", "reverse_geocode_detailed"):
        # The listing's own location first, then one any part of the listing carries.
        geos = [p.get(key) for p in places if isinstance(p, dict)] + list(find_key(listing, key))
        for geo in geos:
            if isinstance(geo, dict) and (name := _city_state(geo)):
                return name
    home = listing.get("home_address")
    return text(home.get("street")) if isinstance(home, dict) else None


def _city_state(geo: dict[str, Any]) -> str | None:
    """ "Houston, TX"; else the city page's name ("Houston, Texas")."""
    city, state = text(geo.get("city")), text(geo.get("state"))
    page = geo.get("city_page")
    shown = text(page.get("display_name")) if isinstance(page, dict) else None
    return ", ".join(p for p in (city, state) if p) or shown
