"""Values as pages print them: dates in words and suffixed numbers, read in the page's
languages (a profile's ``[market]``, else the page's ``<html lang>``).

* ``printed_date("Published on Apr 24, 2022", ("en",))`` -> ``"2022-04-24"``: dateparser,
  with the page's languages; a date inside a sentence is searched for. A time, when the
  page prints one, is kept (``2022-04-24T18:30:00``).
* ``printed_number("59K")`` -> ``59000.0``, ``"1,2 Mio."`` (German) -> ``1200000.0``,
  ``"1.234,56"`` -> ``1234.56``: price-parser reads the digits (separators of any locale),
  the suffix is CLDR's compact number forms (babel) of the languages, then English's.
  No hand-made suffix table: every language CLDR knows reads its own ``k``/``Mio.``/``mil``.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping, Sequence

from babel import Locale, UnknownLocaleError
from price_parser import Price

__all__ = ["number_suffixes", "printed_date", "printed_number"]

# The digits of a printed number and what follows them (a suffix, a unit, a word).
_NUMBER = re.compile(r"(\d[\d\s.,'\u00a0\u202f]*)(.*)", re.DOTALL)
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?")


def printed_number(value: str, languages: Sequence[str] = ()) -> float | None:
    """The number ``value`` prints, its compact suffix applied (``59K`` -> 59000)."""
    match = _NUMBER.search(value)
    if match is None:
        return None
    amount = Price.fromstring(match.group(1).strip()).amount_float
    if amount is None:
        return None
    rest = match.group(2).strip().casefold()
    if not rest:
        return amount
    table = number_suffixes(tuple(languages))
    # The longest suffix first ("mil M" before "mil", "Mio." before "M"); the suffix must
    # end where a word does, so "5 Monate" is no 5 million.
    for suffix in table:
        if rest.startswith(suffix) and not rest[len(suffix) : len(suffix) + 1].isalnum():
            return amount * table[suffix]
    return amount


@functools.cache
def number_suffixes(languages: tuple[str, ...]) -> Mapping[str, float]:
    """Suffix (case-folded) -> multiplier, from CLDR's short and long compact decimal
    forms of ``languages`` then English (a language's own reading wins: ``B`` is a
    billion in English, ``Bn`` a trillion in French)."""
    table: dict[str, float] = {}
    for language in (*languages, "en"):
        locale = _locale(language)
        if locale is None:
            continue
        for width in ("short", "long"):
            forms = locale.compact_decimal_formats.get(width) or {}
            for plural in forms:
                for magnitude, pattern in forms[plural].items():
                    shape = str(getattr(pattern, "pattern", pattern)).split(";")[0]
                    zeros = shape.count("0")
                    suffix = " ".join(shape.replace("0", "").replace("'", "").split()).casefold()
                    if zeros and suffix and suffix not in table:
                        table[suffix] = int(magnitude) / 10 ** (zeros - 1)
    return dict(sorted(table.items(), key=lambda kv: -len(kv[0])))


def printed_date(value: str, languages: Sequence[str] = ()) -> str | None:
    """The ISO 8601 date (or date and time) ``value`` prints, read in ``languages``
    (none: dateparser detects them); None when it holds no date."""
    value = " ".join(value.split())
    if not value:
        return None
    if _ISO.fullmatch(value):
        return value
    found = _parse(value, tuple(languages))
    if found is None:
        return None
    if found.time() == dt.time(0) and not re.search(r"\d:\d\d", value):
        return found.date().isoformat()
    return found.replace(tzinfo=None).isoformat() if found.tzinfo is None else found.isoformat()


@functools.lru_cache(maxsize=4096)
def _parse(value: str, languages: tuple[str, ...]) -> dt.datetime | None:
    # Imported here: dateparser loads its language data (about a second) on first use.
    import dateparser
    from dateparser.search import search_dates

    langs = [code for code in (_language(lang) for lang in languages) if code] or None
    settings = {"PREFER_DAY_OF_MONTH": "first", "DATE_ORDER": _order(languages)}
    settings = {key: value for key, value in settings.items() if value}
    try:
        found = dateparser.parse(value, languages=langs, settings=settings)
        if found is None:  # a date inside a sentence: "Published on Apr 24, 2022"
            hits = search_dates(value, languages=langs, settings=settings)
            found = hits[0][1] if hits else None
    except (ValueError, LookupError):  # a language dateparser does not know
        return None
    return found


def _language(language: str) -> str | None:
    locale = _locale(language)
    return locale.language if locale is not None else None


def _order(languages: Sequence[str]) -> str | None:
    """The day/month order of the first language's short dates (``DMY`` in en-GB)."""
    for language in languages:
        locale = _locale(language)
        if locale is None:
            continue
        pattern = str(locale.date_formats["short"].pattern).upper()
        positions = {part: pattern.find(part) for part in "DMY"}
        if all(position >= 0 for position in positions.values()):
            return "".join(sorted(positions, key=positions.__getitem__))
    return None


@functools.cache
def _locale(language: str) -> Locale | None:
    try:
        return Locale.parse(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return None
