"""idealista: property listings from search result pages and their detail pages.

``scrapy crawl idealista -O listings.jsonl [-a base_url=http://127.0.0.1:8012]``

Start entries are search result pages (the profile's ``start_paths``: an operation, a
property kind and an area, e.g. ``/en/venta-viviendas/madrid/barrio-de-salamanca/``).
Each result card links a detail page (``/inmueble/<id>/``, ``/imovel/<id>/`` on .pt);
the card's own fields (price, rooms, size, floor, title, agency logo, features) travel
with the request and fill what the detail page lacks. Cards are the same markup on
idealista.com (Spanish UI, seen 2025) and idealista.pt (seen 2025); only the words differ.
Pagination: the profile's ``next_page`` link up to ``MAX_LISTING_PAGES``.

Detail pages carry their data in inline scripts, not JSON-LD: ``var config`` (property
id, operation, typology), ``var adDetail.headerFeatures`` (price, area, rooms, floor),
``var adMultimediasInfo`` (photos) and ``var mapConfig`` (coordinates, often hidden).
The visible markup (the profile's ``detail`` selectors: price, info features, feature
lists, location, advertiser, description) is the fallback, field by field.
Photos: every photo of the listing once (by idealista's photo id), the scripts' gallery
first, then the page's gallery markup (first picture, carousel, slides of older layouts
with ``data-ondemand-img``), then ``og:image``; absolute URLs.

The place: idealista.com's title line (``location_minor``) ends with the
municipality ("Goya, Madrid"), idealista.pt's with the parish (freguesia: "Quinta da
Marinha, Cascais, Cascais e Estoril"). The location list (``location``) names every
level down to "<municipality>, <district>" on .pt ("Cascais, Lisboa") and "<area>,
<province>" on .com ("Madrid city, Madrid"): a .pt city is the municipality from it,
never the parish; without the list (a slimmer page) a .pt page names no city.

idealista is behind DataDome: a plain client gets its CAPTCHA page (``captcha-delivery.com``),
which the fetch middleware classifies and retries through another proxy.
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
