"""hermes.com markets: the country behind each locale path, its currency, and the
currency a printed price names.

hermes.com serves one shop per market under ``/<market>/<language>/`` (``/ca/en/``,
``/fr/fr/``; mainland China on www.hermes.cn with the same paths). The market code is
the country's ISO 3166 code except for three markets (``uk``, ``dh``, ``ri``). The backend
data in a page (``hermes-state``) gives prices as bare numbers; the page prints them with
a currency sign that depends on the language (``CA$6,250`` on /ca/en/, ``6 250 €`` on
/fr/fr/, ``$6,250`` on /us/en/). The spider's rule (``resolve_currency``): a currency code
the page states wins; else the sign its prices are printed with, read in the market's
locales (``crawlers.spiders.currency``: babel's CLDR symbols and price-parser's table);
else the market's currency (CLDR's for the country), also the arbiter of a sign several
currencies share (``$``, ``¥``, ``£``, ``kr``): ``$`` is CAD on /ca/en/, SGD on /sg/en/,
and nothing on /fr/fr/ (the price is then reported without a currency, never given a
guessed one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

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

# Every locale path the saved Canadian category page (2025-07) lists as an alternate
# (<link rel="alternate" hreflang> and the category's "alternates"): the markets serving
# that category then. Other categories may have fewer; a market missing here still gets
# its currency from its country (CLDR).
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


def country_of_market(code: str | None) -> str | None:
    """``uk`` -> ``GB``, ``fr`` -> ``FR``: the country of a locale path's market code."""
    if not code or not re.fullmatch(r"[A-Za-z]{2}", code):
        return None
    return MARKET_COUNTRY.get(code.lower(), code.upper())


def currency_of_country(country: str | None) -> str | None:
    """ISO 3166 country -> the ISO 4217 currency it pays in today (CLDR, through babel):
    ``MO`` -> MOP (UNSURE for hermes: Macau shops often price in HKD; a printed ``HK$``
    wins); None for no country."""
    return country_currency(country)


def stated_code(value: Any) -> str | None:
    """An ISO 4217 code as data states it (``"EUR"``, ``"eur"``), else None."""
    return currency_code(value)


def sign_candidates(printed: str | None, where: Market = NO_MARKET) -> frozenset[str] | None:
    """The currencies a printed price can be in, read in ``where``: None when it names
    no currency (``6250``), an empty set when it names one we cannot read or two that
    conflict (``€6,250 / £5,400``)."""
    if not printed:
        return None
    sign = printed_sign(printed)
    if sign is None:
        # A currency sign no table knows is unreadable, not ignorable.
        return frozenset() if any(unicodedata.category(c) == "Sc" for c in printed) else None
    found = _read(sign, where)
    rest = printed.replace(sign, " ", 1)
    other = printed_sign(rest)
    if other is not None and other != sign:
        found &= _read(other, where)
    return found


def _read(sign: str, where: Market) -> frozenset[str]:
    code = resolve(sign, where)
    return frozenset({code}) if code else candidates(sign)


def resolve_currency(
    *, stated: Iterable[Any] = (), printed: Iterable[str | None] = (), country: str | None = None
) -> str | None:
    """The currency of a price: the first code ``stated`` holds (structured data), else
    the one currency every ``printed`` price's sign allows in the market of ``country``,
    else that country's currency when the signs allow it (or no sign was printed); None
    when it cannot be established. A stated value that is no ISO code (``"$"``) counts as
    printed."""
    texts: list[str] = []
    for value in stated:
        code = stated_code(value)
        if code:
            return code
        if isinstance(value, str) and value.strip():
            texts.append(value)
    texts.extend(t for t in printed if t)
    where = market(country=country)
    options: frozenset[str] | None = None
    for value in texts:
        found = sign_candidates(value, where)
        if found is not None:
            options = found if options is None else options & found
    if options is None:
        return where.currency
    if len(options) == 1:
        return next(iter(options))
    return where.currency if where.currency in options else None
