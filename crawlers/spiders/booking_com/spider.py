"""The booking_com spider: dated search pages, then each property's hotel page."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy import Request
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import Hotel
from crawlers.spiders.booking_com.hotel import read_hotel
from crawlers.spiders.booking_com.pages import empty
from crawlers.spiders.booking_com.search import extract_search
from crawlers.spiders.common import ProductionSpider

HOTEL_FIELDS = ("name", "address", "review_score", "review_count", "price")


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
        page = extract_search(response, self.selectors("search"))
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
            found = self.picked(response.url, read_hotel(response, self.selectors("hotel")))
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
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
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


def merge_hotel(partial: dict[str, Any], page: dict[str, Any]) -> dict[str, Any]:
    """A search result completed by its hotel page. The search's price stays (it is the
    stay that was searched); a dated hotel page prices a result that had none."""
    fields = dict(partial)
    if empty(fields.get("price")) and not empty(page.get("price")):
        fields.update({name: page.get(name) for name in _STAY})
    for name, value in page.items():
        if name in _STAY or empty(value):
            continue
        if empty(fields.get(name)) or name in _PAGE_WINS:
            fields[name] = value
    return fields
