"""booking_com hotel pages: the saved 2026 and 2016-18 pages and the fixtures modelled on
them, layer by layer; a dated page's price; a search result completed by its hotel page
(crawlers/spiders/booking_com/hotel.py)."""

from __future__ import annotations

import re

from crawlers.items import GeoPoint
from crawlers.spiders.booking_com import extract_hotel, merge_hotel
from tests.sites.support import fixture, fixture_response, real_page, response

SITE = "booking_com"
HOST = "https://www.booking.com"
TAJ = f"{HOST}/hotel/in/the-taj-mahal-palace-mumbai.html"
NO_STORE = rb'<script[^>]*data-capla-store-data="apollo".*?</script>'
NO_JSONLD = rb"<script[^>]*application/ld\+json[^>]*>.*?</script>"


def without(pattern: bytes, body: bytes) -> bytes:
    stripped = re.sub(pattern, b"", body, flags=re.S)
    assert stripped != body, pattern
    return stripped


TAJ_FIELDS = {
    "hotel_id": "2451595",
    "name": "The Taj Mahal Palace, Mumbai",
    "property_type": "hotel",
    "address": "Apollo Bunder Road The Taj Mahal Palace, Colaba, 400001 Mumbai, India",
    "city": "Mumbai",  # JSON-LD's addressLocality says "Apollo Bunder Road The Taj Mahal Palace"
    "country": "IN",
    "location": GeoPoint(lat=18.9216373548013, lon=72.8331752172471),
    "star_rating": 5.0,
    "review_score": 9.2,
    "review_count": 2469,  # as shown; JSON-LD says 2473
    "amenities": [
        "Outdoor swimming pool",
        "Free Wifi",
        "Airport shuttle",
        "Family rooms",
        "Free parking",
        "Fitness centre",
        "10 restaurants",
        "Tea/Coffee Maker in All Rooms",
        "Bar",
        "Very Good Breakfast",
    ],
    # Loaded without dates: no price, whatever the URL asked for.
    "price": None,
    "currency": None,
    "checkin": None,
    "checkout": None,
}


def test_real_current_hotel_page_every_field() -> None:
    path = real_page("booking_com/hotel_2026.html")
    hotel = extract_hotel(response(path, TAJ))
    assert {k: hotel[k] for k in TAJ_FIELDS} == TAJ_FIELDS
    description = hotel["description"]
    assert description.startswith("Built in 1903, the iconic Taj Mahal Palace stands")
    assert description.endswith("Mumbai International Airport is 26 km away.")
    assert description.count("\n\n") == 4  # five paragraphs (JSON-LD's is one sentence)
    images = hotel["images"]
    assert len(images) == 45 == len(set(images))  # the gallery's 8, then the store's others
    assert images[:2] == [
        "https://cf.bstatic.com/xdata/images/hotel/max1024x768/103705059.jpg"
        "?k=9e078265b31ad1815a573da8ed2a665f863e3925e1efd730df703421868a2ada&o=",
        "https://cf.bstatic.com/xdata/images/hotel/max1024x768/176113777.jpg"
        "?k=982b8710d50b0e5b6e2db2b275928784748b993a039a1c3b1257e58b19a235fc&o=",
    ]
    dated_url = extract_hotel(response(path, f"{TAJ}?checkin=2026-03-01&checkout=2026-03-02"))
    assert (dated_url["price"], dated_url["checkin"]) == (None, None)


def test_real_current_hotel_page_without_the_store_reads_the_other_layers() -> None:
    path = real_page("booking_com/hotel_2026.html")
    body = without(NO_STORE, path.read_bytes())
    hotel = extract_hotel(response(path, TAJ, body))
    # Breadcrumbs give the city, the inline b_acc_type the type, the stars' label the stars.
    assert {k: hotel[k] for k in TAJ_FIELDS if k != "review_count"} == {
        k: v for k, v in TAJ_FIELDS.items() if k != "review_count"
    }
    assert hotel["review_count"] == 2473  # JSON-LD's, before the shown block's
    assert hotel["description"].endswith("Mumbai International Airport is 26 km away.")
    assert len(hotel["images"]) == 8  # the gallery
    markup = extract_hotel(response(path, TAJ, without(NO_JSONLD, body)))
    assert (markup["review_count"], markup["name"], markup["address"]) == (
        2469,
        TAJ_FIELDS["name"],
        TAJ_FIELDS["address"],
    )


def test_real_old_layout_hotel_page() -> None:
    url = f"{HOST}/hotel/de/kempinskibristolberlin.en-gb.html"
    hotel = extract_hotel(response(real_page("booking_com/hotel_old.html"), url))
    expected = {
        "hotel_id": "60664",
        "name": "Kempinski Hotel Bristol Berlin",
        "property_type": "hotel",
        "address": "Kurfürstendamm 27, Charlottenburg-Wilmersdorf, 10719 Berlin, Germany",
        "city": "Berlin",
        "country": "DE",
        "star_rating": 5.0,
        "review_score": 8.3,
        "review_count": 1401,
        "price": None,
    }
    assert {k: hotel[k] for k in expected} == expected
    assert hotel["location"] == GeoPoint(lat=52.50311705731744, lon=13.327349424362183)
    assert hotel["description"].startswith("This 5-star hotel on Berlin\u2019s Kurfürstendamm")
    assert len(hotel["images"]) == 9  # the slides' hotel photos, not the landmarks
    assert hotel["images"][0] == "http://q-ec.bstatic.com/images/hotel/840x460/220/22010497.jpg"


CASA_AZUL = {
    "hotel_id": "9100001",
    "name": "Casa Azul Tlaxcala",
    "property_type": "hotel",
    "address": "Calle Juárez 18, Centro, 90000 Tlaxcala de Xicohténcatl, Mexico",
    "city": "Tlaxcala de Xicohténcatl",
    "country": "MX",
    "location": GeoPoint(lat=19.3181, lon=-98.2375),
    "star_rating": 4.0,
    "review_score": 8.9,
    "review_count": 412,
    "amenities": ["Free WiFi", "Free parking", "Restaurant", "Garden"],
    "price": None,
}


def test_hotel_fixture_modelled_on_the_current_layout_and_its_layers() -> None:
    relative = "fixtures/hotel/casa-azul-tlaxcala.html"
    url = f"{HOST}/hotel/mx/casa-azul-tlaxcala.html"
    full = extract_hotel(fixture_response(SITE, relative, url))
    assert {k: full[k] for k in CASA_AZUL} == CASA_AZUL
    assert full["description"].count("\n\n") == 2
    assert [u.split("/")[-1].split("?")[0] for u in full["images"]] == [
        f"91000010{n}.jpg" for n in range(1, 7)
    ]
    body = without(NO_STORE, fixture(SITE, relative).read_bytes())
    layers = extract_hotel(response(fixture(SITE, relative), url, body))
    same = [k for k in CASA_AZUL if k != "review_count"] + ["description"]
    assert {k: layers[k] for k in same} == {k: full[k] for k in same}
    assert layers["review_count"] == 415  # JSON-LD lags behind, as on the real page


def test_price_only_on_a_hotel_page_loaded_for_dates() -> None:
    relative = "fixtures/hotel/suites-huamantla-centro.html"
    url = f"{HOST}/hotel/mx/suites-huamantla-centro.html"
    dated = extract_hotel(fixture_response(SITE, relative, url))
    assert {k: dated[k] for k in ("price", "currency", "checkin", "checkout")} == {
        "price": 1120.0,  # the cheapest room of the room table
        "currency": "MXN",
        "checkin": "2026-01-15",
        "checkout": "2026-01-16",
    }
    # The same page as booking.com serves it without dates (the room table left in place).
    body = re.sub(
        rb"b_check(in|out)_date = '[^']+'",
        rb"b_check\1_date = ''",
        fixture(SITE, relative).read_bytes(),
    )
    undated = extract_hotel(response(fixture(SITE, relative), url, body))
    assert (undated["price"], undated["currency"], undated["checkin"]) == (None, None, None)


def test_hotel_page_completes_a_search_result() -> None:
    card = {"url": "u", "name": "A", "city": "Centro", "price": None, "currency": None}
    page = {"name": "A", "city": "Tlaxco", "hotel_id": "7", "address": None, "price": 900.0}
    page.update(currency="MXN", checkin="2026-01-15", checkout="2026-01-16")
    merged = merge_hotel({**card, "checkin": None, "checkout": None}, page)
    assert merged == {
        "url": "u",
        "name": "A",
        "city": "Tlaxco",  # the page's own city wins over a card's area
        "hotel_id": "7",
        "price": 900.0,  # an unpriced result takes the dated page's price and its stay
        "currency": "MXN",
        "checkin": "2026-01-15",
        "checkout": "2026-01-16",
    }
    priced = {**card, "price": 1000.0, "currency": "MXN", "checkin": "2026-02-01"}
    assert merge_hotel(priced, page)["price"] == 1000.0  # the searched stay's price stays
    assert merge_hotel(priced, page)["checkin"] == "2026-02-01"


def test_the_old_layout_lists_its_facilities() -> None:
    found = extract_hotel(
        response(real_page("booking_com/hotel_old.html"), f"{HOST}/hotel/de/x.html")
    )
    assert found["amenities"] and "Terrace" in found["amenities"]


def test_a_holiday_home_without_reviews_has_a_count_of_zero_and_no_score() -> None:
    url = f"{HOST}/hotel/mx/casa-del-lago-atlanga.html"
    found = extract_hotel(fixture_response(SITE, "fixtures/hotel/casa-del-lago-atlanga.html", url))
    assert (found["property_type"], found["review_count"], found["review_score"]) == (
        "holiday_home",
        0,
        None,
    )
    assert found["name"] == "Casa del Lago Atlanga" and found["amenities"]


def test_a_property_without_a_score_summary_counts_its_own_reviews() -> None:
    """A property nobody reviewed yet may carry no score summary at all: its count is its
    Property entity's (0), so the missing score is absent, not lost."""
    url = f"{HOST}/hotel/mx/casa-del-lago-atlanga.html"
    path = fixture(SITE, "fixtures/hotel/casa-del-lago-atlanga.html")
    body = path.read_bytes()
    summary = (
        b'"totalScore": {"__typename": "ReviewScoreSummary", "score": 0, "reviewsCount": 0, '
        b'"scoreOutOf10": 0}'
    )
    assert summary in body
    found = extract_hotel(response(path, url, body.replace(summary, b'"totalScore": null')))
    assert (found["review_count"], found["review_score"]) == (0, None)
