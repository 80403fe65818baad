"""Currency signs read in their market: CLDR's symbols (babel) and price-parser's table,
through ``money()`` as every spider reads a price."""

from __future__ import annotations

from pathlib import Path

import babel
import pytest

from crawlers.spiders.common import Money, money
from crawlers.spiders.currency import (
    NO_MARKET,
    Market,
    candidates,
    country_currency,
    currency_code,
    market,
    printed_sign,
    resolve,
)


@pytest.mark.parametrize(
    ("printed", "country", "currency"),
    [
        # Signs one currency prints anywhere.
        ("Rp 1.234.567", None, "IDR"),
        ("Rp\u00a01.234.567", "ID", "IDR"),
        ("IDR 1.234.567", None, "IDR"),
        ("US$ 120", None, "USD"),
        ("US$ 120", "CA", "USD"),
        ("1 234,50 zł", None, "PLN"),
        ("₹1,23,456", None, "INR"),
        ("R$ 1.234,56", None, "BRL"),
        ("CHF 1'234.50", None, "CHF"),
        ("1 000 Fr.", None, "CHF"),
        ("1.234,56 €", None, "EUR"),
        ("€ 1 200", "US", "EUR"),  # a sign that names one currency wins over the market
        ("CA$6,250", None, "CAD"),
        ("JP¥935,000", None, "JPY"),  # not the "¥" alone price-parser finds in it
        ("د.إ.\u200f 25,000", None, "AED"),
        ("12,000円", None, "JPY"),
        ("RMB 1,000", None, "CNY"),
        # "$": each market's locales print their own currency with it.
        ("$120", "US", "USD"),
        ("$120", "CA", "CAD"),
        ("$120", "MX", "MXN"),
        ("$120", "AU", "AUD"),
        ("$120", "SG", "SGD"),
        ("$120", "FR", None),  # French prints dollars "$US": a bare "$" is no guess
        ("$120", None, None),
        # "kr": Swedish, Norwegian or Danish crowns by the market.
        ("1 234 kr", "SE", "SEK"),
        ("kr 1 234", "NO", "NOK"),
        ("12 500 kr.", "DK", "DKK"),
        ("1 234 kr", "DK", "DKK"),
        ("1 234 kr", None, None),
        # Yen or yuan, pound of which country: the market settles it.
        ("¥12,000", "JP", "JPY"),
        ("¥12,000", "CN", "CNY"),
        ("¥12,000", None, None),
        ("£5", "GB", "GBP"),
        ("£5", None, None),
        ("10,000원", "KR", "KRW"),
        ("10,000원", None, None),  # the won of either Korea
    ],
)
def test_signs_in_their_market(printed: str, country: str | None, currency: str | None) -> None:
    assert money(printed, where=market(country=country)).currency == currency


@pytest.mark.parametrize(
    ("printed", "language", "currency"),
    [
        ("$ 1", "en-us", "USD"),
        ("$ 1", "en-ca", "CAD"),
        ("1 $", "fr-ca", "CAD"),
        ("$ 1", "es-mx", "MXN"),
        ("$ 1", "es-ar", "ARS"),
        ("$ 1", "es", None),  # Spanish from Spain: no currency prints as a bare "$"
        ("CA$ 1", "en-us", "CAD"),
        ("HK$ 1", "zh-Hant-TW", "HKD"),
        ("$ 1", "zh-Hant-TW", "TWD"),
    ],
)
def test_signs_in_the_page_language(printed: str, language: str, currency: str | None) -> None:
    assert money(printed, where=market(language=language)).currency == currency


def test_the_stated_currency_wins_and_breaks_ties() -> None:
    # A code the data states wins over the printed sign.
    assert money("¥12,000", "JPY") == Money(12_000.0, "JPY")
    assert money("12.50", "eur") == Money(12.5, "EUR")
    # A stated sign is read like a printed one.
    assert money(7, "€") == Money(7.0, "EUR")
    # booking.com in Spanish showing pesos: the selected currency settles "$".
    pesos = market(language="es", currency="MXN")
    assert pesos == Market(("es",), "MXN")
    assert money("$ 1,450", where=pesos) == Money(1450.0, "MXN")
    # A bare amount takes the currency the market pays in; without a market, none.
    assert money("1.234", where=market(country="ES")) == Money(1234.0, "EUR")
    assert money(1234, where=market(country="ID")) == Money(1234.0, "IDR")
    assert money("1.234") == Money(1234.0, None)
    # A sign read only as a locale prints it (a viewer's locale is no market).
    assert money("200", where=Market(("en_US",))) == Money(200.0, None)
    assert money(None) == Money(None, None)


def test_markets_from_cldr() -> None:
    assert market(country="CH").locales == ("de_CH", "gsw_CH", "fr_CH", "it_CH")
    assert market(country="SE") == Market(("sv_SE",), "SEK")
    assert market(country="MO").currency == "MOP"
    assert market(language="en-us") == Market(("en_US",), "USD")
    assert market(language="pt_BR").currency == "BRL"
    assert market(language="xx-yy") == NO_MARKET  # no locale, no country
    assert [country_currency(c) for c in ("ID", "PA", "LU", "ZZ")] == ["IDR", "PAB", "EUR", None]
    assert [currency_code(v) for v in ("idr", " CHF ", "TTC", "$", None)] == [
        "IDR",
        "CHF",
        None,
        None,
        None,
    ]


def test_the_tables_know_every_current_currency_and_no_retired_one() -> None:
    assert candidates("$") >= {"USD", "CAD", "MXN", "AUD", "ARS", "NZD", "SGD", "HKD"}
    assert candidates("kr") == {"SEK", "NOK", "DKK", "ISK"}
    assert candidates("Kr") == candidates("kr")  # as printed in any case
    assert candidates("₴") == {"UAH"} and candidates("৳") == {"BDT"}
    assert candidates("Pta") == frozenset()  # the peseta: no country pays in it
    assert candidates("₯") == frozenset()
    assert resolve("kr", NO_MARKET) is None and resolve("kr", market(country="NO")) == "NOK"
    assert printed_sign("6 250 € TTC") == "€" and printed_sign("6250") is None


def test_the_sign_table_is_built_once_from_data_inside_the_wheel() -> None:
    from babel import Locale, localedata

    from crawlers.spiders import currency

    assert currency._global_signs() is currency._global_signs()  # cached, not per price
    # Building it leaves babel's own locales whole: a locale loaded after it still
    # inherits its parent's symbols ("$" for NZD in en_NZ comes from en_001/en).
    currency._global_signs.cache_clear()
    localedata._cache.clear()  # babel's loaded locales: reloaded on demand
    currency._global_signs()
    assert Locale.parse("en_NZ").currency_symbols["NZD"] == "$"
    assert money("$5", where=market(country="NZ")).currency == "NZD"
    # CLDR's data ships inside babel's package: read offline, nothing downloaded.
    data = Path(babel.__file__).parent / "locale-data"
    assert (data / "root.dat").is_file() and (data / "id_ID.dat").is_file()
