"""booking.com: hotels of monitored destinations, with score, reviews, address and price.

``scrapy crawl booking_com -O hotels.jsonl [-a base_url=http://127.0.0.1:8015]``

Start entries are dated search result pages: the profile's ``start_paths`` carry
``{checkin}``/``{checkout}`` placeholders, filled when the request is built (today +
``BOOKING_CHECKIN_DAYS_AHEAD``, for ``BOOKING_NIGHTS``), so every run prices the same
kind of stay.

Search pages: every property card (``[data-testid=property-card]``) is a result, merged
with the page's embedded data (the Apollo store, ``<script data-capla-store-data=
"apollo">``: ``ROOT_QUERY.searchQueries.search(...)`` with ``results[]`` and
``pagination``) by hotel page path, so a property is yielded once. The store holds the
first page of results only, while a page rendered after "load more" shows many more
cards: those are results too (``booking_com/cards_beyond_store``). Each result is
followed to its hotel page; if that page fails, the search result is yielded alone,
marked incomplete, never dropped.

Hotel pages (seen: a 2026 page and a 2016-18 one): each field from the most precise
layer that has it (``_HOTEL_SOURCES``): the page's Apollo store (``BasicPropertyData``,
``PropertyReview``, ``StarRating``, ``HotelTranslation``, ``AccommodationPhoto``), JSON-LD
``Hotel``, the visible blocks (``data-testid``), the inline variables (``b_hotel_id``,
the tracking data layer's ``city_name``/``hotel_class``, ``b_map_center_*``) and the old
layout (``#hp_hotel_name``, ``#hp_address_subtitle``, ``#js--hp-gallery-scorecard``).
JSON-LD's ``addressLocality`` is never the city: booking.com puts the street there.
A price only on a page loaded for dates (``b_checkin_date``): the cheapest room of the
room table (``#hprt-table``, ASSUMED: the saved pages are undated).

Pagination: the next ``offset`` is this one plus the results the page showed, its
cards (the store's results when it shows none), while below ``nbResultsTotal``; else a
``[data-testid=pagination-next]`` link (ASSUMED: no saved page has one).

Prices are in the currency the visitor selected (``selected_currency`` in the URL, the
page's ``b_selected_currency``), printed as the page's language prints it (``<html
lang>``): that is the market every price on a page is read in (``page_market``), so a
card outside the store printing ``Rp 1.234.567`` is IDR, and a bare ``$`` on a Spanish
page showing pesos is MXN.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import scrapy
from scrapy import Request
from scrapy.http import Response, TextResponse
from scrapy.selector import Selector, SelectorList
from twisted.python.failure import Failure

from crawlers.items import GeoPoint, Hotel
from crawlers.spiders.common import (
    Money,
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
from crawlers.spiders.currency import Market, currency_code, market

HOTEL_FIELDS = ("name", "address", "review_score", "review_count", "price")
_APOLLO = '//script[@data-capla-store-data="apollo"]/text()'
# The page's application context: its language and display currency, among others.
_CONTEXT = "//script[@data-capla-application-context]/text()"
_HOTEL_ID = re.compile(r"\bb_hotel_id\s*[:=]\s*'?(\d+)")
_LAT = re.compile(r"\bb_map_center_latitude\s*[:=]\s*'?(-?[\d.]+)")
_LON = re.compile(r"\bb_map_center_longitude\s*[:=]\s*'?(-?[\d.]+)")
_STARS = re.compile(r"ratings_stars_(\d)")
# The stay a hotel page was loaded for: empty strings on a page loaded without dates.
_PAGE_DATE = re.compile(r"\bb_check(in|out)_date\s*[:=]\s*'([^']*)'")
# The tracking data layer both layouts print (``city_name: 'Mumbai'``, ``hotel_class: 5``)
# and the accommodation type of the page.
_LAYER = re.compile(r"(?<![\w.\"'{])(city_name|hotel_class|atid|b_acc_type)\s*:\s*'?([^',\n]*)")
# The currency the visitor selected, as both layouts' inline variables state it.
_SELECTED_CURRENCY = re.compile(r"\bb_selected_currency\s*[:=]\s*['\"]([A-Za-z]{3})['\"]")
# The page's language in its path: searchresults.en-gb.html, /hotel/mx/hb-express.es.html.
_PATH_LANGUAGE = re.compile(r"\.([a-z]{2}(?:-[a-z]{2,4})?)\.html$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_PHOTO_ID = re.compile(r"/(\d+)\.(?:jpe?g|webp|png)\b", re.IGNORECASE)
# /hotel/mx/hb-express.es.html -> /hotel/mx/hb-express.html: one URL per hotel whatever
# the language of the page that linked it (store results are built without one).
_LANGUAGE = re.compile(r"^(/hotel/[a-z]{2}/[^/]+?)\.[a-z]{2}(?:-[a-z]{2,4})?(\.html)$")
_PHOTO_SIZES = ("max1024x768", "max500", "max300", "max200")
# ASSUMED (the saved hotel pages are undated): the room table of a dated page.
_ROOM_PRICE = "#hprt-table .bui-price-display__value, #hprt-table .prco-valign-middle-helper"
_CDN = "https://cf.bstatic.com"
# booking.com accommodation type ids (``accommodationTypeId``, ``b_acc_type``, ``atid``);
# the ones not listed stay unnamed rather than guessed.
_TYPES = {
    201: "apartment",
    203: "hostel",
    204: "hotel",
    205: "motel",
    206: "resort",
    208: "bed_and_breakfast",
    213: "villa",
    216: "guest_house",
    219: "aparthotel",
    220: "holiday_home",
    222: "homestay",
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
        if page["cards_only"]:
            self.count("cards_beyond_store", page["cards_only"])
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

    def parse_hotel(
        self, response: Response, partial: dict[str, Any] | None = None
    ) -> Iterator[Hotel]:
        # No partial: the hotel page alone, at its own URL (the structure gate judges it).
        partial = partial or {"url": response.url}
        fields = dict(partial)
        if isinstance(response, TextResponse):
            found = extract_hotel(response)
            if not found.get("name"):
                self.logger.warning("%s: hotel page unreadable, search data only", response.url)
                self.count("hotel_page_unparsed")
            fields = merge_hotel(partial, found)
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


# The hotel page is more precise than a search result for these: the street address (a
# card shows "district, city"), the property's own city (a card's location line may name
# the area around it), and what only the page has in full.
_PAGE_WINS = ("address", "city", "description", "amenities", "location", "images")
# A price belongs to its stay: taken, or not, together.
_STAY = ("price", "currency", "checkin", "checkout")


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == []


def merge_hotel(partial: dict[str, Any], page: dict[str, Any]) -> dict[str, Any]:
    """A search result completed by its hotel page. The search's price stays (it is the
    stay that was searched); a dated hotel page prices a result that had none."""
    fields = dict(partial)
    if _empty(fields.get("price")) and not _empty(page.get("price")):
        fields.update({name: page.get(name) for name in _STAY})
    for name, value in page.items():
        if name in _STAY or _empty(value):
            continue
        if _empty(fields.get(name)) or name in _PAGE_WINS:
            fields[name] = value
    return fields


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


def stay_of(url: str) -> tuple[str | None, str | None]:
    query = parse_qs(urlparse(url).query)
    return (query.get("checkin") or [None])[0], (query.get("checkout") or [None])[0]


def hotel_url(response: TextResponse, href: str, checkin: str | None, checkout: str | None) -> str:
    """The hotel page without tracking parameters nor language, with the search's stay."""
    parsed = urlparse(response.urljoin(href))
    query = {"checkin": checkin, "checkout": checkout} if checkin and checkout else {}
    path = _LANGUAGE.sub(r"\1\2", parsed.path)
    return urlunparse(parsed._replace(path=path, query=urlencode(query), fragment=""))


def page_market(response: TextResponse, scripts: str | None = None) -> Market:
    """The market a page's prices are read in: the currency the visitor selected and the
    language whose signs the page prints. Each from the first source that states it:
    the URL (``selected_currency``, ``lang``), the page (``b_selected_currency``, ``<html
    lang>``), the page's application context (``currency``, ``language``), the language
    in the page's path (``.en-gb.html``)."""
    parsed = urlparse(response.url)
    query = parse_qs(parsed.query)
    if scripts is None:
        scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    inline = _SELECTED_CURRENCY.search(scripts)
    context = script_json(response, _CONTEXT)
    context = context if isinstance(context, dict) else {}
    in_path = _PATH_LANGUAGE.search(parsed.path)
    selected = next(
        filter(
            None,
            (
                currency_code((query.get("selected_currency") or [None])[0]),
                currency_code(inline.group(1)) if inline else None,
                currency_code(context.get("currency")),
            ),
        ),
        None,
    )
    language = (
        (query.get("lang") or [None])[0]
        or response.xpath("/html/@lang").get()
        or text(context.get("language"))
        or (in_path.group(1) if in_path else None)
    )
    return market(language=language, currency=selected)


def _apollo(response: TextResponse) -> dict[str, Any]:
    store = script_json(response, _APOLLO)
    return store if isinstance(store, dict) else {}


def extract_search(response: TextResponse) -> dict[str, Any]:
    """Every property on a search page (cards and store merged), and the next page."""
    checkin, checkout = stay_of(response.url)
    store = _apollo(response)
    where = page_market(response)
    from_store: list[dict[str, Any]] = []
    pagination: dict[str, Any] = {}
    for search in find_key(store, "searchQueries"):
        for key, output in search.items() if isinstance(search, dict) else []:
            if not key.startswith("search(") or not isinstance(output, dict):
                continue
            pagination = output.get("pagination") or {}
            from_store += [
                h
                for r in output.get("results") or []
                if (h := _from_store(r, response, checkin, checkout, where))
            ]
    cards = _from_cards(response, checkin, checkout, where)
    hotels, cards_only = merge_results(from_store, cards)
    # The results the page showed, as the site pages: its cards (a hotel shown twice
    # once); the store's only when no card was read. Hotels present only in the store
    # are results too, but they are no place in the page's ranking: counting them
    # would skip as many results of the next page.
    shown = len({urlparse(card["url"]).path for card in cards}) or len(
        {urlparse(h["url"]).path for h in from_store}
    )
    return {
        "hotels": hotels,
        "source": "apollo" if from_store else "cards",
        "cards_only": cards_only if from_store else 0,
        "next_url": _next_url(response, pagination, shown),
    }


def merge_results(
    store: list[dict[str, Any]], cards: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """Every property once (keyed by its hotel page path), in page order, and how many
    came from cards alone.

    Per field, the store's value wins wherever it has one; the card fills the rest:
    ``address`` (the store's is the street address, a card shows "district, city"),
    ``city`` (the property's own; a card's location line may name the area around it),
    ``price`` (unrounded, the same amount the card prints rounded), ``review_count`` (a
    number, 0 when there are none), ``star_rating`` (a value; cards draw icons, stars or
    squares), ``images`` (a larger photo than the card's thumbnail), and ``hotel_id``,
    ``property_type``, ``location``, which only the store has.
    """
    by_path: dict[str, dict[str, Any]] = {}
    for result in store:
        by_path.setdefault(urlparse(result["url"]).path, result)
    merged: dict[str, dict[str, Any]] = {}
    for card in cards:
        path = urlparse(card["url"]).path
        if path in merged:
            continue  # a property shown twice (a featured slot and its own rank)
        data = by_path.get(path)
        merged[path] = card if data is None else _store_wins(data, card)
    cards_only = sum(1 for path in merged if path not in by_path)
    for path, data in by_path.items():
        merged.setdefault(path, data)  # in the store, no card rendered for it
    return list(merged.values()), cards_only


def _store_wins(data: dict[str, Any], card: dict[str, Any]) -> dict[str, Any]:
    return {**card, **{name: value for name, value in data.items() if not _empty(value)}}


def _from_store(
    result: Any,
    response: TextResponse,
    checkin: str | None,
    checkout: str | None,
    where: Market,
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
    photo = first(list(find_key(data.get("photos") or {}, "relativeUrl")))
    # The unrounded amount; its currency as the store states it, else the page's market.
    amount = money(price.get("amountUnformatted"), price.get("currency"), where)
    return {
        "url": hotel_url(response, f"/hotel/{country}/{page_name}.html", checkin, checkout),
        "hotel_id": str(hotel_id),
        "name": text((result.get("displayName") or {}).get("text")),
        "property_type": _TYPES.get(data.get("accommodationTypeId")),
        "address": text(location.get("address")),
        "city": text(location.get("city")),
        "country": country.upper(),
        "location": _point(location.get("latitude"), location.get("longitude")),
        "star_rating": to_float(stars) if stars else None,
        "review_score": to_float(reviews.get("totalScore"))
        if reviews.get("reviewsCount")
        else None,
        "review_count": to_int(reviews.get("reviewsCount")),
        "price": amount.amount,
        "currency": amount.currency,
        "checkin": checkin,
        "checkout": checkout,
        "images": [_CDN + photo] if isinstance(photo, str) else None,
    }


def _from_cards(
    response: TextResponse, checkin: str | None, checkout: str | None, where: Market
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
        numbers = _NUMBER.findall(score_text.replace("\u00a0", " "))
        stars = card.css(
            '[data-testid="rating-stars"] > div, [data-testid="rating-stars"] > span,'
            ' [data-testid="rating-squares"] > div, [data-testid="rating-squares"] > span'
        )
        price = money(
            css_text(card, '[data-testid="price-and-discounted-price"] ::text'), where=where
        )
        address = css_text(card, '[data-testid="address"] ::text')
        hotels.append(
            {
                "url": url,
                "hotel_id": card.attrib.get("data-id") or None,
                "name": css_text(card, '[data-testid="title"] ::text'),
                "address": address,
                # The location line (2025-12 layout), else the city that ends the
                # "district, city" address line (2025-03 layout).
                "city": css_text(card, '[data-testid="location"] ::text')
                or (text(address.rsplit(",", 1)[-1]) if address else None),
                "country": path[2].upper() if len(path) > 3 and path[1] == "hotel" else None,
                "star_rating": float(len(stars)) if stars else None,
                "review_score": to_float(numbers[0]) if numbers else None,
                "review_count": to_int(numbers[-1]) if len(numbers) > 1 else None,
                "price": price.amount,
                "currency": price.currency,
                "checkin": checkin,
                "checkout": checkout,
                "images": unique([_card_image(response, card)]) or None,
            }
        )
    return hotels


def _card_image(response: TextResponse, card: Selector) -> str | None:
    style = card.css('[data-testid="lazy-image-image"]::attr(style)').get() or ""
    lazy = re.search(r'url\("?([^")]+)', style)
    if lazy:
        return lazy.group(1).replace("&amp;", "&")
    return absolute(response, card.css('img[data-testid="image"]::attr(src)').get())


def _next_url(response: TextResponse, pagination: dict[str, Any], shown: int) -> str | None:
    """The page after ``shown`` results from this page's offset. A page rendered after
    "load more" shows more results than one store page; a short page leads to a next
    page that overlaps it (its hotels are requested once), never to a gap."""
    query = parse_qs(urlparse(response.url).query)
    offset = to_int((query.get("offset") or ["0"])[0]) or 0
    total = to_int(pagination.get("nbResultsTotal"))
    if total is not None:
        if not shown or offset + shown >= total:
            return None
        query["offset"] = [str(offset + shown)]
        parsed = urlparse(response.url)
        return urlunparse(parsed._replace(query=urlencode(query, doseq=True)))
    href = response.css('[data-testid="pagination-next"]::attr(href)').get()
    return response.urljoin(href) if href else None


# -- hotel pages ---------------------------------------------------------------------------

# Where each hotel field is read, most precise first (layers: ``store`` the Apollo store,
# ``ld`` JSON-LD, ``shown`` the visible blocks, ``vars`` inline variables and the URL,
# ``old`` the 2016-18 layout). Why the order differs per field:
# - city: never JSON-LD (its addressLocality holds the street); breadcrumbs, then the
#   data layer's city_name.
# - review_count: the store's is the figure the page shows; JSON-LD's may lag a few.
# - description: JSON-LD's is cut after a sentence or two; the visible block is whole.
_HOTEL_SOURCES: dict[str, tuple[str, ...]] = {
    "hotel_id": ("store", "vars"),
    "name": ("store", "ld", "shown", "old"),
    "property_type": ("store", "vars"),
    "address": ("store", "ld", "shown", "old"),
    "city": ("store", "shown", "vars"),
    "country": ("store", "vars"),
    "location": ("store", "shown", "vars"),
    "star_rating": ("store", "shown", "vars", "old"),
    "review_score": ("store", "ld", "shown", "old"),
    "review_count": ("store", "ld", "shown", "old"),
    "description": ("store", "shown", "ld", "old"),
    "amenities": ("shown",),
}


def extract_hotel(response: TextResponse) -> dict[str, Any]:
    """A hotel page: each field from the first layer of ``_HOTEL_SOURCES`` that has it;
    photos from every layer, once each; a price only when the page is dated."""
    scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    store = _apollo(response)
    layers = {
        "store": _hotel_store(store),
        "ld": _hotel_jsonld(response),
        "shown": _hotel_blocks(response),
        "vars": _hotel_vars(response, scripts),
        "old": _old_layout(response),
    }
    fields: dict[str, Any] = {
        name: next(
            (layers[layer][name] for layer in order if not _empty(layers[layer].get(name))),
            None,
        )
        for name, order in _HOTEL_SOURCES.items()
    }
    fields["images"] = _photos(
        [*layers["shown"]["images"], *layers["ld"]["images"], *layers["old"]["images"]],
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
    return fields


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
        "property_type": _TYPES.get(data.get("accommodationTypeId")),
        "address": text(location.get("formattedAddress")),
        "city": text(location.get("city")),
        "country": country.upper() if country else None,
        "location": _point(location.get("latitude"), location.get("longitude")),
        "star_rating": stars or None,
        "review_score": to_float(score.get("score")) if score.get("reviewsCount") else None,
        "review_count": to_int(score.get("reviewsCount")),
        "description": long_text(
            _entity(store, extended, "translation", "HotelTranslation").get("description")
        ),
    }


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
    address = hotel.get("address") if isinstance(hotel.get("address"), dict) else {}
    rating = hotel.get("aggregateRating") if isinstance(hotel.get("aggregateRating"), dict) else {}
    return {
        "name": text(hotel.get("name")),
        "address": text(address.get("streetAddress")),
        "review_score": to_float(rating.get("ratingValue")),
        "review_count": to_int(rating.get("reviewCount")),
        "description": long_text(hotel.get("description")),
        "images": [absolute(response, hotel.get("image"))],
    }


def _hotel_blocks(response: TextResponse) -> dict[str, Any]:
    """What the current layout shows (``data-testid`` blocks)."""
    header = response.css('[data-testid="PropertyHeaderDesktop-wrapper"]')
    score_text = css_text(response, '[data-testid="review-score-component"] ::text') or ""
    numbers = _NUMBER.findall(score_text.replace("\u00a0", " "))
    latlng = response.css("[data-atlas-latlng]::attr(data-atlas-latlng)").get() or ""
    lat, _, lon = latlng.partition(",")
    description = response.css('[data-testid="property-description"]')
    return {
        "name": css_text(header, "h2 ::text") or css_text(response, "h2.pp-header__title ::text"),
        "address": text(
            response.css(
                '[data-testid="PropertyHeaderAddressDesktop-wrapper"] button > div::text'
            ).get()
        ),
        "city": css_text(response, '[data-testid="breadcrumb-item"] a[href*="/city/"] ::text'),
        "location": _point(lat, lon),
        "star_rating": _star_icons(
            header.css('[data-testid="rating-stars"], [data-testid="rating-squares"]')
        ),
        "review_score": to_float(numbers[0]) if numbers else None,
        "review_count": to_int(numbers[-1]) if len(numbers) > 1 else None,
        "description": long_text("".join(description.css("::text").getall())),
        "amenities": unique(
            text(t)
            for t in response.css(
                '[data-testid="property-most-popular-facilities-wrapper"] li ::text'
            ).getall()
        ),
        "images": response.css(
            '[data-testid="GalleryUnifiedDesktop-wrapper"] img::attr(src)'
        ).getall(),
    }


def _star_icons(blocks: SelectorList[Selector]) -> float | None:
    """Stars (or squares) as the block labels them ("5 out of 5 stars"), else counted."""
    for block in blocks:
        label = _NUMBER.search(block.attrib.get("aria-label") or "")
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
        "property_type": _TYPES.get(type_id) if type_id else None,
        "city": text(layer.get("city_name")),
        "country": path[2].upper() if len(path) > 3 and path[1] == "hotel" else None,
        "location": _point(lat.group(1), lon.group(1)) if lat and lon else None,
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


def _point(lat: Any, lon: Any) -> GeoPoint | None:
    lat, lon = coordinate(lat), coordinate(lon)
    return GeoPoint(lat=lat, lon=lon) if lat is not None and lon is not None else None
