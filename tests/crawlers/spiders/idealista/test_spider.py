"""The idealista spider on its fixtures, block pages, and a crawl and the gate through the
replay (crawlers/spiders/idealista/spider.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from crawlers.spiders.idealista import (
    IdealistaSpider,
    extract_search_cards,
    next_page_url,
)
from fingerprints.gate import verify_site
from harness.replay_site import ReplaySite
from tests.sites.support import (
    crawl,
    fixture,
    fixture_response,
    real_page,
    response,
    verdict,
)

SITE = "idealista"
COM = "https://www.idealista.com"
# Pages built for one defect each (tests/crawlers/spiders/pages/idealista/).


# -- fixtures and the spider ---------------------------------------------------------------------


def test_search_fixture_links_details_and_the_next_page() -> None:
    path = "/en/venta-viviendas/madrid/barrio-de-salamanca/"
    page = fixture_response(SITE, "fixtures/search/venta-barrio-de-salamanca.html", COM + path)
    assert [c["listing_id"] for c in extract_search_cards(page)] == ["98130077", "98124560"]
    assert next_page_url(page) == f"{COM}{path}pagina-2.htm"
    last = fixture_response(
        SITE, "fixtures/search/venta-barrio-de-salamanca-pagina-2.html", f"{COM}{path}pagina-2.htm"
    )
    assert next_page_url(last) is None


def test_spanish_search_fixture_cards() -> None:
    url = f"{COM}/venta-viviendas/huesca-huesca/"
    page = fixture_response(SITE, "fixtures/search/venta-huesca.html", url)
    cards = extract_search_cards(page)
    got = [
        (c["listing_id"], c["price"], c["rooms"], c["area_m2"], c["floor"], c["features"])
        for c in cards
    ]
    assert got == [
        ("108200101", 168_000.0, 3, 95.0, "Planta 2ª", ["exterior", "lift"]),
        ("108200245", 215_000.0, 4, 132.0, "Planta 4ª", ["lift", "parking"]),
        ("108199870", 389_000.0, 5, 310.0, None, ["new_development"]),
        ("108199512", 79_500.0, None, 38.0, None, ["exterior"]),
        ("108198004", 142_000.0, 2, 70.0, "Bajo", ["lift"]),
        ("108197655", 131_000.0, 3, 104.0, "Entreplanta", ["exterior", "lift", "parking"]),
    ]
    assert [c["agency"] for c in cards] == [
        None,
        "Fincas Alto Aragón",
        None,
        None,
        "Huesca Home Inmobiliaria, S.L.",
        None,
    ]
    assert cards[0]["url"] == f"{COM}/inmueble/108200101/"
    assert next_page_url(page) == f"{url}pagina-2.htm"


def test_the_card_fills_what_the_detail_page_lacks() -> None:
    url = f"{COM}/inmueble/108198004/"
    page = fixture_response(
        SITE, "fixtures/search/venta-huesca.html", f"{COM}/venta-viviendas/huesca-huesca/"
    )
    card = next(c for c in extract_search_cards(page) if c["listing_id"] == "108198004")
    detail = response(
        Path("x.html"),
        url,
        b"<html><body><h1 class='main-info__title-main'>Piso en venta en plaza de Navarra</h1>"
        b"<span class='info-data-price'>142.000 \xe2\x82\xac</span>"
        b"<div class='details-property_features'><ul><li>Terraza</li></ul></div>"
        b"</body></html>",
    )
    spider = IdealistaSpider.from_crawler(get_crawler(IdealistaSpider), base_url=COM)
    [item] = list(spider.parse_listing(detail, card=card))
    assert (item.title, item.price) == ("Piso en venta en plaza de Navarra", 142_000.0)
    assert (item.floor, item.rooms, item.area_m2, item.agency) == (
        "Bajo",
        2,
        70.0,
        "Huesca Home Inmobiliaria, S.L.",
    )
    assert item.features == ["terrace", "lift"]  # the detail page's, then the card's


def test_a_detail_page_value_that_does_not_fit_is_the_card_s() -> None:
    """The detail page prints an area of 0 m² (an area is over 0): the card's, counted
    under the field, the page and the reason; the page's other values stay."""
    url = f"{COM}/inmueble/108198004/"
    page = fixture_response(
        SITE, "fixtures/search/venta-huesca.html", f"{COM}/venta-viviendas/huesca-huesca/"
    )
    card = next(c for c in extract_search_cards(page) if c["listing_id"] == "108198004")
    detail = response(
        Path("x.html"),
        url,
        b"<html><body><h1 class='main-info__title-main'>Piso en venta en plaza de Navarra</h1>"
        b"<span class='info-data-price'>142.000 \xe2\x82\xac</span>"
        b"<div class='info-features'><span>0 m\xc2\xb2</span></div></body></html>",
    )
    crawler = get_crawler(IdealistaSpider)
    spider = IdealistaSpider.from_crawler(crawler, base_url=COM)
    [item] = list(spider.parse_listing(detail, card=card))
    assert (item.area_m2, item.price) == (card["area_m2"], 142_000.0)
    assert card["area_m2"] == 70.0
    assert crawler.stats is not None
    assert (
        crawler.stats.get_value("fields/fallback/property_listing/area_m2/page/greater_than") == 1
    )


def test_a_detail_without_data_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler(IdealistaSpider)
    spider = IdealistaSpider.from_crawler(crawler, base_url=COM)
    blank = response(Path("x.html"), f"{COM}/en/inmueble/1/", b"<html><body><p>?</p></body></html>")
    assert list(spider.parse_listing(blank)) == []
    assert crawler.stats is not None
    assert crawler.stats.get_value("idealista/detail_unparsed") == 1


# -- block pages --------------------------------------------------------------------------------


def test_datadome_and_idealista_block_pages_are_recognised() -> None:
    real_block = real_page("idealista/datadome_block_page.html").read_bytes()
    for status in (403, 200):
        assert verdict(SITE, real_block, status).kind == "captcha"
    ours = fixture(SITE, "blocked/datadome-captcha.html").read_bytes()
    assert verdict(SITE, ours, 403).kind == "captcha"
    own = verdict(SITE, fixture(SITE, "blocked/uso-indebido.html").read_bytes(), 200)
    assert (own.kind, own.reason) == ("blocked", "idealista block page on a thin page")
    for name in (
        "detail_es_2026.html",
        "detail_pt_2025.html",
        "search_pt_2025.html",
        "search_es_2025.html",
    ):
        # Real pages load DataDome's tags.js and carry login-form CAPTCHAs: still ok.
        assert verdict(SITE, real_page(f"idealista/{name}").read_bytes()).ok, name
    for page in sorted(fixture(SITE, "fixtures").glob("*/*.html")):
        assert verdict(SITE, page.read_bytes()).ok, page.name


# -- the replay: a crawl through the replay as proxy, and the gate on a block page ----------------


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    with ReplaySite(SITE, run_dir=tmp_path_factory.mktemp("replay")) as site:
        yield site


def test_crawl_of_the_replay_follows_pagination_to_every_detail(
    replay: ReplaySite, tmp_path: Path
) -> None:
    replay.clear_log()
    result = crawl(SITE, replay, tmp_path)
    assert result.returncode == 0, result.log[-3000:]
    assert result.errors() == []
    by_id = {item["listing_id"]: item for item in result.items}
    assert sorted(by_id) == ["98124560", "98130077", "98177312", "98201845"]
    assert result.stat("validation/valid/property_listing") == 4
    from_page_two = by_id["98177312"]  # linked from the second result page only
    assert from_page_two["url"] == f"{replay.url}/en/inmueble/98177312/"
    assert (from_page_two["price"], from_page_two["rooms"], from_page_two["country"]) == (
        315_000.0,
        0,
        "ES",
    )
    rent = by_id["98201845"]
    assert (rent["operation"], rent["price"], rent["location"]) == (
        "rent",
        1350.0,
        {"lat": 39.4613, "lon": -0.3731},
    )
    log = replay.access_log()
    assert log[0]["path"] == "/robots.txt"
    assert "/en/venta-viviendas/madrid/barrio-de-salamanca/pagina-2.htm" in [e["path"] for e in log]
    assert all(entry["proxied"] for entry in log)  # needs_proxies: every request via a proxy


def test_the_gate_reports_a_datadome_answer_as_blocked(
    replay: ReplaySite,
) -> None:
    sample = {"search": ["/blocked/datadome"], "detail": ["/en/inmueble/98124560/"]}
    result = verify_site(
        SITE,
        base_url=replay.url,
        sample=sample,
        timeout=120,
        settings=replay.crawl_settings(),
    )
    assert (result.passed, result.status) == (False, "blocked"), result.summary()
    assert "datadome captcha" in result.reason
    assert result.changed_page_types == []
