"""facebook_marketplace: Relay data of the saved logged-in pages, the session secret,
the login wall, and a replay crawl that pages through the GraphQL endpoint."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawlers.items import GeoPoint
from crawlers.spiders.facebook_marketplace import (
    FacebookMarketplaceSpider,
    FacebookSessionMissing,
    condition,
    extract_item,
    extract_search,
    listings_from,
    locale_market,
    location_name,
    pagination_query,
    parse_session_cookies,
    session_cookies,
)
from harness.replay_site import ReplaySite
from tests.sites.support import REPO_ROOT, crawl, fixture, real_page, response, verdict

SITE = "facebook_marketplace"
HOST = "https://www.facebook.com"
SESSION = "c_user=100000000000001; xs=replay-test-session"
# Pages built for one defect each (tests/crawlers/spiders/pages/facebook_marketplace/).
PAGES = Path(__file__).parents[1] / "pages" / SITE


@pytest.fixture
def session() -> dict[str, str]:
    """The session as the crawl's setting (from FACEBOOK_SESSION_COOKIES in production)."""
    return {"FACEBOOK_SESSION_COOKIES": SESSION}


def test_real_item_page_from_its_relay_data() -> None:
    url = f"{HOST}/marketplace/item/977215177594648/"
    item = extract_item(response(real_page("facebook_marketplace/item_regular.html"), url))
    expected = {
        "listing_id": "977215177594648",
        "title": "Smoke Detector",
        "price": 10.0,
        "currency": "USD",
        "condition": "new",
        "location_name": "MS",
        "location": GeoPoint(lat=34.076843261719, lon=-88.445434570312),
        "seller_id": "61556688665315",
        "seller_name": "Austin Ewing",
        "description": "New in box 10$",
        "listed_at": "2025-01-10T03:11:29+00:00",
        "is_sold": False,
    }
    assert {k: item[k] for k in expected} == expected
    assert item["images"][0].startswith("https://scontent-hou1-1.xx.fbcdn.net/")


def test_real_search_page_listings_and_continuation() -> None:
    url = f"{HOST}/marketplace/houston/search?query=dji%20drone"
    page = response(real_page("facebook_marketplace/search.html"), url)
    listings, page_info = extract_search(page)
    assert len(listings) == 14
    first = listings[0]
    expected = {
        "url": f"{HOST}/marketplace/item/628088039705732/",
        "listing_id": "628088039705732",
        "title": "DJI Mavic Mini",
        "price": 200.0,
        "currency": "USD",  # "$200" as the viewer's locale (en_US) prints dollars
        "location_name": "Houston, TX",
        "seller_id": "100001490007767",
        "seller_name": "Jose Sanchez",
        "is_sold": False,
    }
    assert {k: first[k] for k in expected} == expected
    assert page_info["has_next_page"] is True and page_info["end_cursor"]
    query = pagination_query(page)
    assert query is not None
    assert query["doc_id"] == "6978471575593570"
    assert query["fb_dtsg"]  # the session's token, needed by the POST
    assert query["locale"] == "en_US"  # the continuation's prices are read in it
    assert "buyLocation" in query["variables"]


# -- listings of every kind -----------------------------------------------------------------------


def test_a_vehicle_listing_keeps_its_condition() -> None:
    url = f"{HOST}/marketplace/item/700000000000021/"
    item = extract_item(response(PAGES / "item-vehicle-700000000000021.html", url))
    expected = {
        "listing_id": "700000000000021",
        "title": "2015 Honda Civic LX Sedan 4D",
        "price": 9800.0,
        "currency": "USD",
        "condition": "very_good",  # vehicle_condition VERY_GOOD: vehicles have no attribute
        "location_name": "Pasadena, TX",
        "location": GeoPoint(lat=29.6911, lon=-95.2091),
    }
    assert {k: item[k] for k in expected} == expected


def test_a_rental_listing_keeps_its_location_name() -> None:
    url = f"{HOST}/marketplace/item/700000000000022/"
    item = extract_item(response(PAGES / "item-rental-700000000000022.html", url))
    expected = {
        "listing_id": "700000000000022",
        "title": "2 Beds 1 Bath Apartment",
        "price": 1450.0,
        "currency": "USD",
        "condition": None,  # a rental has none
        "location_name": "Houston, TX",  # no location_text: its reverse-geocoded city
        "location": GeoPoint(lat=29.7421, lon=-95.4102),
    }
    assert {k: item[k] for k in expected} == expected


def test_condition_of_every_kind_of_listing() -> None:
    assert condition({"attribute_data": [{"attribute_name": "Condition", "value": "new"}]}) == "new"
    # The attribute as another UI language names it: its value is the site's keyword.
    spanish = {"attribute_data": [{"attribute_name": "Estado", "value": "used_like_new"}]}
    assert condition(spanish) == "used_like_new"
    assert condition({"attribute_data": [], "vehicle_condition": "EXCELLENT"}) == "excellent"
    assert condition({"vehicle_condition": None, "condition": "USED"}) == "used"
    assert condition({"attribute_data": [{"attribute_name": "Brand", "value": "Trek"}]}) is None


def test_location_name_of_every_kind_of_listing() -> None:
    assert location_name({"location_text": {"text": "MS"}}) == "MS"
    geo = {"reverse_geocode_detailed": {"city": "Houston", "state": "TX", "postal_code": "77098"}}
    assert location_name({"location_text": None, "location": geo}) == "Houston, TX"
    assert location_name({"item_location": {"reverse_geocode": {"city": "Katy"}}}) == "Katy"
    nested = {"rental_details": {"reverse_geocode": {"city_page": {"display_name": "Katy, Texas"}}}}
    assert location_name(nested) == "Katy, Texas"
    assert location_name({"home_address": {"street": "2211 Westheimer Rd"}}) == "2211 Westheimer Rd"
    assert location_name({"location": {"latitude": 29.7}}) is None


def test_search_prices_are_read_in_the_viewer_locale() -> None:
    def currency(formatted: str, locale: str) -> str | None:
        node = {"id": "1", "listing_price": {"formatted_amount": formatted, "amount": "200.00"}}
        data = {"marketplace_search": {"feed_units": {"edges": [{"node": {"listing": node}}]}}}
        (listing,), _ = listings_from(data, HtmlResponse(HOST), locale_market(locale))
        assert listing["price"] == 200.0
        return listing["currency"]

    assert currency("$200", "en_US") == "USD"
    assert currency("CA$200", "en_US") == "CAD"
    assert currency("$200", "es_MX") == "MXN"
    assert currency("200\u00a0zł", "pl_PL") == "PLN"
    assert currency("$200", "fr_FR") is None  # a bare "$" in French names no currency
    assert currency("200", "en_US") is None  # the viewer's locale is no listing's market


# -- the session secret ----------------------------------------------------------------------------


def test_session_cookie_formats() -> None:
    expected = {"c_user": "1", "xs": "2"}
    assert parse_session_cookies("c_user=1; xs=2") == expected
    assert parse_session_cookies('{"c_user": "1", "xs": "2"}') == expected
    exported = (
        '[{"name": "c_user", "value": "1", "domain": ".facebook.com"},'
        ' {"name": "xs", "value": "2"}]'
    )
    assert parse_session_cookies(exported) == expected


def test_a_missing_or_incomplete_session_is_refused_clearly() -> None:
    with pytest.raises(FacebookSessionMissing, match="set FACEBOOK_SESSION_COOKIES"):
        session_cookies(Settings())
    incomplete = Settings({"FACEBOOK_SESSION_COOKIES": SecretStr("c_user=1; datr=secret-value")})
    with pytest.raises(FacebookSessionMissing, match=r"lacks the session cookie\(s\) xs") as info:
        session_cookies(incomplete)
    assert "secret-value" not in str(info.value)


def test_the_crawl_fails_at_start_without_a_session(replay: ReplaySite) -> None:
    replay.clear_log()
    env = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "FACEBOOK_SESSION_COOKIES")
    }
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", SITE, "-a", f"base_url={replay.url}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "FacebookSessionMissing" in result.stderr
    assert "set FACEBOOK_SESSION_COOKIES" in result.stderr
    assert replay.access_log() == []  # nothing was fetched


def test_requests_carry_the_session_and_a_login_page_stops_the_crawl(
    session: dict[str, str],
) -> None:
    crawler = get_crawler(FacebookMarketplaceSpider, session)
    spider = FacebookMarketplaceSpider.from_crawler(crawler, base_url=HOST)
    assert isinstance(spider, FacebookMarketplaceSpider)
    (entry,) = spider.start_entries()
    request = spider.make_request_from_entry(entry)
    assert request.cookies == {"c_user": "100000000000001", "xs": "replay-test-session"}
    login = response(fixture(SITE, "blocked/login.html"), f"{HOST}/marketplace/houston/search/")
    with pytest.raises(CloseSpider) as info:
        asyncio.run(drain(spider.parse(login)))
    assert info.value.reason == "facebook_session_rejected"
    assert crawler.stats is not None
    assert crawler.stats.get_value("facebook_marketplace/session_rejected") == 1


async def drain(outputs: AsyncIterator[Any]) -> list[Any]:
    return [output async for output in outputs]


def test_login_wall_and_rate_limit_pages_are_blocks_and_real_pages_are_not() -> None:
    login = verdict(SITE, fixture(SITE, "blocked/login.html").read_bytes())
    assert (login.kind, login.reason) == ("blocked", "facebook login wall in <title>")
    limited = verdict(SITE, fixture(SITE, "blocked/temporarily-blocked.html").read_bytes())
    assert (limited.kind, limited.reason) == ("blocked", "facebook temporarily blocked")
    for name in ("item_regular.html", "search.html"):
        assert verdict(SITE, real_page(f"facebook_marketplace/{name}").read_bytes()).ok, name
    for page in sorted(fixture(SITE, "fixtures").glob("*/*.html")):
        assert verdict(SITE, page.read_bytes()).ok, page.name


# -- the replay crawl ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    with ReplaySite(SITE, run_dir=tmp_path_factory.mktemp("replay")) as site:
        yield site


def test_crawl_of_the_replay_pages_through_graphql(replay: ReplaySite, tmp_path: Path) -> None:
    replay.clear_log()
    result = crawl(SITE, replay, tmp_path)
    assert result.returncode == 0, result.log[-3000:]
    assert result.errors() == []
    assert SESSION.split("xs=")[1] not in result.log  # the secret never reaches the log
    by_id = {item["listing_id"]: item for item in result.items}
    assert sorted(by_id) == ["700000000000001", "700000000000002", "700000000000003"]
    assert result.stat("validation/valid/marketplace_listing") == 3
    from_page_two = by_id["700000000000003"]  # only in the GraphQL continuation
    expected = {
        "title": "Bike repair stand",
        "price": 60.0,
        "currency": "USD",
        "condition": "new",
        "seller_name": "Priya Shah",
        "is_sold": True,
        "url": f"{replay.url}/marketplace/item/700000000000003/",
    }
    assert {k: from_page_two[k] for k in expected} == expected
    log = replay.access_log()
    assert ("POST", "/api/graphql/") in [(e["method"], e["path"]) for e in log]
    # Every page was served to the session (none got the login page).
    assert [e for e in log if e.get("session") is False] == []


# -- the listing's category, for every listing kind ---------------------------------------------


@pytest.mark.parametrize(
    ("listing", "category"),
    [
        ("700000000000001", "Bicycles"),  # marketplace_listing_category_name on the listing
        ("700000000000002", None),  # names none: absent (the gate's shows rule agrees)
        ("700000000000003", "Sporting Goods"),  # the category object's name
        ("700000000000004", "Property Rentals"),  # a rental: in its logged-out renderable
    ],
)
def test_the_category_of_every_listing_kind(listing: str, category: str | None) -> None:
    path = fixture(SITE, f"fixtures/item/item-{listing}.html")
    found = extract_item(response(path, f"{HOST}/marketplace/item/{listing}/"))
    assert found["category"] == category


def test_the_category_from_the_seo_taxonomy_path_and_not_from_the_seller() -> None:
    from crawlers.spiders.facebook_marketplace.pages import listing_category

    target = {
        "marketplace_listing_seller": {"marketplace_listing_category_name": "Not this"},
        "seo_virtual_category": {
            "taxonomy_path": [{"name": "Home Sales"}, {"name": "Property Rentals"}]
        },
    }
    assert listing_category(target) == "Property Rentals"
    assert listing_category({"marketplace_listing_category_id": "123"}) is None
