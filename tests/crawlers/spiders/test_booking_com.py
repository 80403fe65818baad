"""booking_com: the Apollo store and cards of the saved search page, the old hotel page,
the assumed modern hotel page, dated start entries, and a replay crawl."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from crawlers.items import GeoPoint
from crawlers.spiders.booking_com import BookingComSpider, extract_hotel, extract_search
from services.replay_site import ReplaySite
from tests.sites.support import crawl, fixture, fixture_response, real_page, response, verdict

SITE = "booking_com"
HOST = "https://www.booking.com"
REGION = f"{HOST}/region/mx/tlaxcala.es.html"
NO_STORE = rb'<script[^>]*data-capla-store-data="apollo".*?</script>'


def test_real_search_page_from_the_apollo_store() -> None:
    page = extract_search(response(real_page("booking_com/search_2025.html"), REGION))
    assert (page["source"], len(page["hotels"])) == ("apollo", 30)
    first = page["hotels"][0]
    expected = {
        "url": f"{HOST}/hotel/mx/hb-express.html",
        "hotel_id": "1168051",
        "name": "HB Express Hotel",
        "property_type": "hotel",
        "address": "Prol. A. Diaz Varela 181 Industrial",
        "city": "Tlaxcala de Xicohténcatl",
        "country": "MX",
        "star_rating": 3.0,
        "review_score": 8.3,
        "review_count": 532,
        "price": None,  # searched without dates: no price on the page
    }
    assert {k: first[k] for k in expected} == expected
    assert first["location"] == GeoPoint(lat=19.321472250102268, lon=-98.21017159828642)
    # 220 results, 30 per page in the store: the next offset.
    assert page["next_url"] == f"{REGION}?offset=30"


def test_real_search_page_cards_without_the_store() -> None:
    path = real_page("booking_com/search_2025.html")
    page = extract_search(
        response(path, REGION, re.sub(NO_STORE, b"", path.read_bytes(), flags=re.S))
    )
    assert (page["source"], len(page["hotels"])) == ("cards", 220)
    first = page["hotels"][0]
    got = {k: first[k] for k in ("hotel_id", "name", "city", "review_score", "review_count")}
    assert got == {
        "hotel_id": "1168051",
        "name": "HB Express Hotel",
        "city": "Tlaxcala de Xicohténcatl",
        "review_score": 8.3,
        "review_count": 532,
    }
    assert first["star_rating"] == 3.0


def test_real_old_layout_hotel_page() -> None:
    url = f"{HOST}/hotel/de/kempinskibristolberlin.en-gb.html"
    hotel = extract_hotel(response(real_page("booking_com/hotel_old.html"), url))
    expected = {
        "hotel_id": "60664",
        "name": "Kempinski Hotel Bristol Berlin",
        "address": "Kurfürstendamm 27, Charlottenburg-Wilmersdorf, 10719 Berlin, Germany",
        "star_rating": 5.0,
        "review_score": 8.3,
        "review_count": 1401,
    }
    assert {k: hotel[k] for k in expected} == expected
    assert hotel["location"] == GeoPoint(lat=52.50311705731744, lon=13.327349424362183)
    assert hotel["description"].startswith("This 5-star hotel on Berlin\u2019s Kurfürstendamm")


def test_assumed_modern_hotel_page_layers_agree() -> None:
    relative = "fixtures/hotel/casa-azul-tlaxcala.html"
    url = f"{HOST}/hotel/mx/casa-azul-tlaxcala.html"
    full = extract_hotel(fixture_response(SITE, relative, url))
    assert full["amenities"] == ["Free WiFi", "Free parking", "Restaurant", "Garden"]
    body = re.sub(
        rb'<script type="application/ld\+json">.*?</script>',
        b"",
        fixture(SITE, relative).read_bytes(),
        flags=re.S,
    )
    markup = extract_hotel(response(fixture(SITE, relative), url, body))
    keys = ("hotel_id", "name", "location", "star_rating", "review_count", "description")
    assert {k: markup[k] for k in keys} == {k: full[k] for k in keys}


def test_start_entries_get_future_dates_when_built() -> None:
    crawler = get_crawler(BookingComSpider)
    spider = BookingComSpider.from_crawler(crawler, base_url=HOST)
    (entry,) = spider.start_entries()
    assert "{checkin}" in entry["url"]  # the producer enqueues the template
    request = spider.make_request_from_entry(entry)
    checkin = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    checkout = (dt.date.today() + dt.timedelta(days=31)).isoformat()
    assert f"checkin={checkin}&checkout={checkout}" in request.url


def test_block_pages_are_recognised_and_real_pages_are_not() -> None:
    waf = fixture(SITE, "blocked/aws-waf-challenge.html").read_bytes()
    assert verdict(SITE, waf, 202).kind == "captcha"
    assert verdict(SITE, waf, 200).reason == "aws waf challenge"
    for name in ("search_2025.html", "hotel_old.html"):
        assert verdict(SITE, real_page(f"booking_com/{name}").read_bytes()).ok, name
    for page in sorted(fixture(SITE, "fixtures").glob("*/*.html")):
        assert verdict(SITE, page.read_bytes()).ok, page.name


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    with ReplaySite(SITE, run_dir=tmp_path_factory.mktemp("replay")) as site:
        yield site


def test_crawl_of_the_replay_follows_the_offset_and_hotel_pages(
    replay: ReplaySite, tmp_path: Path
) -> None:
    replay.clear_log()
    result = crawl(SITE, replay, tmp_path)
    assert result.returncode == 0, result.log[-3000:]
    by_id = {item["hotel_id"]: item for item in result.items}
    assert sorted(by_id) == ["9100001", "9100002", "9100003", "9100004", "9100005"]
    assert result.stat("validation/valid/hotel") == 5
    checkin = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    second_page = by_id["9100004"]  # only on offset=3
    assert (second_page["price"], second_page["currency"], second_page["checkin"]) == (
        1120.0,
        "MXN",
        checkin,
    )
    assert second_page["amenities"] == ["Kitchenette", "Free WiFi", "Family rooms"]
    assert second_page["url"].startswith(f"{replay.url}/hotel/mx/suites-huamantla-centro.html?")
    # No page for Hacienda San Miguel in the replay: the search result is kept.
    hacienda = by_id["9100005"]
    assert (hacienda["name"], hacienda["review_score"], hacienda["amenities"]) == (
        "Hacienda San Miguel",
        9.5,
        None,
    )
    assert hacienda["incomplete"] == ["hotel_page"]  # a 404: final at once, not retried
    assert result.stat("booking_com/hotel_page_failed") == 1
    paths = [entry["path"] for entry in replay.access_log()]
    assert any("offset=3" in p and f"checkin={checkin}" in p for p in paths)
