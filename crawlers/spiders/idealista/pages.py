"""idealista's search result cards and detail pages, read (pure functions: tests feed
them saved pages)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlparse

from scrapy.http import TextResponse

from crawlers.items import GeoPoint
from crawlers.profiles import PageSelectors
from crawlers.spiders.base import page_selectors
from crawlers.spiders.common import (
    absolute,
    coordinate,
    css_text,
    long_text,
    money,
    text,
    to_float,
    to_int,
    unique,
)
from crawlers.spiders.currency import market
from crawlers.spiders.idealista import words

SITE = "idealista"
_ID_IN_PATH = re.compile(r"/(?:inmueble|imovel|immobile)/(\d+)")
_CONFIG = {
    "listing_id": re.compile(r"\bpropertyId:\s*'?(\d+)"),
    "operation": re.compile(r"\boperation:\s*'(\w+)'"),
    "typology": re.compile(r"\btypology:\s*'(\w+)'"),
    "latitude": re.compile(r"\blatitude:\s*'(-?[\d.]+)'"),
    "longitude": re.compile(r"\blongitude:\s*'(-?[\d.]+)'"),
}
# A gallery photo in the scripts (``imageDataService:"https://..."``; JSON-escaped slashes
# on some pages).
_IMAGE = re.compile(r"""["']?imageDataService["']?\s*:\s*["']((?:https?:)?\\?/\\?/[^"']+)["']""")
# The page's gallery markup, every layout: the first picture and the phone carousel
# (2025), the slides of older pages (``img.detail-image-gallery``, ``data-ondemand-img``).
# A video's or a 3D tour's poster (``play-layer__thumbnail``) is no photo of the listing.
_GALLERY = (".main-image", ".carousel-gallery", "#main-multimedia", ".placeholder-multimedia")
_GALLERY_IMAGES = ", ".join(
    [*(f"{g} img:not(.play-layer__thumbnail)" for g in _GALLERY), "img.detail-image-gallery"]
)
_GALLERY_SOURCES = ", ".join(f"{g} source" for g in _GALLERY)
# Any other picture of the page in a detail size (WEB_DETAIL*: listing cards of other
# listings are WEB_LISTING), outside other listings' cards.
_DETAIL_SIZED = (
    "//*[self::img or self::source][not(ancestor::article)]"
    "[@*[contains(., '/WEB_DETAIL') and not(starts-with(., 'data:'))]]"
)
_IMAGE_ATTRIBUTES = ("data-ondemand-img", "data-service", "data-src", "src", "srcset")
# idealista's photo id: the file name of every size and format of one photo
# (.../WEB_DETAIL/0/id.pro.es.image.master/c0/ac/cc/1382500227.jpg).
_PHOTO_ID = re.compile(r"/(\d{5,})\.(?:jpe?g|webp|png|gif)(?:[?#]|$)", re.IGNORECASE)
_FEATURES = re.compile(r"\bheaderFeatures:\s*")
# Country of each idealista domain (listings carry no country field).
_COUNTRY = {"com": "ES", "pt": "PT", "it": "IT"}


def site_country(response: TextResponse, default_country: str | None = None) -> str | None:
    """The country of an idealista domain (idealista.com is Spain); ``default_country``
    answers for a host that says nothing (a replay on loopback)."""
    host = urlparse(response.url).hostname or ""
    return next(
        (c for tld, c in _COUNTRY.items() if host.endswith(f"idealista.{tld}")), default_country
    )


def extract_search_cards(
    response: TextResponse, default_country: str | None = None
) -> list[dict[str, Any]]:
    """One dict per result card: its detail URL, id and what the card shows."""
    where = market(country=site_country(response, default_country))
    cards = []
    for article in response.css("article.item"):
        href = article.css("a.item-link::attr(href)").get()
        if not href:
            continue  # advertising slots share the article markup
        url = response.urljoin(href)
        match = _ID_IN_PATH.search(urlparse(url).path)
        listing_id = article.attrib.get("data-element-id") or (match.group(1) if match else None)
        # The first price only: a reduced price shows the old one beside it.
        price = money(css_text(article.css(".item-price")[:1], "::text"), where=where)
        details = [css_text(detail, "::text") for detail in article.css(".item-detail")]
        title = text(article.css("a.item-link::attr(title)").get()) or css_text(
            article, "a.item-link::text"
        )
        floor, floor_features = words.floor_line(details)
        extras = [css_text(e, "::text") for e in article.css(".item-parking, .item-ribbon")]
        features = unique([*floor_features, *words.features([e for e in extras if e])])
        cards.append(
            {
                "url": url,
                "listing_id": listing_id,
                "title": title,
                "price": price.amount,
                "currency": price.currency,
                "area_m2": words.area(details),
                "rooms": words.rooms(details),
                "floor": floor,
                "features": features or None,
                "description": long_text(css_text(article, ".item-description ::text")),
                # The advertiser's logo: its link's title, else the image's alt text.
                "agency": text(article.css(".logo-branding a::attr(title)").get())
                or text(article.css(".logo-branding img::attr(alt)").get()),
            }
        )
    return cards


def next_page_url(response: TextResponse, selectors: PageSelectors | None = None) -> str | None:
    """The next search page: the profile's ``next_page`` link, else ``<link rel=next>``."""
    search = page_selectors(SITE, "search", selectors)
    href = response.css(f"{search['next_page']}::attr(href)").get()
    href = href or response.css('link[rel="next"]::attr(href)').get()
    return response.urljoin(href) if href else None


def extract_listing(
    response: TextResponse,
    default_country: str | None = None,
    selectors: PageSelectors | None = None,
) -> dict[str, Any]:
    """A detail page's fields: inline scripts first, then the visible markup (the
    profile's ``detail`` selectors; default: the shipped profile's).

    The country comes from the domain (idealista.com is Spain); ``default_country``
    answers for a host that says nothing (a replay on loopback).
    """
    shown = page_selectors(SITE, "detail", selectors)
    scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    config = {name: _match(pattern, scripts) for name, pattern in _CONFIG.items()}
    header = _header_features(scripts)
    title = css_text(response, f"{shown['title']}::text") or _script_title(scripts)
    minor = css_text(response, f"{shown['location_minor']}::text")
    places = [
        place for t in response.css(f"{shown['location']}::text").getall() if (place := text(t))
    ]
    # The amount with the sign the page prints beside it ("1,250,000" "€").
    price_text = " ".join(
        filter(None, (header.get("PRICE"), _header_features(scripts, "subText").get("PRICE")))
    ) or css_text(response, f"{shown['price']} ::text")
    info = [text(t) for t in response.css(f"{shown['info_features']}::text").getall()]
    lines = [
        line for t in response.css(f"{shown['feature_lists']} ::text").getall() if (line := text(t))
    ]
    listing_id = config["listing_id"] or _id_from(response)
    country = site_country(response, default_country)
    price = money(price_text, where=market(country=country))
    neighbourhood, city, region = _place(minor, places, country)
    latitude, longitude = coordinate(config["latitude"]), coordinate(config["longitude"])
    fields: dict[str, Any] = {
        "url": _canonical(response, listing_id),
        "listing_id": listing_id,
        "title": title,
        "operation": words.operation(config["operation"], title),
        "property_type": words.property_type(config["typology"], title),
        "price": price.amount,
        "currency": price.currency,
        "price_per_m2": to_float(
            css_text(response, ".squaredmeterprice .flex-feature-details::text")
        ),
        "area_m2": to_float(header.get("CONSTRUCTED_AREA")) or words.area([*info, *lines]),
        "rooms": to_int(header.get("ROOM_NUMBER"))
        if "ROOM_NUMBER" in header
        else words.rooms(info),
        "bathrooms": words.bathrooms(lines),
        "floor": header.get("FLOOR_NUMBER") or words.floor_line(info)[0],
        "address": places[0] if places else words.street(title),
        "neighbourhood": neighbourhood,
        "city": city,
        "region": region,
        "country": country,
        "location": GeoPoint(lat=latitude, lon=longitude)
        if latitude is not None and longitude is not None
        else None,
        "description": long_text(
            "\n".join(response.css(f"{shown['description']} ::text").getall())
        ),
        "features": words.features(lines) or None,
        "images": _photos(response, scripts),
        "agency": text(response.css('input[name="user-name"]::attr(value)').get())
        or css_text(response, f"{shown['advertiser']} span::text")
        or css_text(response, ".advertiser-name::text"),
    }
    return fields


def _place(
    minor: str | None, places: list[str], country: str | None
) -> tuple[str | None, str | None, str | None]:
    """(neighbourhood, city, region) from the title line and the location list.

    The title line's first part is the neighbourhood. On idealista.pt its last part is
    the parish (freguesia) and the municipality is the first part of the list's entry
    after the parish ("Cascais, Lisboa"; else of its last entry); elsewhere the title
    line's last part is the municipality. The region is the last entry's last part (the
    province, the district)."""
    parts = [p.strip() for p in (minor or "").split(",") if p.strip()]
    neighbourhood = parts[0] if parts else None
    region = places[-1].split(",")[-1].strip() if len(places) > 1 else None
    if country != "PT":
        return neighbourhood, parts[-1] if len(parts) > 1 else None, region
    if len(places) < 2:
        return neighbourhood, None, region  # the parish alone is no city
    parish = parts[-1] if parts else None
    after = [places[i + 1] for i, p in enumerate(places[:-1]) if parish and p == parish]
    municipality = (after[0] if after else places[-1]).split(",")[0].strip()
    return neighbourhood, municipality or None, region


def _photos(response: TextResponse, scripts: str) -> list[str] | None:
    """Every photo of the listing once, by idealista's photo id (each size and format of
    a photo shares it): the scripts' gallery, the gallery markup (``<img>`` before the
    ``<source>`` formats of one picture), any other detail-sized picture, ``og:image``.
    From the markup and the meta tag only photo files count (not a logo, a spinner)."""
    photos: dict[str, str] = {}

    def add(value: str | None, markup: bool) -> None:
        url = absolute(response, value)
        if not url or url.startswith("data:"):
            return
        photo = _PHOTO_ID.search(url)
        if photo or not markup:
            photos.setdefault(photo.group(1) if photo else url, url)

    for url in _IMAGE.findall(scripts):
        add(url.replace("\\/", "/"), markup=False)
    galleries = [response.css(_GALLERY_IMAGES), response.css(_GALLERY_SOURCES)]
    for elements in [*galleries, response.xpath(_DETAIL_SIZED)]:
        for element in elements:
            for attribute in _IMAGE_ATTRIBUTES:
                value = (element.attrib.get(attribute) or "").strip()
                if attribute == "srcset":  # "url 1x, url 2x": the first candidate
                    value = value.split(",")[0].strip().split(" ")[0]
                if value and not value.startswith("data:"):
                    add(value, markup=True)
                    break
    add(response.css('meta[property="og:image"]::attr(content)').get(), markup=True)
    return list(photos.values()) or None


def _match(pattern: re.Pattern[str], source: str) -> str | None:
    found = pattern.search(source)
    return found.group(1) if found else None


def _header_features(scripts: str, part: str = "text") -> dict[str, str]:
    """``adDetail.headerFeatures``: a JSON array inside the script, by feature name: each
    feature's ``text`` ("1,250,000"), or its ``subText`` ("€")."""
    found = _FEATURES.search(scripts)
    if not found:
        return {}
    try:
        entries, _ = json.JSONDecoder().raw_decode(scripts, found.end())
    except ValueError:
        return {}
    features = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("featureName") and entry.get(part):
            features[str(entry["featureName"])] = str(entry[part])
    return features


def _script_title(scripts: str) -> str | None:
    found = re.search(r"\bheaderTitle:\s*'((?:[^'\\]|\\.)*)'", scripts)
    return text(found.group(1).replace("\\'", "'")) if found else None


def _id_from(response: TextResponse) -> str | None:
    for url in (response.url, response.css('link[rel="canonical"]::attr(href)').get() or ""):
        match = _ID_IN_PATH.search(urlparse(url).path)
        if match:
            return match.group(1)
    return None


def _canonical(response: TextResponse, listing_id: str | None) -> str:
    canonical = response.css('link[rel="canonical"]::attr(href)').get()
    return response.urljoin(canonical) if canonical else response.url
