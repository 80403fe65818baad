"""Facebook Marketplace: listings of saved searches, with their item pages.

``FACEBOOK_SESSION_COOKIES='c_user=...; xs=...' scrapy crawl facebook_marketplace -O out.jsonl``

Marketplace is only served to a logged-in session: the spider refuses to start without
``FACEBOOK_SESSION_COOKIES`` (a secret setting, from the environment; a Cookie header or
JSON), with a message naming the variable, and stops at the first login page it gets
(an expired session). The cookies are sent with every request and never logged.

Pages carry their data as Relay query results in ``<script type="application/json">``
blobs (``RelayPrefetchedStreamCache`` ... ``result.data``). Search pages: the
``marketplace_search.feed_units`` connection (``edges[].node.listing``: id, title, price,
location, seller, photo) and its ``page_info``; item pages:
``viewer.marketplace_product_details_page.target`` (title, price and currency,
description, location and coordinates, seller, condition, photos, creation time, sold).
Search results are followed to their item pages; the search data fills what the item
page lacks, and is yielded alone if the item page fails.

Listings of every kind share the target's shape, with their own fields: an item's
condition is its "Condition" attribute (``used_good``), a vehicle's its
``vehicle_condition`` (``VERY_GOOD``); a rental names no ``location_text``, its place is
the reverse-geocoded city of its ``location`` (else its ``home_address``). Prices are
read as the viewer's locale prints them (``IntlCurrentLocale``, e.g. ``en_US``: ``$`` is
USD, ``CA$`` CAD) where the data states no currency (search results).

Pagination (ASSUMED from public knowledge of the site, not from a saved exchange): the
next results come from the GraphQL endpoint, a POST of ``doc_id`` (the search query's
``queryID`` from the page's preloaders), ``variables`` (the preloader's, plus
``cursor`` = ``page_info.end_cursor``) and the session's ``fb_dtsg`` token; the answer
is JSON with the same ``marketplace_search`` connection.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy import FormRequest, Request
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from core.config import secret_value
from crawlers.items import GeoPoint, MarketplaceListing
from crawlers.recrawl.cards import Card
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.common import (
    Money,
    ProductionSpider,
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

LISTING_FIELDS = ("title", "price", "currency", "location_name", "seller_name", "description")
REQUIRED_COOKIES = ("c_user", "xs")  # the user id and the session secret
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


class FacebookSessionMissing(NotConfigured):
    """No usable logged-in session: Marketplace shows nothing to an anonymous client."""


def parse_session_cookies(raw: str) -> dict[str, str]:
    """Cookies from a Cookie header (``a=1; b=2``), a JSON object or a JSON export list."""
    raw = raw.strip()
    cookies: dict[str, str] = {}
    if raw.startswith(("{", "[")):
        data = json.loads(raw)
        if isinstance(data, dict):
            cookies = {str(k): str(v) for k, v in data.items()}
        else:  # browser extensions export [{"name": ..., "value": ..., "domain": ...}, ...]
            cookies = {
                str(c["name"]): str(c["value"])
                for c in data
                if isinstance(c, dict) and "name" in c and "value" in c
            }
    else:
        for part in raw.split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name:
                cookies[name.strip()] = value.strip()
    return cookies


def session_cookies(settings: BaseSettings) -> dict[str, str]:
    """The configured session, or FacebookSessionMissing naming what is wrong (not the values)."""
    secret = secret_value(settings.get("FACEBOOK_SESSION_COOKIES"))
    if secret is None or not secret.strip():
        raise FacebookSessionMissing(
            "facebook_marketplace needs a logged-in facebook.com session: set "
            "FACEBOOK_SESSION_COOKIES to the session's cookies (a Cookie header "
            "'c_user=...; xs=...' or JSON) from the secret store"
        )
    try:
        cookies = parse_session_cookies(secret)
    except (ValueError, TypeError, KeyError) as exc:
        raise FacebookSessionMissing(
            "FACEBOOK_SESSION_COOKIES is neither a Cookie header nor cookie JSON "
            f"({type(exc).__name__})"
        ) from None
    missing = [name for name in REQUIRED_COOKIES if not cookies.get(name)]
    if missing:
        raise FacebookSessionMissing(
            f"FACEBOOK_SESSION_COOKIES lacks the session cookie(s) {', '.join(missing)}"
        )
    return cookies


class FacebookMarketplaceSpider(ProductionSpider):
    name = "facebook_marketplace"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> FacebookMarketplaceSpider:
        # Before anything is fetched: fail the run, clearly.
        cookies = session_cookies(crawler.settings)
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, FacebookMarketplaceSpider)
        spider.session = cookies
        spider.logger.info("facebook session: %d cookies (values not logged)", len(cookies))
        return spider

    session: dict[str, str]

    # -- requests carry the session ----------------------------------------------------------
    def make_request_from_entry(self, entry: dict[str, Any]) -> Request:
        return super().make_request_from_entry(entry).replace(cookies=dict(self.session))

    def follow(self, response: Response, url: str, **kwargs: Any) -> Request:
        return response.follow(url, cookies=dict(self.session), errback=self.on_error, **kwargs)

    # -- callbacks ---------------------------------------------------------------------------
    async def parse(
        self, response: Response, **kwargs: Any
    ) -> AsyncIterator[scrapy.Request | ItemSeen]:
        """A search page: every listing's item page (a listing whose search card is as at
        its last full fetch is seen, not fetched: ``cards_to_fetch``), then the next
        results."""
        if not isinstance(response, TextResponse):
            self.fail(response, "search", "not a text response")
            return
        self.check_session(response)
        listings, page_info = extract_search(response)
        if not listings:
            self.fail(response, "search", "no listings in the page's Relay data")
        for output in await self.item_pages(response, listings):
            yield output
        for request in self.next_page(response, page_info, pagination_query(response)):
            yield request

    async def parse_graphql(
        self, response: Response, query: dict[str, Any]
    ) -> AsyncIterator[scrapy.Request | ItemSeen]:
        """The pagination query's JSON answer: the same connection, more listings."""
        try:
            data = json.loads(response.text) if isinstance(response, TextResponse) else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            self.fail(response, "graphql", "not a JSON answer")
            return
        listings, page_info = listings_from(data, response, locale_market(query.get("locale")))
        for output in await self.item_pages(response, listings):
            yield output
        for request in self.next_page(response, page_info, query):
            yield request

    async def item_pages(
        self, response: Response, listings: list[dict[str, Any]]
    ) -> list[scrapy.Request | ItemSeen]:
        """Each search result's item page request, or its ``ItemSeen`` (card unchanged)."""
        cards = [
            Card(
                self.follow(
                    response,
                    listing["url"],
                    callback=self.parse_item,
                    cb_kwargs={"partial": listing},
                ).replace(errback=self.on_item_error),
                listing,
            )
            for listing in listings
        ]
        return await self.cards_to_fetch(response, cards, MarketplaceListing)

    def next_page(
        self, response: Response, page_info: dict[str, Any], query: dict[str, Any] | None
    ) -> Iterator[scrapy.Request]:
        number = int(response.meta.get("listing_page", 1))
        cursor = page_info.get("end_cursor")
        if not page_info.get("has_next_page") or not cursor or number >= self.max_pages:
            return
        if query is None:
            self.logger.warning("%s: more results, but no search query to page with", response.url)
            self.count("pagination_unavailable")
            return
        variables = {**query["variables"], "cursor": cursor}
        yield FormRequest(
            response.urljoin("/api/graphql/"),
            formdata={
                "doc_id": query["doc_id"],
                "variables": json.dumps(variables),
                "fb_dtsg": query.get("fb_dtsg") or "",
            },
            cookies=dict(self.session),
            callback=self.parse_graphql,
            errback=self.on_error,
            cb_kwargs={"query": query},
            meta={"listing_page": number + 1},
            dont_filter=True,  # one endpoint, many pages
        )

    def parse_item(
        self, response: Response, partial: dict[str, Any] | None = None
    ) -> Iterator[MarketplaceListing]:
        # No partial: the item page alone, at its own URL (the structure gate judges it).
        fields = dict(partial or {"url": response.url})
        if isinstance(response, TextResponse):
            self.check_session(response)
            found = extract_item(response)
            if found.get("title") is None:
                self.logger.warning("%s: no listing data on the item page", response.url)
                self.count("item_page_unparsed")
            for name, value in found.items():
                if value not in (None, "", []):
                    fields[name] = value
        self.note_missing(response.url, fields, LISTING_FIELDS)
        self.count("listings")
        yield MarketplaceListing(**fields)

    def on_item_error(self, failure: Failure) -> Iterator[MarketplaceListing]:
        request = failure.request  # type: ignore[attr-defined]
        self.logger.error(
            "item page failed: %s (%s); yielding the search data",
            request.url,
            failure.getErrorMessage(),
        )
        self.count("item_page_failed")
        yield MarketplaceListing(**request.cb_kwargs["partial"])

    def check_session(self, response: TextResponse) -> None:
        """A login page instead of Marketplace: the session expired. Stop, loudly."""
        if is_login_page(response):
            self.count("session_rejected")
            self.logger.error(
                "%s: facebook answered with its login page: the session in "
                "FACEBOOK_SESSION_COOKIES expired or was revoked; renew it",
                response.url,
            )
            raise CloseSpider("facebook_session_rejected")


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


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
    listings, page_info = [], {}
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
        "category": text((target.get("marketplace_listing_category") or {}).get("name")),
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
