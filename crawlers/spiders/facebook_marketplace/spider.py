"""The facebook_marketplace spider: saved searches, then each listing's item page, in a
logged-in session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy import FormRequest, Request
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response, TextResponse
from scrapy.http.request import CookiesT
from twisted.python.failure import Failure

from crawlers.items import MarketplaceListing, schema_for
from crawlers.recrawl.cards import Card
from crawlers.recrawl.context import ItemSeen
from crawlers.spiders.common import ProductionSpider
from crawlers.spiders.facebook_marketplace.pages import (
    extract_item,
    extract_search,
    is_login_page,
    listings_from,
    locale_market,
    pagination_query,
)
from crawlers.spiders.facebook_marketplace.session import session_cookies
from crawlers.spiders.fallbacks import PRICE, pick

LISTING_FIELDS = ("title", "price", "currency", "location_name", "seller_name", "description")


ITEM_TYPE = schema_for(MarketplaceListing).item_type


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
        cookies: CookiesT = {name: value for name, value in self.session.items()}
        return response.follow(url, cookies=cookies, errback=self.on_error, **kwargs)

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
            # The item page's data is more precise; the search's where it has nothing fitting.
            listing = [("state", found), ("listing", fields)]
            fields.update(self.picked(response.url, pick(ITEM_TYPE, listing, together=PRICE)))
        self.note_missing(response.url, fields, LISTING_FIELDS)
        self.count("listings")
        yield MarketplaceListing(**fields)

    def on_item_error(self, failure: Failure) -> Iterator[MarketplaceListing]:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
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
