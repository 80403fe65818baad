"""hermes.com markets: the country behind each locale path, its currency, and the
currency a printed price names.

hermes.com serves one shop per market under ``/<market>/<language>/`` (``/ca/en/``,
``/fr/fr/``; mainland China on www.hermes.cn with the same paths). The market code is
the country's ISO 3166 code except for three markets (``uk``, ``dh``, ``ri``). The backend
data in a page (``hermes-state``) gives prices as bare numbers; the page prints them with
a currency sign that depends on the language (``CA$6,250`` on /ca/en/, ``6 250 €`` on
/fr/fr/, ``$6,250`` on /us/en/). The spider's rule (``resolve_currency``): a currency code
the page states wins; else the sign its prices are printed with when the sign names one
currency; else the market's currency (``COUNTRY_CURRENCY``), also the arbiter of a sign
several currencies share (``$``, ``¥``, ``£``, ``kr``): ``$`` is CAD on /ca/en/, SGD on
/sg/en/, and nothing on /fr/fr/ (the price is then reported without a currency, never
given a guessed one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

# Every locale path the saved Canadian category page (2025-07) lists as an alternate
# (<link rel="alternate" hreflang> and the category's "alternates"): the markets serving
# that category then. Other categories may have fewer; a market missing here still gets
# its currency from the country tables below.
KNOWN_LOCALES: tuple[str, ...] = (
    "/at/de/", "/au/en/", "/be/en/", "/be/fr/", "/br/pt/", "/ca/en/", "/ca/fr/",
    "/ch/de/", "/ch/fr/", "/cn/en/", "/cn/zh/", "/cz/en/", "/de/de/", "/dh/en/",
    "/dk/en/", "/es/es/", "/fi/en/", "/fr/fr/", "/hk/en/", "/ie/en/", "/it/it/",
    "/jp/ja/", "/kr/ko/", "/lu/fr/", "/mo/en/", "/mx/es/", "/my/en/", "/nl/en/",
    "/no/en/", "/pl/en/", "/pt/en/", "/ri/en/", "/se/en/", "/sg/en/", "/th/en/",
    "/tw/zh/", "/uk/en/", "/us/en/",
)  # fmt: skip

# Market codes that are not the country's ISO code (seen in the same alternates:
# hreflang en-gb -> /uk/en/, en-ae -> /dh/en/, en-sa -> /ri/en/).
MARKET_COUNTRY = {"uk": "GB", "dh": "AE", "ri": "SA"}

_EURO_AREA = (
    "AT BE CY DE EE ES FI FR GR HR IE IT LT LU LV MT NL PT SI SK"
    " MC SM VA AD"  # not members, but the euro is their currency
)
# Country (ISO 3166) -> ISO 4217. The markets above, from public knowledge of each
# country's currency; only CAD was seen on a saved page ("CA$" prices).
COUNTRY_CURRENCY: dict[str, str] = {
    **dict.fromkeys(_EURO_AREA.split(), "EUR"),
    "GB": "GBP",
    "CH": "CHF",
    "LI": "CHF",
    "DK": "DKK",
    "SE": "SEK",
    "NO": "NOK",
    "CZ": "CZK",
    "PL": "PLN",
    "US": "USD",
    "CA": "CAD",
    "MX": "MXN",
    "BR": "BRL",
    "AU": "AUD",
    "JP": "JPY",
    "CN": "CNY",
    "KR": "KRW",
    "HK": "HKD",
    "TW": "TWD",
    "SG": "SGD",
    "MY": "MYR",
    "TH": "THB",
    "AE": "AED",
    "SA": "SAR",
    # UNSURE: Macau's legal tender is the pataca, but its shops often price in HKD;
    # /mo/en/ was not seen with a price. A printed "HK$" or "MOP" wins over this.
    "MO": "MOP",
    # UNSURE: no hermes.com path seen for these Gulf countries (the Middle East shops
    # seen are /dh/en/ and /ri/en/); there if a /kw/, /qa/ or /bh/ market opens.
    "KW": "KWD",
    "QA": "QAR",
    "BH": "BHD",
}

_DOLLARS = frozenset(
    {"USD", "CAD", "AUD", "NZD", "SGD", "HKD", "TWD", "MOP", "MXN", "CLP", "COP", "ARS"}
)
# Printed signs -> the currencies each may stand for (several: the market decides).
SIGNS: dict[str, frozenset[str]] = {
    "$": _DOLLARS,
    "US$": frozenset({"USD"}),
    "CA$": frozenset({"CAD"}),
    "C$": frozenset({"CAD", "NIO"}),
    "A$": frozenset({"AUD"}),
    "AU$": frozenset({"AUD"}),
    "NZ$": frozenset({"NZD"}),
    "S$": frozenset({"SGD"}),
    "SG$": frozenset({"SGD"}),
    "HK$": frozenset({"HKD"}),
    "NT$": frozenset({"TWD"}),
    "MOP$": frozenset({"MOP"}),
    "MX$": frozenset({"MXN"}),
    "R$": frozenset({"BRL"}),
    "€": frozenset({"EUR"}),
    "£": frozenset({"GBP", "EGP", "LBP", "SYP", "GIP", "FKP", "SHP", "SSP"}),
    "Fr.": frozenset({"CHF"}),
    "fr.": frozenset({"CHF"}),
    "kr": frozenset({"DKK", "SEK", "NOK", "ISK"}),
    "kr.": frozenset({"DKK", "SEK", "NOK", "ISK"}),
    "Kr": frozenset({"DKK", "SEK", "NOK", "ISK"}),
    "Kč": frozenset({"CZK"}),
    "zł": frozenset({"PLN"}),
    "¥": frozenset({"JPY", "CNY"}),
    "￥": frozenset({"JPY", "CNY"}),  # the full-width sign Japanese pages print
    "JP¥": frozenset({"JPY"}),
    "円": frozenset({"JPY"}),
    "CN¥": frozenset({"CNY"}),
    "RMB": frozenset({"CNY"}),
    "元": frozenset({"CNY", "TWD"}),
    "₩": frozenset({"KRW", "KPW"}),
    "원": frozenset({"KRW"}),
    "฿": frozenset({"THB"}),
    "RM": frozenset({"MYR"}),
    "د.إ": frozenset({"AED"}),
    "ر.س": frozenset({"SAR"}),
    "د.ك": frozenset({"KWD"}),
    "ر.ق": frozenset({"QAR"}),
    "د.ب": frozenset({"BHD"}),
    "₹": frozenset({"INR"}),
    "₺": frozenset({"TRY"}),
    "₽": frozenset({"RUB"}),
    "₪": frozenset({"ILS"}),
    "₱": frozenset({"PHP"}),
    "Rp": frozenset({"IDR"}),
}
# Codes a page may print or state (ISO 4217): those above and the markets'.
ISO_CODES = frozenset(COUNTRY_CURRENCY.values()).union(*SIGNS.values())

_LETTER = r"[^\W\d_]"


def _sign_pattern(sign: str) -> str:
    """A sign's letters must not run into a word: "RM" is not the start of "RMB"."""
    before = f"(?<!{_LETTER})" if re.match(_LETTER, sign) else ""
    after = f"(?!{_LETTER})" if re.match(_LETTER, sign[-1]) else ""
    return before + re.escape(sign) + after


_SIGN = re.compile(
    "|".join(
        [_sign_pattern(s) for s in sorted(SIGNS, key=len, reverse=True)]  # "CA$" before "$"
        + [f"(?<!{_LETTER})[A-Z]{{3}}(?!{_LETTER})"]
    )
)
_INVISIBLE = dict.fromkeys(map(ord, "\u200e\u200f\u061c\u202a\u202b\u202c"))


def country_of_market(code: str | None) -> str | None:
    """``uk`` -> ``GB``, ``fr`` -> ``FR``: the country of a locale path's market code."""
    if not code or not re.fullmatch(r"[A-Za-z]{2}", code):
        return None
    return MARKET_COUNTRY.get(code.lower(), code.upper())


def currency_of_country(country: str | None) -> str | None:
    """ISO 3166 country -> ISO 4217 code; None for a country not in the table."""
    return COUNTRY_CURRENCY.get(country.upper()) if country else None


def stated_code(value: Any) -> str | None:
    """An ISO 4217 code as data states it (``"EUR"``, ``"eur"``), else None."""
    if not isinstance(value, str):
        return None
    code = value.strip().upper()
    return code if re.fullmatch(r"[A-Z]{3}", code) else None


def sign_candidates(printed: str | None) -> frozenset[str] | None:
    """The currencies a printed price can be in: None when it names no currency
    (``6250``), an empty set when it names one we cannot read or two that conflict."""
    if not printed:
        return None
    cleaned = printed.translate(_INVISIBLE)
    found: frozenset[str] | None = None
    for match in _SIGN.finditer(cleaned):
        sign = match.group()
        options = SIGNS.get(sign) or (frozenset({sign}) if sign in ISO_CODES else None)
        if options is not None:  # a word such as "TTC" is no currency
            found = options if found is None else found & options
    rest = _SIGN.sub("", cleaned)
    if any(unicodedata.category(char) == "Sc" for char in rest):
        return frozenset()  # a currency sign we do not know: unreadable, not ignorable
    return found


def resolve_currency(
    *, stated: Iterable[Any] = (), printed: Iterable[str | None] = (), country: str | None = None
) -> str | None:
    """The currency of a price: the first code ``stated`` holds (structured data), else
    the one currency every ``printed`` price's sign allows, else ``country``'s currency
    when the signs allow it (or no sign was printed); None when it cannot be established.
    A stated value that is no ISO code (``"$"``) counts as printed."""
    texts: list[str] = []
    for value in stated:
        code = stated_code(value)
        if code:
            return code
        if isinstance(value, str) and value.strip():
            texts.append(value)
    texts.extend(t for t in printed if t)
    fallback = currency_of_country(country)
    candidates: frozenset[str] | None = None
    for value in texts:
        options = sign_candidates(value)
        if options is not None:
            candidates = options if candidates is None else candidates & options
    if candidates is None:
        return fallback
    if len(candidates) == 1:
        return next(iter(candidates))
    return fallback if fallback in candidates else None
