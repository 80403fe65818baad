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

from crawlers.spiders.facebook_marketplace.pages import (
    condition,
    extract_item,
    extract_search,
    listings_from,
    locale_market,
    location_name,
    pagination_query,
)
from crawlers.spiders.facebook_marketplace.session import (
    FacebookSessionMissing,
    parse_session_cookies,
    session_cookies,
)
from crawlers.spiders.facebook_marketplace.spider import FacebookMarketplaceSpider

__all__ = [
    "FacebookMarketplaceSpider",
    "FacebookSessionMissing",
    "condition",
    "extract_item",
    "extract_search",
    "listings_from",
    "locale_market",
    "location_name",
    "pagination_query",
    "parse_session_cookies",
    "session_cookies",
]
