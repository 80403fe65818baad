"""The idealista spider: search result pages, then each listing's detail page."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.items import PropertyListing, schema_for
from crawlers.recrawl.cards import Card
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.common import ProductionSpider, unique
from crawlers.spiders.fallbacks import PRICE, pick
from crawlers.spiders.idealista.pages import extract_listing, extract_search_cards, next_page_url

LISTING_FIELDS = ("price", "area_m2", "rooms", "address", "city", "description")


ITEM_TYPE = schema_for(PropertyListing).item_type


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
        next_url = next_page_url(response, self.selectors("search"))
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
        country = self.settings.get("SITE_COUNTRY")
        fields = extract_listing(response, country, self.selectors("detail"))
        if fields["price"] is None and fields["title"] is None:
            self.fail(response, "detail", "no listing data on the page")
            return
        # The detail page is more precise; the search card where it has nothing fitting.
        card = {k: v for k, v in (card or {}).items() if k in fields}
        picked = pick(ITEM_TYPE, [("page", fields), ("listing", card)], together=PRICE)
        fields = self.picked(response.url, picked)
        if fields.get("features") and card.get("features"):
            fields["features"] = unique([*fields["features"], *card["features"]])  # both pages'
        self.note_missing(response.url, fields, LISTING_FIELDS)
        self.count("listings")
        yield PropertyListing(**fields)

    def on_detail_error(self, failure: Failure) -> Iterator[scrapy.Request | PropertyListing]:
        """The detail page again later in the job; once its rounds are spent, what the
        search card showed, marked incomplete."""
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
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
