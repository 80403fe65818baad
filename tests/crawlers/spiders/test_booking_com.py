"""booking_com: the saved search pages (every card a result, merged with the Apollo store),
the saved 2026 and 2016-18 hotel pages, the fixtures modelled on them, dated start
entries, block pages, the fingerprint of each saved page, and a replay crawl."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from crawlers.items import GeoPoint
from crawlers.spiders.booking_com import (
    BookingComSpider,
    extract_hotel,
    extract_search,
    merge_hotel,
    merge_results,
    page_market,
)
from crawlers.spiders.currency import Market
from fingerprints.baseline import FingerprintConfig, load_baseline
from fingerprints.gate import Page, check_page
from harness.replay_site import ReplaySite
from tests.sites.support import (
    crawl,
    fixture,
    fixture_response,
    real_page,
    response,
    site_rules,
    verdict,
)

SITE = "booking_com"
HOST = "https://www.booking.com"
REGION = f"{HOST}/region/mx/tlaxcala.es.html"
DHAKA = (
    f"{HOST}/searchresults.html?ss=dhaka&dest_id=-2737683&dest_type=city"
    "&checkin=2025-03-29&checkout=2025-03-30&group_adults=2&no_rooms=1&group_children=0"
)
TAJ = f"{HOST}/hotel/in/the-taj-mahal-palace-mumbai.html"
NO_STORE = rb'<script[^>]*data-capla-store-data="apollo".*?</script>'
NO_JSONLD = rb"<script[^>]*application/ld\+json[^>]*>.*?</script>"
# Pages built for one defect each (tests/crawlers/spiders/pages/booking_com/).
PAGES = Path(__file__).parent / "pages" / SITE
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


# -- hotel pages -------------------------------------------------------------------------------

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


# -- start entries, blocks, fingerprints --------------------------------------------------------


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
