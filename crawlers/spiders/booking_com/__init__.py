"""booking.com: hotels of monitored destinations, with score, reviews, address and price.

``scrapy crawl booking_com -O hotels.jsonl [-a base_url=http://127.0.0.1:8015]``

Reads the profile ``crawlers/profiles/booking_com.toml`` (dated ``start_paths``, selectors)
and ``BOOKING_CHECKIN_DAYS_AHEAD`` / ``BOOKING_NIGHTS``. Search pages yield every property
card merged with the page's Apollo store and follow each to its hotel page (a failed hotel
page: the search result alone, marked incomplete); hotel pages take each field from the
most precise layer that has it (``_HOTEL_SOURCES``). Pages, prices, currencies and
pagination: docs/sites.md "booking_com".
"""

from crawlers.spiders.booking_com.hotel import extract_hotel, read_hotel
from crawlers.spiders.booking_com.pages import hotel_url, page_market, stay_of
from crawlers.spiders.booking_com.search import extract_search, merge_results
from crawlers.spiders.booking_com.spider import BookingComSpider, merge_hotel

__all__ = [
    "BookingComSpider",
    "extract_hotel",
    "extract_search",
    "hotel_url",
    "merge_hotel",
    "merge_results",
    "page_market",
    "read_hotel",
    "stay_of",
]
