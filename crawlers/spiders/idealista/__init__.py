"""idealista: property listings from search result pages and their detail pages.

``scrapy crawl idealista -O listings.jsonl [-a base_url=http://127.0.0.1:8012]``

Reads the profile ``crawlers/profiles/idealista.toml`` (``start_paths``, ``next_page``,
``detail`` selectors) and ``MAX_LISTING_PAGES``. Search result cards link detail pages and
fill what those lack; detail pages carry their data in inline scripts, the markup as
fallback field by field. idealista.com and idealista.pt share the markup; the city rules
differ. idealista is behind DataDome. Fields, photos and places: docs/sites.md "idealista".
"""

from crawlers.spiders.idealista.pages import (
    extract_listing,
    extract_search_cards,
    next_page_url,
    site_country,
)
from crawlers.spiders.idealista.spider import IdealistaSpider

__all__ = [
    "IdealistaSpider",
    "extract_listing",
    "extract_search_cards",
    "next_page_url",
    "site_country",
]
