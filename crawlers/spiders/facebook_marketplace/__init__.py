"""Facebook Marketplace: listings of saved searches, with their item pages.

``FACEBOOK_SESSION_COOKIES='c_user=...; xs=...' scrapy crawl facebook_marketplace -O out.jsonl``

Reads ``FACEBOOK_SESSION_COOKIES`` (a secret setting: the spider refuses to start without
it and stops at the first login page; never logged) and the profile
``crawlers/profiles/facebook_marketplace.toml``. Search and item pages carry Relay query
results in ``<script type="application/json">``; search results are followed to their
item pages and yielded alone if those fail. Data paths, listing kinds, prices and the
(ASSUMED) GraphQL pagination: docs/sites.md "facebook_marketplace".
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
