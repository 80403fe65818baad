"""idealista: property listings from search result pages and their detail pages.

``scrapy crawl idealista -O listings.jsonl [-a base_url=http://127.0.0.1:8012]``

Start entries are search result pages (the profile's ``start_paths``: an operation, a
property kind and an area, e.g. ``/en/venta-viviendas/madrid/barrio-de-salamanca/``).
Each result card links a detail page (``/inmueble/<id>/``, ``/imovel/<id>/`` on .pt);
the card's own fields (price, rooms, size, floor, title, agency logo, features) travel
with the request and fill what the detail page lacks. Cards are the same markup on
idealista.com (Spanish UI, seen 2025) and idealista.pt (seen 2025); only the words differ.
Pagination: ``.pagination li.next a`` up to ``MAX_LISTING_PAGES``.

Detail pages carry their data in inline scripts, not JSON-LD: ``var config`` (property
id, operation, typology), ``var adDetail.headerFeatures`` (price, area, rooms, floor),
``var adMultimediasInfo`` (photos) and ``var mapConfig`` (coordinates, often hidden).
The visible markup (``.info-data-price``, ``.info-features``, ``.details-property_features``,
``#headerMap``, ``.professional-name``, ``.comment``) is the fallback, field by field.
Photos: every photo of the listing once (by idealista's photo id), the scripts' gallery
first, then the page's gallery markup (first picture, carousel, slides of older layouts
with ``data-ondemand-img``), then ``og:image``; absolute URLs.

The place: idealista.com's title line (``.main-info__title-minor``) ends with the
municipality ("Goya, Madrid"), idealista.pt's with the parish (freguesia: "Quinta da
Marinha, Cascais, Cascais e Estoril"). The location list (``#headerMap``) names every
level down to "<municipality>, <district>" on .pt ("Cascais, Lisboa") and "<area>,
<province>" on .com ("Madrid city, Madrid"): a .pt city is the municipality from it,
never the parish; without the list (a slimmer page) a .pt page names no city.

idealista is behind DataDome: a plain client gets its CAPTCHA page (``captcha-delivery.com``),
which the fetch middleware classifies and retries through another proxy.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlparse

import scrapy
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import GeoPoint, PropertyListing
from crawlers.recrawl.cards import Card
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.common import (
    ProductionSpider,
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

LISTING_FIELDS = ("price", "area_m2", "rooms", "address", "city", "description")
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
_RENT_WORDS = ("for rent", "alquiler", "arrendar", "affitto", "to let")
_SALE_WORDS = ("for sale", "venta", "à venda", "venda", "vendita")
# Feature lines -> keywords (English, Spanish, Portuguese, Italian UIs).
_FEATURE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lift", ("with lift", "con ascensor", "com elevador", "ascensore", "lift")),
    ("terrace", ("terrace", "terraza", "terraço", "terrazzo")),
    ("balcony", ("balcony", "balcón", "varanda", "balcone")),
    ("air_conditioning", ("air conditioning", "aire acondicionado", "ar condicionado")),
    ("swimming_pool", ("swimming pool", "piscina")),
    ("garden", ("garden", "jardín", "jardim", "giardino")),
    ("parking", ("parking", "garaje", "garagem", "garage", "box auto")),
    ("storage_room", ("storage room", "trastero", "arrecadação", "cantina")),
    ("fitted_wardrobes", ("fitted wardrobes", "armarios empotrados", "roupeiros")),
    ("heating", ("heating", "calefacción", "aquecimento", "riscaldamento")),
    ("furnished", ("furnished", "amueblado", "mobilado", "arredato")),
    ("new_development", ("new development", "obra nueva", "empreendimento")),
)
# A floor line, on cards ("Planta 3ª exterior con ascensor", "Bajo", " sin ascensor",
# "1º andar com elevador", "Rés do chão") and detail pages ("5th floor exterior with lift"):
# the level, then what idealista shows after it (its own data calls that part subText).
_FLOOR_LEVEL = re.compile(
    r"\b(?:planta|entreplanta|bajo|s[óo]tano|semis[óo]tano|semi-s[óo]tano|principal|"
    r"floor|ground|basement|mezzanine|andar|r[ée]s[- ]do[- ]ch[ãa]o|cave|sobreloja|"
    r"piano|seminterrato|baixos|entresol)\b",
    re.IGNORECASE,
)
_FLOOR_QUALIFIER = re.compile(
    r"\b(?:exterior|interior|(?:con|sin|com|sem|with|without|amb|sense|senza)\s+"
    r"(?:ascensor|ascensore|elevador|lift))\b",
    re.IGNORECASE,
)
_WITH_LIFT = re.compile(r"\b(?:con|com|with|amb)\s+(?:ascensore?|elevador|lift)\b", re.IGNORECASE)


class IdealistaSpider(ProductionSpider):
    name = "idealista"

    async def parse(
        self, response: Response, **kwargs: Any
    ) -> AsyncIterator[scrapy.Request | ItemSeen]:
        """A search result page: every listing's detail page (a listing whose card is as
        at its last full fetch is seen, not fetched: ``cards_to_fetch``), then the next
        page."""
        if not isinstance(response, TextResponse):
            self.fail(response, "search", "not a text response")
            return
        cards = extract_search_cards(response, self.settings.get("SITE_COUNTRY"))
        if not cards:
            self.fail(response, "search", "no listing cards")
        details = [
            Card(
                response.follow(
                    card["url"],
                    callback=self.parse_listing,
                    errback=self.on_detail_error,
                    cb_kwargs={"card": card},
                ),
                card,
            )
            for card in cards
        ]
        for output in await self.cards_to_fetch(response, details, PropertyListing):
            yield output
        number = int(response.meta.get("listing_page", 1))
        next_url = next_page_url(response)
        if next_url and number < self.max_pages:
            yield response.follow(
                next_url,
                callback=self.parse,
                errback=self.on_error,
                meta={"listing_page": number + 1},
            )

    def parse_listing(
        self, response: Response, card: dict[str, Any] | None = None
    ) -> Iterator[PropertyListing]:
        if not isinstance(response, TextResponse):
            self.fail(response, "detail", "not a text response")
            return
        fields = extract_listing(response, self.settings.get("SITE_COUNTRY"))
        if fields["price"] is None and fields["title"] is None:
            self.fail(response, "detail", "no listing data on the page")
            return
        for name, value in (card or {}).items():
            if fields.get(name) in (None, "", []) and name in fields:
                fields[name] = value  # the search card knew it
            elif name == "features" and value:
                fields[name] = unique([*fields[name], *value])  # both pages' keywords
        self.note_missing(response.url, fields, LISTING_FIELDS)
        self.count("listings")
        yield PropertyListing(**fields)

    def on_detail_error(self, failure: Failure) -> Iterator[scrapy.Request | PropertyListing]:
        """The detail page again later in the job; once its rounds are spent, what the
        search card showed, marked incomplete."""
        request = failure.request  # type: ignore[attr-defined]
        self.logger.warning("detail page failed: %s (%s)", request.url, failure.getErrorMessage())
        self.count("detail_page_failed")
        retry = self.retry_part(request, "detail_page", failure)
        if retry is not None:
            yield retry
            return
        card = request.cb_kwargs.get("card") or {}
        known = {name: value for name, value in card.items() if name in _LISTING_FIELD_NAMES}
        yield PropertyListing(**known, incomplete=["detail_page"])


_LISTING_FIELD_NAMES = frozenset(field.name for field in dataclasses.fields(PropertyListing))


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


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
        floor, floor_features = _floor_line(details)
        extras = [css_text(e, "::text") for e in article.css(".item-parking, .item-ribbon")]
        features = unique([*floor_features, *_features([e for e in extras if e])])
        cards.append(
            {
                "url": url,
                "listing_id": listing_id,
                "title": title,
                "price": price.amount,
                "currency": price.currency,
                "area_m2": _area(details),
                "rooms": _rooms(details),
                "floor": floor,
                "features": features or None,
                "description": long_text(css_text(article, ".item-description ::text")),
                # The advertiser's logo: its link's title, else the image's alt text.
                "agency": text(article.css(".logo-branding a::attr(title)").get())
                or text(article.css(".logo-branding img::attr(alt)").get()),
            }
        )
    return cards


def next_page_url(response: TextResponse) -> str | None:
    href = response.css(".pagination li.next a::attr(href)").get()
    href = href or response.css('link[rel="next"]::attr(href)').get()
    return response.urljoin(href) if href else None


def extract_listing(response: TextResponse, default_country: str | None = None) -> dict[str, Any]:
    """A detail page's fields: inline scripts first, then the visible markup.

    The country comes from the domain (idealista.com is Spain); ``default_country``
    answers for a host that says nothing (a replay on loopback).
    """
    scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    config = {name: _match(pattern, scripts) for name, pattern in _CONFIG.items()}
    header = _header_features(scripts)
    title = css_text(response, ".main-info__title-main::text") or _script_title(scripts)
    minor = css_text(response, ".main-info__title-minor::text")
    places = [text(t) for t in response.css("#headerMap li::text").getall()]
    places = [p for p in places if p]
    # The amount with the sign the page prints beside it ("1,250,000" "€").
    price_text = " ".join(
        filter(None, (header.get("PRICE"), _header_features(scripts, "subText").get("PRICE")))
    ) or css_text(response, ".info-data-price ::text")
    info = [text(t) for t in response.css(".info-features span::text").getall()]
    lines = [text(t) for t in response.css(".details-property_features li ::text").getall()]
    lines = [line for line in lines if line]
    listing_id = config["listing_id"] or _id_from(response)
    country = site_country(response, default_country)
    price = money(price_text, where=market(country=country))
    neighbourhood, city, region = _place(minor, places, country)
    latitude, longitude = coordinate(config["latitude"]), coordinate(config["longitude"])
    fields: dict[str, Any] = {
        "url": _canonical(response, listing_id),
        "listing_id": listing_id,
        "title": title,
        "operation": _operation(config["operation"], title),
        "property_type": _property_type(config["typology"], title),
        "price": price.amount,
        "currency": price.currency,
        "price_per_m2": to_float(
            css_text(response, ".squaredmeterprice .flex-feature-details::text")
        ),
        "area_m2": to_float(header.get("CONSTRUCTED_AREA")) or _area(info + lines),
        "rooms": to_int(header.get("ROOM_NUMBER")) if "ROOM_NUMBER" in header else _rooms(info),
        "bathrooms": _bathrooms(lines),
        "floor": header.get("FLOOR_NUMBER") or _floor_line(info)[0],
        "address": places[0] if places else _street(title),
        "neighbourhood": neighbourhood,
        "city": city,
        "region": region,
        "country": country,
        "location": GeoPoint(lat=latitude, lon=longitude)
        if latitude is not None and longitude is not None
        else None,
        "description": long_text("\n".join(response.css(".comment p ::text").getall())),
        "features": _features(lines) or None,
        "images": _photos(response, scripts),
        "agency": text(response.css('input[name="user-name"]::attr(value)').get())
        or css_text(response, ".professional-name span::text")
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


def _operation(value: str | None, title: str | None) -> str | None:
    if value in ("sale", "rent"):
        return value
    lowered = (title or "").lower()
    if any(word in lowered for word in _RENT_WORDS):
        return "rent"
    if any(word in lowered for word in _SALE_WORDS):
        return "sale"
    return None


def _property_type(typology: str | None, title: str | None) -> str | None:
    # typology is coarse ("home" covers flats, duplexes, houses): the title's first word
    # names the kind ("Duplex for sale in ...", "Apartamento t3 à venda ...").
    kind = (title or "").split(" ")[0].lower() if title else None
    if typology and typology != "home":
        return typology
    return kind or typology


def _street(title: str | None) -> str | None:
    for marker in (" in ", " en ", " na ", " no ", " in via "):
        if title and marker in title:
            return title.rsplit(marker, 1)[1].strip()
    return None


def _area(values: list[str | None]) -> float | None:
    for value in values:
        if value and "m²" in value:
            return to_float(value)
    return None


def _rooms(values: list[str | None]) -> int | None:
    for value in values:
        if not value:
            continue
        lowered = value.lower()
        if re.fullmatch(r"t\d+", lowered):  # Portugal: T3 = three bedrooms
            return int(lowered[1:])
        if any(w in lowered for w in ("bed", "hab", "quarto", "locali", "room")):
            return to_int(value)
    return None


def _bathrooms(lines: list[str]) -> int | None:
    for line in lines:
        lowered = line.lower()
        if any(
            w in lowered for w in ("bathroom", "baño", "casa de banho", "casas de banho", "bagn")
        ):
            return to_int(line)
    return None


def _floor_line(values: list[str | None]) -> tuple[str | None, list[str]]:
    """The first floor line's level as shown ("Planta 3ª", "Bajo", "1º andar"; None when
    the line names none, as " exterior con ascensor" does) and its feature keywords:
    "exterior" and "lift" (idealista's own search filters); "interior" and "sin ascensor"
    add none."""
    for value in values:
        if not value or not (_FLOOR_LEVEL.search(value) or _FLOOR_QUALIFIER.search(value)):
            continue
        qualifier = _FLOOR_QUALIFIER.search(value)
        level = text(value[: qualifier.start()] if qualifier else value)
        rest = value[qualifier.start() :] if qualifier else ""
        features = ["exterior"] if re.search(r"\bexterior\b", rest, re.IGNORECASE) else []
        if _WITH_LIFT.search(rest):
            features.append("lift")
        return level, features
    return None, []


def _features(lines: list[str]) -> list[str]:
    found = []
    for line in lines:
        lowered = line.lower()
        if lowered.startswith(("without", "sin ", "sem ", "senza")):
            continue
        for keyword, words in _FEATURE_WORDS:
            if any(word in lowered for word in words) and keyword not in found:
                found.append(keyword)
    return found
