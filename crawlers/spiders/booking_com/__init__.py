"""booking.com: hotels of monitored destinations, with score, reviews, address and price.

``scrapy crawl booking_com -O hotels.jsonl [-a base_url=http://127.0.0.1:8015]``

Start entries are dated search result pages: the profile's ``start_paths`` carry
``{checkin}``/``{checkout}`` placeholders, filled when the request is built (today +
``BOOKING_CHECKIN_DAYS_AHEAD``, for ``BOOKING_NIGHTS``), so every run prices the same
kind of stay.

Search pages: every property card (the profile's ``search`` selector ``cards``) is a result, merged
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
