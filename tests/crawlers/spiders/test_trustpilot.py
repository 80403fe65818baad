"""trustpilot: extraction from saved real pages and fixtures, and a crawl of the replay."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from parsel import Selector
from scrapy.utils.test import get_crawler

from crawlers.items import Review
from crawlers.spiders.trustpilot import TrustpilotSpider, extract_company_page
from harness.replay_site import ReplaySite
from tests.sites.support import (
    crawl,
    fixture,
    fixture_response,
    real_page,
    real_response,
    response,
    verdict,
)

SITE = "trustpilot"
HOST = "https://www.trustpilot.com"
FIXTURES = "fixtures/company_reviews"


def _without(body: bytes, *patterns: str) -> bytes:
    text = body.decode("utf-8")
    for pattern in patterns:
        text = re.sub(pattern, "", text, flags=re.S)
    return text.encode("utf-8")


NO_NEXT_DATA = r'<script id="__NEXT_DATA__".*?</script>'
NO_JSONLD = r'<script type="application/ld\+json".*?</script>'


# -- saved real pages ---------------------------------------------------------------------------


def test_real_company_page_business_reviews_and_next_page() -> None:
    page = extract_company_page(
        real_response("trustpilot/beautytheshop.com_2025.html", f"{HOST}/review/beautytheshop.com")
    )
    assert page.layers == ("next_data", "jsonld", "cards")
    assert page.subject is not None
    assert page.subject.name == "BeautyTheShop"
    assert page.subject.subject_id == "beautytheshop.com"
    assert page.subject.category == "Perfume Store"
    assert (page.rating, page.review_count) == (4.3, 3498)
    assert (page.current_page, page.total_pages) == (1, 39)
    assert page.next_url == f"{HOST}/review/beautytheshop.com?page=2"
    assert len(page.reviews) == 20
    first = page.reviews[0]
    assert first["review_id"] == "68228cf64532930794f74c50"
    assert first["url"] == f"{HOST}/reviews/68228cf64532930794f74c50"
    assert first["author"] == "Barb Young"
    assert first["author_country"] == "US"
    assert first["rating"] == 5.0
    assert first["title"] == "What the ordering process should be like."
    assert first["body"].startswith("Easy to navigate the ordering page of the website")
    assert first["published_at"] == "2025-05-13T02:06:14.000Z"
    assert first["experienced_at"] == "2025-05-11T00:00:00.000Z"
    assert first["verified"] is True
    replied = next(r for r in page.reviews if r["review_id"] == "68195b91cbf54dd2df1a8eff")
    assert replied["reply"].startswith("Thank you so much for your kind words.")
    assert sum(1 for r in page.reviews if r["reply"]) == 16


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "burgerking.no_2025.html",
            ("Burger King", 3.9, 333, 19, "681212c2b626af4cb337a959", "Bernardo Green", 4.0),
        ),
        (
            "djmania.es_2025.html",
            ("DJMania", 3.9, 194, 4, "6811ea2153a787fffa8bda6a", "Ben Wiegelmann", 1.0),
        ),
    ],
)
def test_other_real_company_pages(name: str, expected: tuple[object, ...]) -> None:
    slug = name.removesuffix("_2025.html")
    page = extract_company_page(real_response(f"trustpilot/{name}", f"{HOST}/review/{slug}"))
    assert page.subject is not None
    first = page.reviews[0]
    got = (
        page.subject.name,
        page.rating,
        page.review_count,
        len(page.reviews),
        first["review_id"],
        first["author"],
        first["rating"],
    )
    assert got == expected
    assert page.next_url is None  # a single page of reviews in the selected language


def test_2024_saved_page_is_still_read() -> None:
    # A different layout generation (the gate reports it as changed), same state shape.
    page = extract_company_page(
        real_response("trustpilot/twenix.es.html", f"{HOST}/review/twenix.es")
    )
    assert page.subject is not None and page.subject.name == "Twenix"
    assert (page.rating, page.review_count, page.total_pages) == (4.4, 85, 4)
    first = page.reviews[0]
    assert (first["author"], first["title"], first["language"]) == (
        "Agustina Chiacchiarini",
        "Excelente experiencia con Twenix",
        "es",
    )


COMPARED = ("review_id", "author", "rating", "title", "published_at")


def _layer_views(path: Path, url: str) -> dict[str, list[tuple[object, ...]]]:
    body = path.read_bytes()
    views = {}
    for layer, stripped in {
        "all": body,
        "jsonld": _without(body, NO_NEXT_DATA),
        "cards": _without(body, NO_NEXT_DATA, NO_JSONLD),
    }.items():
        page = extract_company_page(response(path, url, stripped))
        assert page.subject is not None, layer
        views[layer] = [tuple(r[k] for k in COMPARED) for r in page.reviews]
    return views


def test_each_fallback_layer_alone_gives_the_same_reviews_on_a_real_page() -> None:
    path = real_page("trustpilot/beautytheshop.com_2025.html")
    views = _layer_views(path, f"{HOST}/review/beautytheshop.com")
    assert views["jsonld"] == views["all"]
    # The cards show an edited review's update time where the state has its first
    # publication: ids, authors, ratings and titles are the same.
    assert [v[:4] for v in views["cards"]] == [v[:4] for v in views["all"]]


# -- fixtures -------------------------------------------------------------------------------------


def _state_reviews(relative: str) -> list[dict[str, object]]:
    body = fixture(SITE, relative).read_text(encoding="utf-8")
    raw = Selector(body).css("script#__NEXT_DATA__::text").get()
    assert raw is not None
    return list(json.loads(raw)["props"]["pageProps"]["reviews"])


def test_fixture_pages_read_like_the_real_ones() -> None:
    url = f"{HOST}/review/lumenlamps.example"
    page = extract_company_page(fixture_response(SITE, f"{FIXTURES}/lumenlamps-page-1.html", url))
    assert page.next_url == f"{url}?page=2"
    assert [r["review_id"] for r in page.reviews] == [
        r["id"] for r in _state_reviews(f"{FIXTURES}/lumenlamps-page-1.html")
    ]
    last = extract_company_page(
        fixture_response(SITE, f"{FIXTURES}/lumenlamps-page-2.html", f"{url}?page=2")
    )
    assert last.next_url is None
    views = _layer_views(fixture(SITE, f"{FIXTURES}/lumenlamps-page-1.html"), url)
    assert views["jsonld"] == views["all"] == views["cards"]


def test_a_page_without_reviews_is_counted_not_dropped_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(TrustpilotSpider)
    spider = TrustpilotSpider.from_crawler(crawler, base_url=HOST)
    empty = response(
        Path("empty.html"), f"{HOST}/review/x", b"<html><body><h1>?</h1></body></html>"
    )
    assert list(spider.parse(empty)) == []
    assert crawler.stats is not None
    assert crawler.stats.get_value("trustpilot/company_unparsed") == 1
    assert any("no business and no reviews" in r.getMessage() for r in caplog.records)


# -- block pages --------------------------------------------------------------------------------


def test_block_pages_are_recognised_and_real_pages_are_not() -> None:
    challenge = fixture(SITE, "blocked/cloudflare-challenge.html").read_bytes()
    firewall = fixture(SITE, "blocked/cloudflare-firewall.html").read_bytes()
    assert verdict(SITE, challenge, 403).kind == "challenge"
    assert verdict(SITE, challenge, 200).kind == "challenge"
    assert verdict(SITE, firewall, 200).kind == "blocked"  # the site's own marker
    assert "cloudflare firewall block" in verdict(SITE, firewall, 200).reason
    for path in sorted(fixture(SITE, FIXTURES).glob("*.html")):
        assert verdict(SITE, path.read_bytes()).ok, path.name
    for name in ("beautytheshop.com_2025.html", "twenix.es.html"):
        assert verdict(SITE, real_page(f"trustpilot/{name}").read_bytes()).ok, name


# -- the replay crawl ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    with ReplaySite(SITE, run_dir=tmp_path_factory.mktemp("replay")) as site:
        yield site


def test_crawl_of_the_replay_follows_pagination(replay: ReplaySite, tmp_path: Path) -> None:
    result = crawl(SITE, replay, tmp_path)
    assert result.returncode == 0, result.log[-3000:]
    assert result.errors() == []
    expected = {
        r["id"]
        for name in ("lumenlamps-page-1.html", "lumenlamps-page-2.html", "harbourbikes.html")
        for r in _state_reviews(f"{FIXTURES}/{name}")
    }
    ids = [item["review_id"] for item in result.items]
    assert sorted(ids) == sorted(expected)  # page 2 included, nothing twice
    assert result.stat("validation/valid/review") == len(expected)
    by_id = {item["review_id"]: item for item in result.items}
    second_page = _state_reviews(f"{FIXTURES}/lumenlamps-page-2.html")[0]
    item = by_id[str(second_page["id"])]
    Review(**{**item, "subject": None})  # the item's fields are Review's
    assert item["subject"]["name"] == "Lumen Lamps"
    assert item["subject"]["url"] == f"{replay.url}/review/lumenlamps.example"
    assert (item["subject_rating"], item["subject_review_count"]) == (4.2, 13)
    assert item["url"].startswith(replay.url + "/reviews/")
    paths = [entry["path"] for entry in replay.access_log()]
    assert paths[0] == "/robots.txt"
    assert "/review/lumenlamps.example?page=2" in paths
    assert len(paths) == len(set(paths))


# -- the printed date of experience ------------------------------------------------------------


def test_printed_dates_of_experience_when_the_state_has_none() -> None:
    """copperkettle's state holds experiencedDate null on every review; its cards print
    the date ("May 25, 2025"): the date is read from the card."""
    url = f"{HOST}/review/copperkettle.example"
    page = extract_company_page(fixture_response(SITE, f"{FIXTURES}/copperkettle.html", url))
    assert b'"experiencedDate": null' in fixture(SITE, f"{FIXTURES}/copperkettle.html").read_bytes()
    assert [r["experienced_at"] for r in page.reviews] == [
        "2025-05-25",
        "2025-05-24",
        "2025-05-23",
        "2025-05-22",
    ]


def test_the_real_page_printed_dates_match_its_state() -> None:
    name = "trustpilot/beautytheshop.com_2025.html"
    url = f"{HOST}/review/beautytheshop.com"
    body = real_page(name).read_bytes()
    stated = extract_company_page(response(real_page(name), url, body))
    nulled = re.sub(rb'"experiencedDate":"[^"]*"', b'"experiencedDate":null', body)
    printed = extract_company_page(response(real_page(name), url, nulled))
    assert [r["experienced_at"] for r in printed.reviews] == [
        r["experienced_at"][:10] for r in stated.reviews
    ]


def test_a_printed_date_is_read_in_the_page_language() -> None:
    def page(lang: str, label: str, date: str) -> bytes:
        return (
            f'<html lang="{lang}"><body><h1><span class="title_displayName__x">Kaffee</span>'
            "</h1><article data-service-review-card-paper>"
            '<div data-service-review-rating="4"></div><a href="/reviews/abc123">t</a>'
            f"<p data-service-review-date-of-experience-typography><b>{label}:</b> "
            f"<span>{date}</span></p></article></body></html>"
        ).encode()

    url = f"{HOST}/review/kaffee.example"
    german = extract_company_page(
        response(Path("x.html"), url, page("de-DE", "Erlebnisdatum", "12. Mai 2024"))
    )
    assert [r["experienced_at"] for r in german.reviews] == ["2024-05-12"]
    # en-GB prints day first: 03/04/2024 is the 3rd of April.
    british = extract_company_page(
        response(Path("x.html"), url, page("en-GB", "Date of experience", "03/04/2024"))
    )
    assert [r["experienced_at"] for r in british.reviews] == ["2024-04-03"]
