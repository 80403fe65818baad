"""booking_com search pages: every card a result, merged with the Apollo store; the
market prices are read in; the next offset (crawlers/spiders/booking_com/search.py)."""

from __future__ import annotations

import re
from pathlib import Path

from crawlers.items import GeoPoint
from crawlers.spiders.booking_com import extract_search, merge_results, page_market
from crawlers.spiders.currency import Market
from tests.sites.support import fixture, real_page, response

SITE = "booking_com"
HOST = "https://www.booking.com"
REGION = f"{HOST}/region/mx/tlaxcala.es.html"
DHAKA = (
    f"{HOST}/searchresults.html?ss=dhaka&dest_id=-2737683&dest_type=city"
    "&checkin=2025-03-29&checkout=2025-03-30&group_adults=2&no_rooms=1&group_children=0"
)
TAJ = f"{HOST}/hotel/in/the-taj-mahal-palace-mumbai.html"
NO_STORE = rb'<script[^>]*data-capla-store-data="apollo".*?</script>'
# Pages built for one defect each (tests/crawlers/spiders/pages/booking_com/).
PAGES = Path(__file__).parents[1] / "pages" / SITE
UBUD = f"{HOST}/searchresults.en-gb.html?ss=Ubud&checkin=2026-03-01&checkout=2026-03-02"


def without(pattern: bytes, body: bytes) -> bytes:
    stripped = re.sub(pattern, b"", body, flags=re.S)
    assert stripped != body, pattern
    return stripped


# -- search pages ----------------------------------------------------------------------------


def test_real_search_page_every_card_merged_with_the_apollo_store() -> None:
    """2025-12 layout: 220 cards, 30 of them in the store (their fields win)."""
    page = extract_search(response(real_page("booking_com/search_2025.html"), REGION))
    assert (page["source"], len(page["hotels"]), page["cards_only"]) == ("apollo", 220, 190)
    assert len({h["url"] for h in page["hotels"]}) == 220  # each property once
    first = page["hotels"][0]
    expected = {
        "url": f"{HOST}/hotel/mx/hb-express.html",  # the card's .es.html: one URL per hotel
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
    # The store's city is the property's own; the card's location line names the area.
    san_francisco = next(h for h in page["hotels"] if h["hotel_id"] == "277018")
    assert san_francisco["city"] == "Tlaxcala"
    last = page["hotels"][-1]  # a card the store does not hold
    assert last == {
        "url": f"{HOST}/hotel/mx/la-cabana-amaxac-de-guerrero.html",
        "hotel_id": "12482800",
        "name": "La cabaña",
        "address": None,
        "city": "San Bernabé Amaxac de Guerrero",
        "country": "MX",
        "star_rating": None,
        "review_score": None,
        "review_count": None,
        "price": None,
        "currency": None,
        "checkin": None,
        "checkout": None,
        "images": [
            "https://cf.bstatic.com/xdata/images/hotel/max1024x768/581052429.webp"
            "?k=b669534ff450a2e5a6efa18867663578219c1cf4054a67dc6119d11a79efa2dc&o="
        ],
    }
    # 220 results in all, all 220 on this page: no next offset.
    assert page["next_url"] is None


def test_real_search_page_cards_without_the_store() -> None:
    path = real_page("booking_com/search_2025.html")
    page = extract_search(response(path, REGION, without(NO_STORE, path.read_bytes())))
    assert (page["source"], len(page["hotels"]), page["cards_only"]) == ("cards", 220, 0)
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


def test_real_loaded_search_page_every_one_of_197_cards_is_a_result() -> None:
    """2025-03 layout, rendered after "load more": the store holds the first 25."""
    page = extract_search(response(real_page("booking_com/search_2025_03.html"), DHAKA))
    hotels = page["hotels"]
    assert (page["source"], len(hotels), page["cards_only"]) == ("apollo", 197, 172)
    assert len({h["url"] for h in hotels}) == 197
    assert {h["city"] for h in hotels} == {"Dhaka"}
    assert {(h["country"], h["currency"], h["checkin"], h["checkout"]) for h in hotels} == {
        ("BD", "BDT", "2025-03-29", "2025-03-30")
    }
    assert all(h["price"] for h in hotels)  # a dated search: every card is priced
    first = hotels[0]  # in the store: its street address and unrounded price win
    expected = {
        "url": f"{HOST}/hotel/bd/central-inn-xpress.html?checkin=2025-03-29&checkout=2025-03-30",
        "hotel_id": "13392465",
        "name": "Central Inn Dhaka",
        "property_type": "hotel",
        "address": "Toyenbee Circular Road 28/1/C, Toyenbee Circular Road Rahmania "
        "International Complex, Motijheel Dhaka",
        "city": "Dhaka",
        "review_score": 9.0,
        "review_count": 2,
        "price": 2746.1260007775586,  # the card prints "BDT 2,746"
    }
    assert {k: first[k] for k in expected} == expected
    beyond = hotels[25]  # the first card after the store's 25
    assert beyond == {
        "url": f"{HOST}/hotel/bd/the-elite-residence.html?checkin=2025-03-29&checkout=2025-03-30",
        "hotel_id": None,  # the card has none: the hotel page gives it
        "name": "The Elite Residence Dhaka",
        "address": "Uttara, Dhaka",
        "city": "Dhaka",
        "country": "BD",
        "star_rating": 4.0,
        "review_score": 6.9,
        "review_count": 248,
        "price": 4272.0,
        "currency": "BDT",
        "checkin": "2025-03-29",
        "checkout": "2025-03-30",
        "images": [
            "https://cf.bstatic.com/xdata/images/hotel/square240/642845454.jpg"
            "?k=85ae20d3b8fbbc77fd6c23634080227d03dd4d35917562f80df83ff763982c96&o="
        ],
    }
    # 199 results, 197 shown: the next page starts after them, not at the store's 25.
    assert page["next_url"] == f"{DHAKA}&offset=197"


def test_cards_and_store_merge_without_duplicates_and_the_store_wins_where_it_has_a_value() -> None:
    url = f"{HOST}/hotel/mx/a.html"
    store = [
        {"url": url, "hotel_id": "1", "address": "Calle 1", "city": "Tlaxcala", "price": 99.5},
        {"url": f"{HOST}/hotel/mx/only-in-store.html", "hotel_id": "3", "name": "S"},
    ]
    cards = [
        {"url": url, "hotel_id": None, "address": "Centro, Tlaxcala", "city": "Centro"},
        {"url": f"{HOST}/hotel/mx/b.html", "hotel_id": "2", "name": "B"},
        {"url": url, "hotel_id": None, "name": "A (featured again)"},
        {"url": f"{HOST}/hotel/mx/b.html", "hotel_id": "2", "name": "B"},
    ]
    cards[0].update(name="A", price=100.0, review_count=7)
    merged, cards_only = merge_results(store, cards)
    assert [h["url"].rsplit("/", 1)[1] for h in merged] == [
        "a.html",
        "b.html",
        "only-in-store.html",
    ]
    assert merged[0] == {
        "url": url,
        "hotel_id": "1",
        "name": "A",
        "address": "Calle 1",
        "city": "Tlaxcala",
        "price": 99.5,
        "review_count": 7,  # the store had none: the card's
    }
    assert cards_only == 1


# -- prices and their currency ------------------------------------------------------------------


def test_a_search_priced_in_rupiah_gives_idr_on_every_card_outside_the_store_too() -> None:
    page = extract_search(response(PAGES / "search-ubud-rp.html", UBUD))
    got = [(h["name"], h["hotel_id"], h["price"], h["currency"]) for h in page["hotels"]]
    assert got == [
        ("Villa Sawah Ubud", "9100001", 1_450_000.0, "IDR"),  # the store's
        ("Puri Tebing Resort", "9100002", 980_000.0, "IDR"),
        ("Rumah Padi Tegallalang", None, 1_234_567.0, "IDR"),  # its card: "Rp 1.234.567"
        ("Kubu Jatiluwih", None, 2_150_000.0, "IDR"),
        ("Pondok Bambu Sidemen", "9100007", 760_000.0, "IDR"),  # only in the store
    ]
    assert page["cards_only"] == 2


def test_the_rupiah_sign_alone_names_idr() -> None:
    """Neither the URL nor the page states the selected currency: "Rp" says it."""
    body = (PAGES / "search-ubud-rp.html").read_bytes()
    body = body.replace(b"b_selected_currency: 'IDR',", b"")
    body = body.replace(b'"currency": "IDR", "visitorIP"', b'"currency": "", "visitorIP"')
    store_less = without(NO_STORE, body)
    page = extract_search(response(PAGES / "search-ubud-rp.html", UBUD, store_less))
    assert page["source"] == "cards"
    assert [(h["price"], h["currency"]) for h in page["hotels"]] == [
        (1_450_000.0, "IDR"),
        (980_000.0, "IDR"),
        (1_234_567.0, "IDR"),
        (2_150_000.0, "IDR"),
    ]


def test_a_sign_is_read_in_the_page_language_and_selected_currency() -> None:
    relative = "fixtures/search/tlaxcala.html"
    body = fixture(SITE, relative).read_bytes()

    def currencies(printed: bytes, lang: bytes, query: str = "") -> set[str | None]:
        page = body.replace(b"MX$", printed).replace(b'lang="en-gb"', b'lang="' + lang + b'"')
        page = without(NO_STORE, page).replace(b'"currency": "MXN"', b'"currency": ""')
        url = f"{HOST}/searchresults.html?ss=Tlaxcala{query}"
        found = extract_search(response(fixture(SITE, relative), url, page))["hotels"]
        return {h["currency"] for h in found}

    assert currencies(b"MX$", b"en-gb") == {"MXN"}
    assert currencies(b"$", b"es-mx") == {"MXN"}  # "$" as Mexican Spanish prints pesos
    assert currencies(b"$", b"en-us") == {"USD"}
    assert currencies(b"$", b"en-ca") == {"CAD"}
    assert currencies(b"US$", b"en-gb") == {"USD"}
    # Spanish from Spain prints no currency as a bare "$": the selected currency settles it.
    assert currencies(b"$", b"es", "&selected_currency=MXN") == {"MXN"}
    assert currencies(b"$", b"es") == {None}  # never a guess
    assert currencies(b"Rp\xc2\xa0", b"id") == {"IDR"}
    assert currencies(b"\xe2\x82\xb9", b"en-gb") == {"INR"}  # the rupee sign
    assert currencies(b"", b"en-gb", "&selected_currency=EUR") == {"EUR"}  # bare amounts


def test_the_market_of_the_saved_pages() -> None:
    old = f"{HOST}/hotel/de/kempinski-bristol-berlin.html"
    pages = [
        ("search_2025.html", REGION, Market(("es",), "MXN")),
        ("search_2025_03.html", DHAKA, Market(("en_US",), "BDT")),
        ("hotel_2026.html", TAJ, Market(("en_US",), "INR")),
        ("hotel_old.html", old, Market(("en_GB",), "EUR")),
    ]
    for name, url, expected in pages:
        assert page_market(response(real_page(f"booking_com/{name}"), url)) == expected, name


# -- pagination --------------------------------------------------------------------------------


def test_the_next_offset_counts_the_results_the_page_shows_not_store_only_hotels() -> None:
    """4 cards from offset 0 (two beyond the store's 3); a fifth hotel only in the store.
    The next page starts at 4: counting the store-only hotel would skip result 5."""
    page = extract_search(response(PAGES / "search-ubud-rp.html", UBUD))
    assert len(page["hotels"]) == 5
    assert page["next_url"] == f"{UBUD}&offset=4"
    later = extract_search(response(PAGES / "search-ubud-rp.html", f"{UBUD}&offset=4"))
    assert later["next_url"] == f"{UBUD}&offset=8"
    last = extract_search(response(PAGES / "search-ubud-rp.html", f"{UBUD}&offset=8"))
    assert last["next_url"] is None  # 8 + 4 results reach the 12 in all
    # Without cards the store's results are what the page shows: 3 of them.
    body = re.sub(
        rb'<div class="a01b80ff51 e79328a50b a3ef594dad" data-id="\d*" data-testid="property-card"',
        b'<div class="gone"',
        (PAGES / "search-ubud-rp.html").read_bytes(),
    )
    store_only = extract_search(response(PAGES / "search-ubud-rp.html", UBUD, body))
    assert (store_only["source"], len(store_only["hotels"])) == ("apollo", 3)
    assert store_only["next_url"] == f"{UBUD}&offset=3"
