"""booking.com search pages: property cards merged with the Apollo store's results, and
the next offset (pure functions: tests feed them saved pages)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

from parsel import Selector
from scrapy.http import TextResponse

from crawlers.profiles import PageSelectors
from crawlers.spiders.base import page_selectors
from crawlers.spiders.booking_com.pages import (
    NUMBER,
    TYPES,
    apollo,
    empty,
    hotel_url,
    page_market,
    point,
    stay_of,
)
from crawlers.spiders.common import (
    absolute,
    css_text,
    find_key,
    first,
    money,
    text,
    to_float,
    to_int,
    unique,
)
from crawlers.spiders.currency import Market

SITE = "booking_com"
_CDN = "https://cf.bstatic.com"


def extract_search(
    response: TextResponse, selectors: PageSelectors | None = None
) -> dict[str, Any]:
    """Every property on a search page (cards and store merged), and the next page.
    ``selectors``: the profile's ``search`` selectors (default the shipped profile's)."""
    checkin, checkout = stay_of(response.url)
    store = apollo(response)
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
    cards = _from_cards(
        response, page_selectors(SITE, "search", selectors), checkin, checkout, where
    )
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
    return {**card, **{name: value for name, value in data.items() if not empty(value)}}


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
        "property_type": TYPES.get(data.get("accommodationTypeId")),
        "address": text(location.get("address")),
        "city": text(location.get("city")),
        "country": country.upper(),
        "location": point(location.get("latitude"), location.get("longitude")),
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
    response: TextResponse,
    on_page: PageSelectors,
    checkin: str | None,
    checkout: str | None,
    where: Market,
) -> list[dict[str, Any]]:
    hotels = []
    for card in response.css(on_page["cards"]):
        href = card.css(
            'a[data-testid="title"]::attr(href), a[data-testid="title-link"]::attr(href)'
        ).get()
        if not href:
            continue
        url = hotel_url(response, href, checkin, checkout)
        path = urlparse(url).path.split("/")
        score_text = css_text(card, '[data-testid="review-score"] ::text') or ""
        numbers = NUMBER.findall(score_text.replace("\u00a0", " "))
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
