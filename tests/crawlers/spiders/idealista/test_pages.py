"""idealista's pages read: the saved real detail pages of idealista.com and .pt and
their search pages, the markup alone (crawlers/spiders/idealista/pages.py, words.py)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from crawlers.spiders.idealista import (
    IdealistaSpider,
    extract_listing,
    extract_search_cards,
    next_page_url,
)
from tests.sites.support import (
    fixture,
    fixture_response,
    real_page,
    real_response,
    response,
)

SITE = "idealista"
COM = "https://www.idealista.com"
PT = "https://www.idealista.pt"
# Pages built for one defect each (tests/crawlers/spiders/pages/idealista/).
PAGES = Path(__file__).parents[1] / "pages" / SITE


# -- saved real pages ---------------------------------------------------------------------------


def test_real_detail_page_of_idealista_com() -> None:
    url = f"{COM}/en/inmueble/106387165/"
    fields = extract_listing(real_response("idealista/detail_es_2026.html", url))
    expected = {
        "url": url,
        "listing_id": "106387165",
        "title": "Duplex for sale in Calle de Alcalá",
        "operation": "sale",
        "property_type": "duplex",
        "price": 3_600_000.0,
        "currency": "EUR",
        "price_per_m2": 13_187.0,
        "area_m2": 273.0,
        "rooms": 4,
        "bathrooms": 5,
        "floor": "5th floor",
        "address": "Calle de Alcalá",
        "neighbourhood": "Goya",
        "city": "Madrid",
        "region": "Madrid",
        "country": "ES",
        "location": None,  # the advertiser hid the exact address
        "agency": "Walter Haus Salamanca",
    }
    assert {k: fields[k] for k in expected} == expected
    assert {"terrace", "balcony", "lift", "air_conditioning"} <= set(fields["features"])
    assert fields["description"].startswith("We present to you EXCLUSIVELY a unique property")
    assert fields["images"][0].endswith("/c0/ac/cc/1382500227.jpg")
    # Every photo of its galleries once (plans included), whatever the size or format;
    # not the video's poster.
    assert len(fields["images"]) == len(set(fields["images"])) == 118
    assert all(url.startswith("https://img4.idealista.com/") for url in fields["images"])


def test_real_detail_page_of_idealista_pt() -> None:
    url = f"{PT}/imovel/33492587/"
    fields = extract_listing(real_response("idealista/detail_pt_2025.html", url))
    got = {k: fields[k] for k in ("listing_id", "operation", "price", "area_m2", "rooms")}
    assert got == {
        "listing_id": "33492587",
        "operation": "sale",
        "price": 2_700_000.0,
        "area_m2": 254.0,
        "rooms": 3,  # "T3"
    }
    assert (fields["title"], fields["floor"], fields["country"]) == (
        "Apartamento t3 à venda na Rua da Junqueira",
        "1º andar",
        "PT",
    )
    # "Junqueira, Alcântara": a neighbourhood and a parish of Lisbon. This slimmer page
    # has no location list naming the municipality: no city rather than the parish.
    assert (fields["neighbourhood"], fields["city"], fields["currency"]) == (
        "Junqueira",
        None,
        "EUR",
    )
    # Its gallery is the first picture alone (1 of 46 in the markup; the rest load later).
    assert fields["images"] == [
        "https://img4.idealista.pt/blur/WEB_DETAIL_TOP-L-L/0/id.pro.pt.image.master/92/9d/16/248368402.jpg"
    ]


def test_pt_detail_city_is_the_municipality_not_the_parish() -> None:
    """idealista.pt: the title line ends with the parish ("Cascais e Estoril"); the
    location list names the municipality after it ("Cascais, Lisboa")."""
    url = f"{PT}/imovel/98300001/"
    page = response(PAGES / "detail-pt-imovel-98300001.html", url)
    fields = extract_listing(page)
    expected = {
        "address": "Rua das Acácias",
        "neighbourhood": "Quinta da Marinha",
        "city": "Cascais",
        "region": "Lisboa",
        "country": "PT",
        "price": 4_750_000.0,
        "currency": "EUR",
    }
    assert {k: fields[k] for k in expected} == expected
    # The parish labelled in the list (another UI language): the last entry still names
    # the municipality.
    body = (PAGES / "detail-pt-imovel-98300001.html").read_bytes()
    labelled = body.replace(b">Cascais e Estoril</li>", b">Parish Cascais e Estoril</li>")
    assert extract_listing(response(PAGES, url, labelled))["city"] == "Cascais"
    # A list that ends with the parish's municipality alone.
    short = body.replace(b">Cascais, Lisboa</li>", b">Cascais</li>")
    assert extract_listing(response(PAGES, url, short))["city"] == "Cascais"
    # Without the list, the parish is never given as the city.
    bare = re.sub(rb'<div id="headerMap".*?</ul></div>', b"", body, flags=re.S)
    assert extract_listing(response(PAGES, url, bare))["city"] is None
    # A replay of the .pt site on loopback: the profile's country says which rule.
    replay = extract_listing(response(PAGES, "http://127.0.0.1:8012/imovel/98300001/", body), "PT")
    assert (replay["city"], replay["country"]) == ("Cascais", "PT")


def test_com_detail_city_is_the_municipality_of_the_title_line() -> None:
    url = f"{COM}/en/inmueble/98124560/"
    fields = extract_listing(fixture_response(SITE, "fixtures/detail/inmueble-98124560.html", url))
    assert (fields["neighbourhood"], fields["city"], fields["region"]) == (
        "Recoletos",
        "Madrid",
        "Madrid",
    )


def test_detail_photos_from_the_scripts_and_the_gallery_markup_once_each() -> None:
    pt = extract_listing(
        response(PAGES / "detail-pt-imovel-98300001.html", f"{PT}/imovel/98300001/")
    )
    master = "https://img4.idealista.pt/blur/WEB_DETAIL/0/id.pro.pt.image.master/3a/1b/0c"
    # The first picture (two sizes, two formats) and og:image are the script's first photo.
    assert pt["images"] == [f"{master}/{n}.jpg" for n in (300417001, 300417002, 300417003)]

    url = f"{COM}/en/inmueble/98300002/"
    page = extract_listing(response(PAGES / "detail-gallery-markup-98300002.html", url))
    master = "https://img3.idealista.com/blur/{}/0/id.pro.es.image.master/5e/7f"
    assert page["images"] == [
        # The first picture (jpeg before its webp source; the carousel repeats it).
        f"{master.format('WEB_DETAIL_TOP-L-L')}/01/711200001.jpg",
        # The older layout's slides: data-ondemand-img, protocol-relative, made absolute;
        # their placeholder src and the loading spinner are no photos.
        f"{master.format('WEB_DETAIL')}/02/711200002.jpg",
        f"{master.format('WEB_DETAIL')}/03/711200003.jpg",
        f"{master.format('WEB_DETAIL')}/04/711200004.jpg",
    ]  # and not the recommended listing's photo beside the gallery


def test_real_search_page_cards_and_next_page() -> None:
    url = f"{PT}/comprar-casas/cascais/?ordem=precos-desc"
    page = real_response("idealista/search_pt_2025.html", url)
    cards = extract_search_cards(page)
    assert len(cards) == 30
    first = cards[0]
    assert first["url"] == f"{PT}/imovel/34609275/"
    assert (first["listing_id"], first["price"], first["area_m2"], first["rooms"]) == (
        "34609275",
        36_500_000.0,
        2_500.0,
        8,
    )
    assert first["agency"] == "Atlantic Houses Luxury Real Estate ®"
    assert next_page_url(page) == f"{PT}/comprar-casas/cascais/pagina-2?ordem=precos-desc"
    palace = next(card for card in cards if card["listing_id"] == "34012525")
    assert {k: palace[k] for k in ("rooms", "area_m2", "floor", "features", "agency")} == {
        "rooms": 10,  # "T10"
        "area_m2": 1_455.0,  # "1.455 m² área bruta"
        "floor": "Rés do chão",
        "features": ["parking"],  # "Garagem incluída"
        "agency": "Porta da Frente Christie\u2019s Real Estate Internacional",
    }
    assert [c["floor"] for c in cards].count(None) == 29  # the only card that shows a floor


LLEIDA = f"{COM}/venta-viviendas/lleida-lleida/?ordenado-por=fecha-publicacion-desc"


def _without_description(card: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in card.items() if k != "description"}


def test_real_search_page_of_idealista_com_in_spanish() -> None:
    page = real_response("idealista/search_es_2025.html", LLEIDA)
    cards = extract_search_cards(page)
    assert len(cards) == 30  # two advertising articles left out
    ids = [card["listing_id"] for card in cards]
    assert len(set(ids)) == 30
    assert all(card["url"] == f"{COM}/inmueble/{card['listing_id']}/" for card in cards)
    assert all((card["currency"], card["price"] is not None) == ("EUR", True) for card in cards)
    assert _without_description(cards[0]) == {
        "url": f"{COM}/inmueble/107654102/",
        "listing_id": "107654102",
        "title": "Casa o chalet independiente en Ciutat Jardí, Lleida",
        "price": 525_000.0,  # "525.000€"
        "currency": "EUR",
        "area_m2": 260.0,
        "rooms": 5,  # "5 hab."
        "floor": None,  # a house: no floor line
        "features": None,
        "agency": None,
    }
    assert cards[0]["description"].startswith("En breve presentamos chalet unifamiliar de 220m2")
    assert _without_description(cards[-1]) == {
        "url": f"{COM}/inmueble/107609581/",
        "listing_id": "107609581",
        "title": "Piso en Sant Salvador, 14, Pardinyes, Lleida",
        "price": 260_000.0,
        "currency": "EUR",
        "area_m2": 130.0,
        "rooms": 4,
        "floor": "Planta 1ª",  # "Planta 1ª exterior con ascensor"
        # exterior, con ascensor; the "Obra nueva" ribbon; "Garaje incluido"
        "features": ["exterior", "lift", "new_development", "parking"],
        "agency": None,
    }
    # After the "Destacado" label: a featured card with the advertiser's logo, on the
    # ground floor ("Bajo exterior con ascensor").
    featured = cards[20]
    assert _without_description(featured) == {
        "url": f"{COM}/inmueble/107627142/",
        "listing_id": "107627142",
        "title": "Piso en calle Bellavista, 13, La Bordeta, Lleida",
        "price": 98_000.0,
        "currency": "EUR",
        "area_m2": 61.0,
        "rooms": 2,
        "floor": "Bajo",
        "features": ["exterior", "lift"],
        "agency": "IMMO CENTRE GESTOR LLEIDA, S.L.U.",
    }
    by_id = {card["listing_id"]: card for card in cards}
    # Floor lines without a level: " exterior con ascensor", " sin ascensor",
    # " exterior sin ascensor"; a level without more: "Planta 3ª ".
    quirks = {
        i: (by_id[i]["floor"], by_id[i]["features"])
        for i in ("107642432", "107630217", "107410720", "107621047", "107651666")
    }
    assert quirks == {
        "107642432": (None, ["exterior", "lift", "parking"]),
        "107630217": (None, None),
        "107410720": (None, ["exterior"]),
        "107621047": ("Planta 3ª", None),
        "107651666": ("Planta 3ª", ["lift", "parking"]),  # "Planta 3ª con ascensor"
    }
    assert by_id["107638083"]["rooms"] is None  # "Estudio": the card shows no bedrooms
    floors = [card["floor"] for card in cards]
    assert (floors.count(None), floors.count("Planta 5ª"), floors.count("Bajo")) == (13, 4, 1)
    agencies = {card["listing_id"]: card["agency"] for card in cards if card["agency"]}
    assert agencies == {  # every card with a logo-branding picture, and only those
        "107651666": "TESTA HOMES",
        "107616323": "Nivell immobiliaria",
        "107627142": "IMMO CENTRE GESTOR LLEIDA, S.L.U.",
        "107410720": "EQUIHABITAT",
        "107612806": "Rencasa",
    }
    assert next_page_url(page) == (
        f"{COM}/venta-viviendas/lleida-lleida/pagina-2.htm?ordenado-por=fecha-publicacion-desc"
    )


@pytest.mark.parametrize(
    ("name", "url", "next_url"),
    [
        pytest.param(
            "search_es_2025.html",
            LLEIDA,
            f"{COM}/venta-viviendas/lleida-lleida/pagina-2.htm?ordenado-por=fecha-publicacion-desc",
            id="es",
        ),
        pytest.param(
            "search_pt_2025.html",
            f"{PT}/comprar-casas/cascais/?ordem=precos-desc",
            f"{PT}/comprar-casas/cascais/pagina-2?ordem=precos-desc",
            id="pt",
        ),
    ],
)
def test_the_spider_follows_every_card_and_the_next_page(
    name: str, url: str, next_url: str
) -> None:
    page = real_response(f"idealista/{name}", url).replace(request=scrapy.Request(url))
    spider = IdealistaSpider.from_crawler(get_crawler(IdealistaSpider), base_url=COM)
    requests = asyncio.run(outputs(spider.parse(page)))
    assert all(isinstance(r, scrapy.Request) for r in requests)
    details, pages = requests[:-1], requests[-1]
    cards = extract_search_cards(page)
    assert [r.url for r in details] == [card["url"] for card in cards]
    assert [r.cb_kwargs["card"] for r in details] == cards
    assert all(r.callback == spider.parse_listing for r in details)
    assert (pages.url, pages.callback, pages.meta["listing_page"]) == (next_url, spider.parse, 2)


async def outputs(result: AsyncIterator[Any]) -> list[Any]:
    return [output async for output in result]


def _without_scripts(body: bytes) -> bytes:
    return re.sub(rb"<script(?![^>]*\bsrc=).*?</script>", b"", body, flags=re.S)


@pytest.mark.parametrize(
    ("path", "url"),
    [
        pytest.param("real", f"{COM}/en/inmueble/106387165/", id="real"),
        pytest.param("fixture", f"{COM}/en/inmueble/98124560/", id="fixture"),
    ],
)
def test_the_markup_alone_gives_the_same_core_fields(path: str, url: str) -> None:
    source = (
        real_page("idealista/detail_es_2026.html")
        if path == "real"
        else fixture(SITE, "fixtures/detail/inmueble-98124560.html")
    )
    full = extract_listing(response(source, url))
    markup = extract_listing(response(source, url, _without_scripts(source.read_bytes())))
    core = ("listing_id", "title", "operation", "price", "area_m2", "rooms", "floor", "city")
    assert {k: markup[k] for k in core} == {k: full[k] for k in core}
