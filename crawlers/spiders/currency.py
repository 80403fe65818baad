"""Which currency a printed price is in: the sign next to the amount, read in its market.

The signs come from babel's CLDR data (offline, per locale) and price-parser's currency
table, never from a hand-written list; only currencies some country pays in today count.
A sign is read in a ``Market`` (the page's locales and the currency it pays in): an ISO
code as printed, else the one currency a market locale prints with that sign, else the
one any locale uses it for, else, among several, the market's own; otherwise none.
The tables are built once per process, on the first price read (about a second).

Reads: nothing but the libraries' data. The rules with examples: docs/sites.md, the
"Currencies" paragraph of its introduction.
"""

from __future__ import annotations

import datetime as dt
import pickle
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from babel import Locale, localedata
from babel.core import UnknownLocaleError, get_global
from babel.languages import get_official_languages
from babel.numbers import get_territory_currencies, list_currencies
from price_parser import Price
from price_parser._currencies import CURRENCIES as _PRICE_PARSER_CURRENCIES

# Bidirectional marks around Arabic signs ("د.إ.\u200f") and spaces are no part of a sign.
_INVISIBLE = str.maketrans(dict.fromkeys("\u200e\u200f\u061c\u202a\u202b\u202c\u00a0\u202f", " "))
_LOCALE_ID = re.compile(r"^([a-z]{2,3})(?:[-_]([A-Za-z]{4}))?(?:[-_]([A-Za-z]{2}|\d{3}))?$")
# Signs sites print that neither table has: "RMB" (renminbi) on Chinese shop pages.
_PRINTED_ALIASES = {"RMB": "CNY"}


@dataclass(frozen=True)
class Market:
    """Where a price is printed: the locales whose symbols its signs follow (``en_US``)
    and the currency the market pays in (``USD``; a page may state it, e.g. booking.com's
    selected currency)."""

    locales: tuple[str, ...] = ()
    currency: str | None = None


NO_MARKET = Market()


@lru_cache(maxsize=256)
def market(
    country: str | None = None, language: str | None = None, currency: str | None = None
) -> Market:
    """The market of a page: its country (ISO 3166: ``ID``) and/or its language as pages
    say it (``es``, ``en-us``, ``pt_BR``; a region names the country when none is
    given), and the currency it states (else the country's current one).

    ``market(country="SE")`` reads signs as Swedish pages print them and pays in SEK;
    ``market(language="es", currency="MXN")`` is booking.com in Spanish showing pesos.
    """
    locales: list[str] = []
    parsed = _parse_locale(language)
    if parsed is not None:
        locales.append(str(parsed))
        country = country or parsed.territory
    country = country.upper() if country and re.fullmatch(r"[A-Za-z]{2}", country) else None
    if country:
        locales += [ident for ident in _locales_of(country) if ident not in locales]
    stated = currency_code(currency)
    return Market(tuple(locales), stated or (country_currency(country) if country else None))


def currency_code(value: Any) -> str | None:
    """An ISO 4217 code as data states it (``"IDR"``, ``"eur"``); None otherwise."""
    if not isinstance(value, str):
        return None
    code = value.strip().upper()
    return code if code in _known_codes() else None


def country_currency(country: str | None) -> str | None:
    """The currency a country pays in today (CLDR: ``ID`` -> IDR, ``PA`` -> PAB)."""
    if not country:
        return None
    try:
        found = get_territory_currencies(country.upper(), dt.date.today(), tender=True)
    except (KeyError, ValueError):
        return None
    return found[0] if found else None


def printed_sign(printed: str | None) -> str | None:
    """The currency sign printed with an amount (``Rp`` in ``Rp 1.234.567``), as
    price-parser finds it; None without one."""
    if not printed:
        return None
    # As printed first: price-parser knows Arabic signs with their marks ("د.إ.\u200f").
    for text in (printed, printed.translate(_INVISIBLE)):
        sign = Price.fromstring(text).currency
        if sign and sign.strip():
            return _whole_sign(text, sign.strip())
    return None


def _whole_sign(text: str, sign: str) -> str:
    """The sign with the letters printed against it when the tables know that longer
    sign: price-parser finds the ``¥`` of ``JP¥935,000``, which is yen alone."""
    found = re.search(rf"([^\W\d_]*){re.escape(sign)}([^\W\d_]*)", text)
    if found and found.group(0) != sign:
        longer = found.group(0)
        if currency_code(longer) or candidates(longer):
            return longer
    return sign


def candidates(sign: str | None) -> frozenset[str]:
    """Every current currency some locale or table prints as ``sign`` (empty: unknown)."""
    if not sign:
        return frozenset()
    key = _sign_key(sign)
    code = currency_code(key)
    if code and code in _current_codes():
        return frozenset({code})
    table = _global_signs()
    return table.get(key) or table.get(key.casefold()) or frozenset()


def resolve(sign: str | None, where: Market = NO_MARKET) -> str | None:
    """The currency ``sign`` names in ``where`` (see the module docstring); None when the
    sign is unknown or stays ambiguous."""
    if not sign:
        return None
    key = _sign_key(sign)
    if code := currency_code(key):
        return code
    local = _local_signs(where.locales).get(key) or _local_signs(where.locales).get(key.casefold())
    if local:
        chosen = _one(local, where.currency)
        if chosen:
            return chosen
    return _one(candidates(key), where.currency)


def currency_of(printed: str | None, where: Market = NO_MARKET) -> str | None:
    """The currency of a printed price (``"Rp 1.234.567"`` -> IDR) in ``where``."""
    return resolve(printed_sign(printed), where)


# -- the tables (built once) ---------------------------------------------------------------------


def _one(options: frozenset[str], preferred: str | None) -> str | None:
    if len(options) == 1:
        return next(iter(options))
    return preferred if preferred in options else None


def _sign_key(sign: str) -> str:
    # "kr." and "kr", "د.إ.\u200f" and "د.إ": a trailing dot or mark changes no currency.
    return " ".join(sign.translate(_INVISIBLE).split()).rstrip(".") or sign.strip()


@cache
def _known_codes() -> frozenset[str]:
    return frozenset(list_currencies())


@cache
def _current_codes() -> frozenset[str]:
    """Currencies some country pays in today (CLDR's territory currencies)."""
    today = dt.date.today()
    codes: set[str] = set()
    for territory in get_global("territory_currencies"):
        codes.update(get_territory_currencies(territory, today, tender=True))
    return frozenset(codes)


@cache
def _global_signs() -> Mapping[str, frozenset[str]]:
    """sign -> currencies, over every CLDR locale's symbols and price-parser's table.
    Keys are stored as printed and casefolded ("Kr" finds "kr")."""
    current = _current_codes()
    found: dict[str, set[str]] = defaultdict(set)

    def add(sign: Any, code: str) -> None:
        if isinstance(sign, str) and sign.strip() and code in current:
            key = _sign_key(sign)
            found[key].add(code)
            found[key.casefold()].add(code)

    for ident in localedata.locale_identifiers():
        for code, sign in _own_symbols(ident).items():
            add(sign, code)
    for code, info in _PRICE_PARSER_CURRENCIES.items():
        for sign in (info.get("s"), info.get("sn"), *info.get("sn2", ())):
            add(sign, code)
    for sign, code in _PRINTED_ALIASES.items():
        add(sign, code)
    return {sign: frozenset(codes) for sign, codes in found.items()}


def _own_symbols(ident: str) -> Mapping[str, str]:
    """The currency symbols a locale's own CLDR file defines (none inherited): every
    symbol some file defines, at a fifth of the cost of merged locales. Read from
    babel's data file directly: ``localedata.load(merge_inherited=False)`` would cache
    the unmerged data under the locale's name, and every later ``Locale`` of it would
    lose what it inherits."""
    with open(localedata.resolve_locale_filename(ident), "rb") as data:
        # babel's own data files, shipped in its wheel, read as babel reads them.
        own = pickle.load(data)  # noqa: S301
    symbols = own.get("currency_symbols") if isinstance(own, dict) else None
    return symbols if isinstance(symbols, dict) else {}


@lru_cache(maxsize=256)
def _local_signs(locales: tuple[str, ...]) -> Mapping[str, frozenset[str]]:
    """sign -> currencies, as the given locales print them (inheritance merged)."""
    current = _current_codes()
    found: dict[str, set[str]] = defaultdict(set)
    for ident in locales:
        try:
            symbols = Locale.parse(ident).currency_symbols
        except (UnknownLocaleError, ValueError):
            continue
        for code, sign in symbols.items():
            if code in current and sign:
                key = _sign_key(sign)
                found[key].add(code)
                found[key.casefold()].add(code)
    return {sign: frozenset(codes) for sign, codes in found.items()}


@cache
def _territory_locales() -> Mapping[str, tuple[str, ...]]:
    by_territory: dict[str, list[str]] = defaultdict(list)
    for ident in localedata.locale_identifiers():
        parts = ident.split("_")
        if len(parts) > 1 and re.fullmatch(r"[A-Z]{2}", parts[-1]):
            by_territory[parts[-1]].append(ident)
    return {territory: tuple(sorted(idents)) for territory, idents in by_territory.items()}


@cache
def _locales_of(country: str) -> tuple[str, ...]:
    """The locales of a country's official languages (CLDR: ``CH`` -> de_CH, gsw_CH,
    fr_CH, it_CH). Not every locale of the territory: a minority language inheriting
    another country's conventions (German's ``$`` for USD) would read a French page's
    ``$`` as dollars."""
    present = _territory_locales().get(country, ())
    found: list[str] = []
    for language in get_official_languages(country, regional=False, de_facto=True):
        exact = f"{language}_{country}"
        if exact in present:
            found.append(exact)
        else:  # a script between language and territory: zh -> zh_Hans_CN
            found += [
                i for i in present if re.fullmatch(rf"{language}_[A-Z][a-z]{{3}}_{country}", i)
            ]
    return tuple(dict.fromkeys(found))


def _parse_locale(language: str | None) -> Locale | None:
    """``en-us`` -> en_US, ``es`` -> es; None for what is no locale babel knows."""
    match = _LOCALE_ID.match((language or "").strip())
    if not match:
        return None
    lang, script, region = match.groups()
    for parts in ((lang, region, script), (lang, region, None), (lang, None, None)):
        try:
            return Locale(parts[0].lower(), territory=_upper(parts[1]), script=_title(parts[2]))
        except (UnknownLocaleError, ValueError):
            continue
    return None


def _upper(value: str | None) -> str | None:
    return value.upper() if value else None


def _title(value: str | None) -> str | None:
    return value.title() if value else None
