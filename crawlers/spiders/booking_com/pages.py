"""booking.com pages of either kind: the stay and market a page is read in, its Apollo
store, hotel URLs and the accommodation types."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

from scrapy.http import TextResponse

from crawlers.items import GeoPoint
from crawlers.spiders.common import coordinate, script_json, text
from crawlers.spiders.currency import Market, currency_code, market

APOLLO = '//script[@data-capla-store-data="apollo"]/text()'
# The page's application context: its language and display currency, among others.
_CONTEXT = "//script[@data-capla-application-context]/text()"
# The currency the visitor selected, as both layouts' inline variables state it.
_SELECTED_CURRENCY = re.compile(r"\bb_selected_currency\s*[:=]\s*['\"]([A-Za-z]{3})['\"]")
# The page's language in its path: searchresults.en-gb.html, /hotel/mx/hb-express.es.html.
_PATH_LANGUAGE = re.compile(r"\.([a-z]{2}(?:-[a-z]{2,4})?)\.html$")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# /hotel/mx/hb-express.es.html -> /hotel/mx/hb-express.html: one URL per hotel whatever
# the language of the page that linked it (store results are built without one).
_LANGUAGE = re.compile(r"^(/hotel/[a-z]{2}/[^/]+?)\.[a-z]{2}(?:-[a-z]{2,4})?(\.html)$")
# booking.com accommodation type ids (``accommodationTypeId``, ``b_acc_type``, ``atid``);
# the ones not listed stay unnamed rather than guessed. Looked up with whatever value the
# page's JSON holds (Any keys).
TYPES: dict[Any, str] = {
    201: "apartment",
    203: "hostel",
    204: "hotel",
    205: "motel",
    206: "resort",
    208: "bed_and_breakfast",
    213: "villa",
    216: "guest_house",
    219: "aparthotel",
    220: "holiday_home",
    222: "homestay",
}


def empty(value: Any) -> bool:
    return value is None or value == "" or value == []


def stay_of(url: str) -> tuple[str | None, str | None]:
    query = parse_qs(urlparse(url).query)
    return first_param(query, "checkin"), first_param(query, "checkout")


def first_param(query: dict[str, list[str]], name: str) -> str | None:
    """The first value of ``name`` in a parsed query string, None without one."""
    values = query.get(name)
    return values[0] if values else None


def hotel_url(response: TextResponse, href: str, checkin: str | None, checkout: str | None) -> str:
    """The hotel page without tracking parameters nor language, with the search's stay."""
    parsed = urlparse(response.urljoin(href))
    query = {"checkin": checkin, "checkout": checkout} if checkin and checkout else {}
    path = _LANGUAGE.sub(r"\1\2", parsed.path)
    return urlunparse(parsed._replace(path=path, query=urlencode(query), fragment=""))


def page_market(response: TextResponse, scripts: str | None = None) -> Market:
    """The market a page's prices are read in: the currency the visitor selected and the
    language whose signs the page prints. Each from the first source that states it:
    the URL (``selected_currency``, ``lang``), the page (``b_selected_currency``, ``<html
    lang>``), the page's application context (``currency``, ``language``), the language
    in the page's path (``.en-gb.html``)."""
    parsed = urlparse(response.url)
    query = parse_qs(parsed.query)
    if scripts is None:
        scripts = "\n".join(response.xpath("//script[not(@src)]/text()").getall())
    inline = _SELECTED_CURRENCY.search(scripts)
    context = script_json(response, _CONTEXT)
    context = context if isinstance(context, dict) else {}
    in_path = _PATH_LANGUAGE.search(parsed.path)
    selected = next(
        filter(
            None,
            (
                currency_code(first_param(query, "selected_currency")),
                currency_code(inline.group(1)) if inline else None,
                currency_code(context.get("currency")),
            ),
        ),
        None,
    )
    language = (
        first_param(query, "lang")
        or response.xpath("/html/@lang").get()
        or text(context.get("language"))
        or (in_path.group(1) if in_path else None)
    )
    return market(language=language, currency=selected)


def apollo(response: TextResponse) -> dict[str, Any]:
    store = script_json(response, APOLLO)
    return store if isinstance(store, dict) else {}


def point(lat: Any, lon: Any) -> GeoPoint | None:
    lat, lon = coordinate(lat), coordinate(lon)
    return GeoPoint(lat=lat, lon=lon) if lat is not None and lon is not None else None
