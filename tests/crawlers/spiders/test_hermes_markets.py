"""hermes: a currency for every market path, from the page's data, else from the path.

One test per family of markets (euro, pound, franc, "$" markets, yen/yuan/won, others),
each on category pages (state and grid) and product pages. The pages are the /us/en/
fixtures moved to another market: its locale path, ``<html lang>``, the state's country,
the sign the prices are printed with and the JSON-LD ``priceCurrency``.
"""

from __future__ import annotations

import re

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawlers.items import Product
from crawlers.spiders.hermes import HermesSpider, extract_category, extract_product
from crawlers.spiders.hermes_markets import (
    KNOWN_LOCALES,
    country_of_market,
    currency_of_country,
    resolve_currency,
    sign_candidates,
)
from tests.sites.support import fixture, fixture_response, real_page

# Every market family on category and product pages through the spider: heavy on CPU for
# the fast tier.
pytestmark = pytest.mark.integration

SITE = "hermes"
HOST = "https://www.hermes.com"
US_CATEGORY = "fixtures/category/us-bags.html"
US_PRODUCT = "fixtures/product/us-sellier-pocket-bag-H900101CKAA.html"
CATEGORY = "category/women/bags-and-small-leather-goods/bags-and-clutches/"
PRODUCT = "product/sellier-pocket-bag-H900101CKAA/"
NO_STATE = r'<script type="application/json" id="hermes-state">.*?</script>'
NOBODY = "/zz/en/"  # a locale path of no market: what the page's data says, alone
NNBSP = "\u202f"


def moved(
    body: str,
    source: str,
    locale: str,
    *,
    printed: str,
    country: str | None = None,
    stated: str | None = None,
) -> str:
    """``body`` (a page of the ``source`` market) as ``locale`` serves it: each price
    printed as ``printed`` ("{} €": ``{}`` is the amount), ``country`` as the region of
    ``<html lang>`` and the state's country (None: neither says one), ``stated`` as the
    JSON-LD ``priceCurrency`` (None: not stated)."""
    body = body.replace(source, locale)
    lang = locale.split("/")[2]
    region = f"-{country.lower()}" if country else ""
    body = re.sub(r'<html lang="[^"]*"', f'<html lang="{lang}{region}"', body, count=1)
    body = re.sub(
        r'"country": ?"[A-Z]{2}"', f'"country": "{country}"' if country else '"country": null', body
    )
    body = re.sub(
        r'(class="price price-color[^"]*">(?:<!---->)?)([^<]*)',
        lambda m: m.group(1) + printed.format(re.search(r"\d[\d,]*", m.group(2)).group()),
        body,
    )
    currency = f'"priceCurrency": "{stated}", ' if stated else ""
    return re.sub(r'"priceCurrency": "[A-Z]{3}", ', currency, body)


def category_currencies(locale: str, printed: str, country: str | None = None) -> dict[str, set]:
    """The currencies of the /us/en/ bags category moved to ``locale``: read from the
    state, and from the grid alone."""
    body = moved(
        fixture(SITE, US_CATEGORY).read_text(encoding="utf-8"),
        "/us/en/",
        locale,
        printed=printed,
        country=country,
    )
    url = HOST + locale + CATEGORY
    state = extract_category(HtmlResponse(url, body=body, encoding="utf-8"))
    grid = extract_category(
        HtmlResponse(url, body=re.sub(NO_STATE, "", body, flags=re.S), encoding="utf-8")
    )
    assert (state["source"], grid["source"]) == ("state", "grid")
    assert len(state["products"]) == len(grid["products"]) == 2
    return {
        "state": {p["currency"] for p in state["products"]},
        "grid": {p["currency"] for p in grid["products"]},
    }


def product_currency(
    locale: str, printed: str, country: str | None = None, stated: str | None = None
) -> str | None:
    body = moved(
        fixture(SITE, US_PRODUCT).read_text(encoding="utf-8"),
        "/us/en/",
        locale,
        printed=printed,
        country=country,
        stated=stated,
    )
    found = extract_product(HtmlResponse(HOST + locale + PRODUCT, body=body, encoding="utf-8"))
    assert found["price"] == 4700.0
    return found["currency"]


def assert_market(
    locale: str, expected: str | None, printed: str, country: str | None = None
) -> None:
    """Category (state and grid) and product page of ``locale`` agree on ``expected``."""
    assert category_currencies(locale, printed, country) == {
        "state": {expected},
        "grid": {expected},
    }
    assert product_currency(locale, printed, country) == expected


# -- the families ------------------------------------------------------------------------


EURO = ["/fr/fr/", "/de/de/", "/it/it/", "/es/es/", "/be/en/", "/be/fr/", "/nl/en/"]
EURO += ["/at/de/", "/ie/en/", "/fi/en/", "/pt/en/", "/lu/fr/", "/nl/nl/"]


@pytest.mark.parametrize("locale", EURO)
def test_euro_markets(locale: str) -> None:
    assert_market(locale, "EUR", "{}")  # the path alone
    assert_market(locale, "EUR", f"{{}}{NNBSP}€", country=locale[1:3].upper())
    assert_market(NOBODY, "EUR", "€{}")  # the printed sign alone
    assert product_currency(NOBODY, "{}", stated="EUR") == "EUR"  # the JSON-LD alone


def test_pound_market() -> None:
    assert_market("/uk/en/", "GBP", "{}")
    assert_market("/uk/en/", "GBP", "£{}", country="GB")
    # "£" is also the Egyptian, Lebanese, Syrian... pound: only a market settles it.
    assert_market(NOBODY, None, "£{}")
    assert product_currency(NOBODY, "£{}", stated="GBP") == "GBP"


@pytest.mark.parametrize("locale", ["/ch/fr/", "/ch/de/"])
def test_franc_markets(locale: str) -> None:
    assert_market(locale, "CHF", "{}")
    assert_market(locale, "CHF", "CHF {}", country="CH")
    assert_market(NOBODY, "CHF", "CHF {}")
    assert_market(NOBODY, "CHF", "{} Fr.")


DOLLAR_MARKETS = [
    ("/us/en/", "USD"),
    ("/ca/en/", "CAD"),
    ("/ca/fr/", "CAD"),
    ("/sg/en/", "SGD"),
    ("/au/en/", "AUD"),
    ("/hk/en/", "HKD"),
    ("/tw/zh/", "TWD"),
    ("/mx/es/", "MXN"),
]


@pytest.mark.parametrize(("locale", "currency"), DOLLAR_MARKETS)
def test_dollar_markets_the_path_decides_what_a_bare_dollar_is(locale: str, currency: str) -> None:
    assert_market(locale, currency, "{}")
    assert_market(locale, currency, "${}")
    assert_market(locale, currency, "${}", country=locale[1:3].upper())


def test_macau_prints_its_pataca_as_mop_dollars() -> None:
    # CLDR: Macau's locales print the pataca "MOP$"; a bare "$" there names no currency
    # of the market (HK$ or MOP$ would), so it is not read as one.
    assert_market("/mo/en/", "MOP", "{}")
    assert_market("/mo/en/", "MOP", "MOP${}")
    assert_market("/mo/en/", None, "${}")
    assert_market("/mo/en/", "HKD", "HK${}")


def test_a_bare_dollar_without_a_dollar_market_is_no_currency() -> None:
    assert_market(NOBODY, None, "${}")
    assert_market("/fr/fr/", None, "${}")  # no dollar in France: unknown, not a guess
    for printed, currency in [("CA${}", "CAD"), ("US${}", "USD"), ("S${}", "SGD")]:
        assert_market(NOBODY, currency, printed)
    assert_market(NOBODY, "HKD", "HK${}")
    assert_market(NOBODY, "TWD", "NT${}")
    assert_market(NOBODY, "AUD", "A${}")


@pytest.mark.parametrize(
    ("locale", "currency", "printed"),
    [
        ("/jp/ja/", "JPY", "¥{}"),
        ("/jp/ja/", "JPY", "￥{}"),
        ("/jp/ja/", "JPY", "{}円"),
        ("/cn/zh/", "CNY", "¥{}"),
        ("/cn/en/", "CNY", "CN¥{}"),
        ("/kr/ko/", "KRW", "₩{}"),
        ("/kr/ko/", "KRW", "{}원"),
    ],
)
def test_yen_yuan_and_won_markets(locale: str, currency: str, printed: str) -> None:
    assert_market(locale, currency, "{}")
    assert_market(locale, currency, printed)
    assert_market(locale, currency, printed, country=locale[1:3].upper())


def test_the_yen_sign_alone_is_yen_or_yuan() -> None:
    assert_market(NOBODY, None, "¥{}")
    assert_market(NOBODY, "JPY", "JP¥{}")
    assert_market(NOBODY, "CNY", "CN¥{}")
    # "원" is the won of either Korea: only a market settles it.
    assert_market(NOBODY, None, "{}원")
    assert_market("/kr/ko/", "KRW", "{}원")


@pytest.mark.parametrize(
    ("locale", "currency", "printed", "country"),
    [
        ("/dk/en/", "DKK", "{} kr.", "DK"),
        ("/dk/da/", "DKK", "{} kr.", "DK"),
        ("/se/en/", "SEK", "{} kr", "SE"),
        ("/no/en/", "NOK", "kr {}", "NO"),
        ("/cz/en/", "CZK", "{} Kč", "CZ"),
        ("/pl/en/", "PLN", "{} zł", "PL"),
        ("/th/en/", "THB", "฿{}", "TH"),
        ("/my/en/", "MYR", "RM{}", "MY"),
        ("/br/pt/", "BRL", "R${}", "BR"),
        ("/dh/en/", "AED", "AED {}", "AE"),  # the UAE shop (hreflang en-ae)
        ("/ri/en/", "SAR", "SAR {}", "SA"),  # the Saudi shop (hreflang en-sa)
        ("/kw/en/", "KWD", "KWD {}", "KW"),  # UNSURE market: no /kw/ path seen
    ],
)
def test_other_markets(locale: str, currency: str, printed: str, country: str) -> None:
    assert_market(locale, currency, "{}")
    assert_market(locale, currency, printed, country=country)
    if printed.strip("{} .") != "kr":  # kr: Danish, Swedish, Norwegian, Icelandic
        assert_market(NOBODY, currency, printed)
    else:
        assert_market(NOBODY, None, printed)


# -- data over the table -----------------------------------------------------------------


def test_the_page_data_wins_over_the_path() -> None:
    assert product_currency("/ca/en/", "{}", stated="USD") == "USD"
    assert_market("/uk/en/", "EUR", "{} €")
    assert_market("/us/en/", "CAD", "CA${}")
    # The country the page names (state, <html lang>) over the path's market.
    assert_market(NOBODY, "SGD", "${}", country="SG")
    assert_market("/us/en/", "SGD", "${}", country="SG")
    assert_market(NOBODY, "GBP", "£{}", country="UK")  # hermes' market code as a region
    # A stated code that is a sign counts as printed: "$" only confirms the market.
    assert product_currency("/au/en/", "{}", stated="$") == "AUD"


def test_a_state_item_or_meta_tag_stating_the_currency_wins() -> None:
    """ASSUMED sources (not on the saved page): a currency key in the state's items,
    a price meta tag."""
    body = fixture(SITE, US_CATEGORY).read_text(encoding="utf-8")
    body = body.replace('"priceType": "fixed"', '"priceType": "fixed", "currency": "EUR"', 1)
    found = extract_category(HtmlResponse(HOST + "/us/en/" + CATEGORY, body=body, encoding="utf-8"))
    assert [p["currency"] for p in found["products"]] == ["EUR", "USD"]
    product = fixture(SITE, US_PRODUCT).read_text(encoding="utf-8")
    product = re.sub(r'"priceCurrency": "USD", ', "", product).replace(
        "<head>", '<head><meta property="product:price:currency" content="GBP">', 1
    )
    page = HtmlResponse(HOST + "/us/en/" + PRODUCT, body=product, encoding="utf-8")
    assert extract_product(page)["currency"] == "GBP"


# -- the committed /fr/fr/ and /us/en/ fixtures (exact values) -----------------------------


def test_french_fixtures_prices_in_euros() -> None:
    url = HOST + "/fr/fr/category/femme/sacs-et-petite-maroquinerie/sacs-et-pochettes/"
    category = extract_category(
        fixture_response(SITE, "fixtures/category/fr-sacs-et-pochettes.html", url)
    )
    assert (category["name"], category["total"]) == ("Sacs et pochettes femme", 2)
    keys = ("url", "product_id", "name", "price", "currency", "color")
    assert [tuple(p[k] for k in keys) for p in category["products"]] == [
        (
            f"{HOST}/fr/fr/product/sac-sellier-pocket-H900101CKAA/",
            "H900101CKAA",
            "Sac Sellier Pocket",
            4900.0,
            "EUR",
            "Or",
        ),
        (
            f"{HOST}/fr/fr/product/sac-bandouliere-etrier-mini-H900102CKAB/",
            "H900102CKAB",
            "Sac bandoulière Etrier Mini",
            3550.0,
            "EUR",
            "Noir",
        ),
    ]
    product = extract_product(
        fixture_response(
            SITE,
            "fixtures/product/fr-sac-sellier-pocket-H900101CKAA.html",
            f"{HOST}/fr/fr/product/sac-sellier-pocket-H900101CKAA/",
        )
    )
    assert product == {
        "name": "Sac Sellier Pocket",
        "price": 4900.0,
        "currency": "EUR",
        "availability": "InStock",
        "color": "Or",
        "material": "veau Togo",
        "description": "Un sac compact en veau Togo, fermeture à rabat et bandoulière réglable.",
        "attributes": {"dimensions": "L 22 x H 16 x P 7 cm", "fabriqué en": "France"},
    }


def test_american_fixtures_prices_in_dollars() -> None:
    category = extract_category(fixture_response(SITE, US_CATEGORY, HOST + "/us/en/" + CATEGORY))
    assert [(p["product_id"], p["price"], p["currency"]) for p in category["products"]] == [
        ("H900101CKAA", 4700.0, "USD"),
        ("H900102CKAB", 3400.0, "USD"),
    ]
    product = extract_product(fixture_response(SITE, US_PRODUCT, HOST + "/us/en/" + PRODUCT))
    assert (product["price"], product["currency"]) == (4700.0, "USD")


# -- the saved Canadian page in other markets ------------------------------------------------


def test_real_category_page_currency_from_its_cards_and_from_its_path() -> None:
    body = real_page("hermes/category_ca_2025.html").read_text(encoding="utf-8")

    def currencies(locale: str, printed: str, country: str | None = None) -> set[str | None]:
        page = moved(body, "/ca/en/", locale, printed=printed, country=country)
        url = HOST + locale + CATEGORY
        products = extract_category(HtmlResponse(url, body=page, encoding="utf-8"))["products"]
        assert len(products) == 48 and products[0]["price"] == 6250.0
        return {p["currency"] for p in products}

    assert currencies("/ca/en/", "CA${}", "CA") == {"CAD"}  # as saved
    assert currencies(NOBODY, "CA${}") == {"CAD"}  # its cards alone
    assert currencies("/ca/en/", "{}") == {"CAD"}  # its path alone
    assert currencies("/sg/en/", "${}") == {"SGD"}
    assert currencies("/jp/ja/", "¥{}") == {"JPY"}
    assert currencies("/fr/fr/", "{} €") == {"EUR"}
    assert currencies(NOBODY, "${}") == {None}


# -- reported, never guessed -----------------------------------------------------------------


def test_a_price_in_an_unknown_currency_is_counted_and_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(HermesSpider)
    spider = HermesSpider.from_crawler(crawler, base_url=HOST)
    assert isinstance(spider, HermesSpider) and crawler.stats is not None
    url = HOST + "/fr/fr/" + PRODUCT
    body = moved(
        fixture(SITE, US_PRODUCT).read_text(encoding="utf-8"), "/us/en/", "/fr/fr/", printed="${}"
    )
    partial = {"url": url, "product_id": "H900101CKAA", "name": "Sellier Pocket bag"}
    (item,) = list(
        spider.parse_product(HtmlResponse(url, body=body, encoding="utf-8"), partial=partial)
    )
    assert isinstance(item, Product)
    assert (item.price, item.currency) == (4700.0, None)
    assert crawler.stats.get_value("hermes/currency_unknown") == 1
    assert crawler.stats.get_value("hermes/missing_fields") == 1
    assert any("unknown currency" in r.getMessage() for r in caplog.records)


# -- the tables ------------------------------------------------------------------------------


def test_every_known_market_path_has_a_currency() -> None:
    brief = ["/nl/nl/", "/dk/da/", "/se/sv/", "/no/no/", "/th/th/", "/ae/en/", "/kw/en/"]
    for locale in [*KNOWN_LOCALES, *brief]:
        country = country_of_market(locale[1:3])
        assert currency_of_country(country), locale
    # From CLDR's territory currencies, not a table of ours.
    got = {c: currency_of_country(c) for c in ("GB", "AE", "SA", "MO", "CH", "DK", "LU")}
    assert got == {
        "GB": "GBP",
        "AE": "AED",
        "SA": "SAR",
        "MO": "MOP",
        "CH": "CHF",
        "DK": "DKK",
        "LU": "EUR",
    }
    assert [country_of_market(code) for code in ("uk", "dh", "ri", "ca", "zz")] == [
        "GB",
        "AE",
        "SA",
        "CA",
        "ZZ",
    ]
    assert currency_of_country("ZZ") is None and country_of_market("/x") is None


@pytest.mark.parametrize(
    ("printed", "candidates"),
    [
        ("6250", None),
        ("CA$6,250", {"CAD"}),
        ("CAD$ 6,250", {"CAD"}),
        ("JP¥935,000", {"JPY"}),
        ("6 250 € TTC", {"EUR"}),  # a word is no currency
        ("د.إ.\u200f 25,000", {"AED"}),
        ("RMB 1,000", {"CNY"}),
        ("12 500 kr.", {"DKK", "SEK", "NOK", "ISK"}),
        ("₴100", {"UAH"}),  # CLDR knows every current currency's signs
        ("₯100", set()),  # the drachma's: no country pays in it, unreadable
        ("€6,250 / £5,400", set()),  # two that conflict
    ],
)
def test_printed_signs(printed: str, candidates: set[str] | None) -> None:
    assert sign_candidates(printed) == candidates


def test_resolution_order() -> None:
    assert resolve_currency(stated=["eur"], printed=["$1"], country="US") == "EUR"
    assert resolve_currency(stated=[None, "USD"], printed=["€1"]) == "USD"
    assert resolve_currency(printed=["€1"], country="US") == "EUR"
    assert resolve_currency(printed=["$1", "$2"], country="CA") == "CAD"
    assert resolve_currency(printed=["$1", "CA$2"]) == "CAD"  # every price allows only CAD
    assert resolve_currency(printed=["₴1"], country="UA") == "UAH"
    assert resolve_currency(printed=["₯1"], country="GR") is None  # no country's sign
    assert resolve_currency(printed=["1"], country="JP") == "JPY"
    assert resolve_currency(country=None) is None
