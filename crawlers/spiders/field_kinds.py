"""The item field kinds of a profile-driven site's rules: which conversion each field of an
item type takes (read from the item schema's annotations: ``Money`` -> an amount,
``Currency`` -> an ISO code, ``Url`` -> absolute, ``list[...]`` -> every value...), and
the conversion of a raw value as the page prints it (its languages and market)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, Union, get_args, get_origin

from pydantic import TypeAdapter
from scrapy.http import Response
from w3lib.html import remove_tags, replace_entities

from core.items_schema import (
    Count,
    CountryCode,
    Currency,
    IsoDate,
    LongText,
    Money,
    Url,
)
from crawlers.items import schema_by_type
from crawlers.spiders.common import absolute, long_text, money, schema_name, text, to_float
from crawlers.spiders.currency import Market
from crawlers.spiders.printed import printed_date, printed_number


class Printed(Protocol):
    """How the page a value was read on prints: its languages and market (and the page,
    which relative URLs resolve against)."""

    @property
    def languages(self) -> tuple[str, ...]: ...

    @property
    def market(self) -> Market: ...

    @property
    def response(self) -> Response: ...


# -- conversion to the item's field types ------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """How a field's raw value becomes its typed value: ``name`` of the conversion, and
    whether the field is a list."""

    name: str
    many: bool = False
    # The item field's own type (each element's, for a list): a converted value that it
    # refuses would make the pipeline drop the whole item.
    adapter: TypeAdapter[Any] | None = field(default=None, compare=False, repr=False)


_BY_TYPE: tuple[tuple[Any, str], ...] = (
    (Money, "money"),
    (Currency, "currency"),
    (Url, "url"),
    (IsoDate, "date"),
    (CountryCode, "country"),
    (LongText, "long_text"),
    (Count, "int"),
)


def field_kinds(item_type: str) -> dict[str, Kind]:
    """Field name -> conversion, from the item type's annotations."""
    return dict(_class_kinds(schema_by_type(item_type).cls))


@functools.cache
def _class_kinds(cls: type) -> tuple[tuple[str, Kind], ...]:
    # Per class (a type a profile declares again is a new class): resolving the hints
    # costs milliseconds, and every page of a profile-driven site asks.
    hints = typing.get_type_hints(cls, include_extras=True)
    return tuple((f.name, _kinds(hints[f.name])) for f in dataclasses.fields(cls))


@functools.cache
def _kinds(hint: Any) -> Kind:
    kind = _kind(hint)
    return dataclasses.replace(kind, adapter=TypeAdapter(_element(hint)))


def _required(hint: Any) -> Any:
    """``X | None`` -> ``X``."""
    if get_origin(hint) in (Union, types.UnionType):
        return next(arg for arg in get_args(hint) if arg is not type(None))
    return hint


def _element(hint: Any) -> Any:
    """``X | None`` -> ``X``; ``list[X]`` -> ``X``."""
    hint = _required(hint)
    return get_args(hint)[0] if get_origin(hint) is list else hint


def _kind(hint: Any) -> Kind:
    hint = _required(hint)
    if get_origin(hint) is list:
        inner = _kind(get_args(hint)[0])
        return Kind(inner.name, many=True)
    for declared, name in _BY_TYPE:
        if hint == declared:
            return Kind(name)
    base = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    if get_origin(base) is typing.Literal:
        return Kind("text")  # its values are checked with the field's type (_valid)
    simple = {bool: "bool", int: "int", float: "float", str: "text"}
    return Kind(simple.get(base, "raw"))


def convert(kind: Kind, raw: Any, context: Printed) -> Any:
    if raw is None:
        return None
    if kind.many:
        items = raw if isinstance(raw, list) else [raw]
        values = [_one(kind.name, item, context) for item in items]
        values = list(dict.fromkeys(v for v in values if v is not None))
        return values or None
    if isinstance(raw, list) and kind.name in ("text", "long_text"):
        # ``all`` on a text field: every match, joined (paragraphs stay paragraphs).
        parts = [str(part) for part in raw if text(part)]
        raw = ("\n\n" if kind.name == "long_text" else " ").join(parts) if parts else None
    elif isinstance(raw, list):
        raw = raw[0] if raw else None
    if raw is None:
        return None
    return _one(kind.name, raw, context)


# The HTML of a long text: where its paragraphs and lines end.
_BLOCK_END = re.compile(r"</(?:p|div|li|h[1-6]|tr|blockquote|section|article)\s*>", re.IGNORECASE)
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)

# Which property of a nested node (an ImageObject, a Brand...) stands for it.
_URL_KEYS = ("url", "contentUrl", "@id")
_NAME_KEYS = ("name", "value", "@id")


def _one(name: str, raw: Any, context: Printed) -> Any:
    if isinstance(raw, dict):  # a nested node where a value was expected
        keys = _URL_KEYS if name == "url" else _NAME_KEYS
        raw = next((raw[key] for key in keys if raw.get(key) not in (None, "")), None)
        if raw is None:
            return None
    if name == "money":
        # The sign is read in the site's market ("£" on an en-GB page is GBP), the amount
        # as printed ("1.234,50 €", "$1.2M").
        amount = money(raw, where=context.market).amount
        if isinstance(raw, str) and amount is not None:
            amount = printed_number(raw, context.languages)
        return _checked(amount, raw, "an amount")
    if name == "currency":
        code = text(raw)
        if code and re.fullmatch(r"[A-Z]{3}", code):
            return code
        return _checked(money(raw, where=context.market).currency, raw, "a currency")
    if name == "url":
        return absolute(context.response, raw)
    if name == "date":
        printed = text(raw)
        iso = _iso_date(printed) or (printed_date(printed, context.languages) if printed else None)
        return _checked(iso, raw, "a date")
    if name == "country":
        code = text(raw)
        return _checked(code.upper() if code and len(code) == 2 else None, raw, "a country code")
    if name == "long_text":
        # JSON-LD descriptions often carry the page's HTML: its text, entities decoded,
        # paragraphs and line breaks kept as such.
        if isinstance(raw, str):
            raw = _BLOCK_END.sub("\n\n", _LINE_BREAK.sub("\n", raw))
            raw = replace_entities(remove_tags(raw))
        return long_text(raw)
    if name == "int":
        number = _number(raw, context)
        return None if number is None else _checked(int(number), raw, "a whole number")
    if name == "float":
        return _checked(_number(raw, context), raw, "a number")
    if name == "bool":
        return raw if isinstance(raw, bool) else _bool(raw)
    if name == "text":
        return schema_name(raw) if isinstance(raw, str) and "schema.org/" in raw else text(raw)
    return raw


def _number(raw: Any, context: Printed) -> float | None:
    """A number as data holds it, or as printed: grouping of any locale, compact suffixes
    in the page's languages ("59K", "1,2 Mio.")."""
    if isinstance(raw, str):
        return printed_number(raw, context.languages)
    return to_float(raw)


def _checked(value: Any, raw: Any, what: str) -> Any:
    if value is None:
        raise ValueError(f"{text(raw)!r} is not {what}")
    return value


def _bool(raw: Any) -> bool:
    word = str(raw).strip().casefold()
    if word in ("true", "yes", "1"):
        return True
    if word in ("false", "no", "0"):
        return False
    raise ValueError(f"{raw!r} is not true or false")


def _iso_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value
