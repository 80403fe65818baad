"""The booking_com spider: dated start entries, block pages, the fingerprint of each saved
page, and a replay crawl (crawlers/spiders/booking_com/spider.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from crawlers.spiders.booking_com import BookingComSpider
from fingerprints.baselines.store import FingerprintConfig, load_baseline
from fingerprints.gate import Page, check_page
from harness.replay_site import ReplaySite
from tests.sites.support import crawl, fixture, real_page, site_rules, verdict

SITE = "booking_com"
HOST = "https://www.booking.com"


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
    real_waf = real_page("booking_com/awswaf_block_page.html").read_bytes()
    assert str(verdict(SITE, real_waf, 202)) == "challenge: aws waf challenge on a thin page"
    challenge = fixture(SITE, "blocked/aws-waf-challenge.html").read_bytes()  # modelled on it
    assert str(verdict(SITE, challenge, 202)) == "challenge: aws waf challenge on a thin page"
    captcha = fixture(SITE, "blocked/aws-waf-captcha.html").read_bytes()  # assumed variant
    assert verdict(SITE, captcha, 405).kind == "captcha"
    assert verdict(SITE, captcha, 200).reason == "aws waf captcha on a thin page"
    # Real pages load the same WAF script (challenge.js) for a silent token.
    for name in ("search_2025.html", "search_2025_03.html", "hotel_2026.html", "hotel_old.html"):
        assert verdict(SITE, real_page(f"booking_com/{name}").read_bytes()).ok, name
    for page in sorted(fixture(SITE, "fixtures").glob("*/*.html")):
        assert verdict(SITE, page.read_bytes()).ok, page.name


@pytest.mark.parametrize(
    ("name", "page_type", "outcome"),
    [
        ("booking_com/hotel_2026.html", "hotel", "ok"),
        ("booking_com/search_2025.html", "search", "ok"),
        # Older layout generations the spider still reads; the gate reports them as changes.
        ("booking_com/search_2025_03.html", "search", "changed"),
        ("booking_com/hotel_old.html", "hotel", "changed"),
    ],
)
def test_saved_pages_against_the_committed_baseline(
    name: str, page_type: str, outcome: str
) -> None:
    body = real_page(name).read_bytes()
    baseline = load_baseline(SITE)
    threshold = baseline.threshold_for(page_type, FingerprintConfig.for_site(SITE))
    check = check_page(Page(name, page_type, 200, {}, body), baseline, threshold, site_rules(SITE))
    print(f"{name} vs {page_type}: {check.similarity:.3f}")
    assert check.outcome == outcome, check.reason
    if outcome == "ok":
        assert check.similarity >= 0.95


# -- a crawl of the replay -------------------------------------------------------------------


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
    assert sorted(by_id) == [f"910000{n}" for n in range(1, 7)]
    assert result.stat("validation/valid/hotel") == 6
    checkin = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    second_page = by_id["9100004"]  # only on offset=3
    assert (second_page["price"], second_page["currency"], second_page["checkin"]) == (
        1120.0,
        "MXN",
        checkin,
    )
    assert second_page["amenities"] == ["Kitchenette", "Free WiFi", "Family rooms"]
    assert second_page["url"].startswith(f"{replay.url}/hotel/mx/suites-huamantla-centro.html?")
    # A card beyond the store's results: the card, then its hotel page, made one item.
    cabin = by_id["9100006"]
    expected = {
        "name": "Cabañas Bosque de Tlaxco",
        "property_type": "guest_house",  # from the hotel page
        "address": "Camino a la Presa 4, El Rosario, 90250 Tlaxco, Mexico",
        "city": "Tlaxco",
        "price": 2150.0,  # from the card
        "currency": "MXN",
        "checkin": checkin,
        "review_count": 34,
        "incomplete": None,
    }
    assert {k: cabin[k] for k in expected} == expected
    assert cabin["location"] == {"lat": 19.618, "lon": -98.1165}
    assert result.stat("booking_com/cards_beyond_store") == 1
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
    assert sum("/hotel/mx/cabanas-bosque-tlaxco.html" in p for p in paths) == 1
