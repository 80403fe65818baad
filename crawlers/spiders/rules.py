"""The rules of a profile-driven site, applied to a page: which page type a URL is, which
links a page follows, and the item fields it holds (``[pages.<name>]`` of the profile,
``crawlers.profile_schema``).

Pure functions over a Scrapy response, so the generic spider, the scaffold command and
tests share one reading of a rule. Field values are converted to the item field's type,
read from the item schema's annotations (``Money`` -> an amount, ``Currency`` -> an ISO
code, ``Url`` -> absolute, ``list[...]`` -> every value...). A value found but not
convertible is reported in ``Extraction.problems``, never passed off as absent silently.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, get_args, get_origin
from urllib.parse import urlsplit

from lxml import etree
from parsel import Selector
from pydantic import TypeAdapter, ValidationError
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor
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
from crawlers.profile_schema import FieldRule, MarketTable, PageTable
from crawlers.spiders.common import (
    absolute,
    has_type,
    long_text,
    money,
    schema_name,
    structured_nodes,
    text,
    to_float,
)
from crawlers.spiders.currency import Market, market
from crawlers.spiders.printed import printed_date, printed_number

__all__ = [
    "Extraction",
    "Reading",
    "extract_fields",
    "field_kinds",
    "first_node",
    "follow_links",
    "item_node",
    "node_values",
    "page_type_for",
    "read_items",
    "read_page",
    "url_target",
]

# -- page types and links ------------------------------------------------------------------------


def url_target(url: str) -> str:
    """What ``url_patterns`` are searched in: the URL's path (``/`` for none) and query."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def page_type_for(
    url: str, pages: Mapping[str, PageTable], default: str | None = None
) -> str | None:
    """The first page type whose ``url_patterns`` one matches ``url``'s path and query."""
    target = url_target(url)
    for name, page in pages.items():
        if any(re.search(pattern, target) for pattern in page.url_patterns):
            return name
    return default


def follow_links(
    response: TextResponse, name: str, pages: Mapping[str, PageTable]
) -> tuple[list[tuple[str, str]], list[str]]:
    """The links page type ``name`` follows on ``response``: (absolute URL, page type)
    pairs in document order, and the URLs no page type claims (counted by the caller)."""
    routed: dict[str, str] = {}
    unrouted: list[str] = []
    for rule in pages[name].follow:
        extractor = LinkExtractor(
            allow=rule.allow,
            deny=rule.deny,
            restrict_css=(rule.css,) if rule.css else (),
            restrict_xpaths=(rule.xpath,) if rule.xpath else (),
        )
        for link in extractor.extract_links(response):
            target = rule.to or page_type_for(link.url, pages)
            if target is None:
                unrouted.append(link.url)
            else:
                routed.setdefault(link.url, target)
    # A link one rule leaves unrouted but another routes is followed, not reported.
    return list(routed.items()), [url for url in dict.fromkeys(unrouted) if url not in routed]


# -- item fields -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Extraction:
    """An item page read by its rules: every field of the item type (None: not found),
    whether the page held the item's node, the values found but not convertible, and the
    fields the page's content gave (not its URL, a stated value or a default: a block
    page answered 200 has a URL too)."""

    fields: dict[str, Any]
    has_node: bool
    problems: tuple[str, ...] = ()
    from_page: tuple[str, ...] = ()

    @property
    def found(self) -> list[str]:
        return [name for name, value in self.fields.items() if value not in (None, [], "")]


def item_node(response: TextResponse, item: str | None) -> dict[str, Any] | None:
    """The page's structured-data node of schema.org type ``item`` (JSON-LD first, then
    microdata); with no type named, the first node. None when the page has none."""
    return first_node(structured_nodes(response, "json-ld", "microdata"), item)


def first_node(nodes: Iterable[dict[str, Any]], item: str | None) -> dict[str, Any] | None:
    """The first of ``nodes`` of schema.org type ``item`` (any type when None)."""
    return next((node for node in nodes if item is None or has_type(node, item)), None)


def node_values(node: Any, path: str) -> list[Any]:
    """Every value at a dotted ``path`` of a structured-data node (what a ``data`` rule
    reads), lists flattened at each step."""
    return _path(node, path.split("."))


@dataclass(frozen=True)
class Reading:
    """Where a site's pages are read (the profile's ``[market]``): the languages its dates
    and number words print in, and the market its currency signs and bare amounts mean.
    Unset parts come from each page's ``<html lang>``."""

    languages: tuple[str, ...] = ()
    market: Market | None = None

    @classmethod
    def of(cls, table: MarketTable) -> Reading:
        language = table.languages[0] if table.languages else None
        stated = table.country or language or table.currency
        where = market(country=table.country, language=language, currency=table.currency)
        return cls(tuple(table.languages), where if stated else None)

    def languages_of(self, response: TextResponse) -> tuple[str, ...]:
        if self.languages:
            return self.languages
        lang = response.xpath("/html/@lang").get()
        return (lang,) if lang else ()

    def market_of(self, response: TextResponse) -> Market:
        return self.market or market(language=response.xpath("/html/@lang").get())


_PAGE_READING = Reading()


def extract_fields(response: TextResponse, page: PageTable, item_type: str) -> dict[str, Any]:
    """``read_page(...).fields``: the item's fields as its type declares them."""
    return read_page(response, page, item_type).fields


def read_items(
    response: TextResponse, page: PageTable, item_type: str, reading: Reading = _PAGE_READING
) -> list[Extraction]:
    """Every item of a page: one per match of the page type's ``items`` container (its
    fields read within it), or the page's one item."""
    if page.items is None:
        return [read_page(response, page, item_type, reading)]
    query = page.items
    containers = response.xpath(query) if _is_path(query) else response.css(query)
    return [read_page(response, page, item_type, reading, root=box) for box in containers]


def read_page(
    response: TextResponse,
    page: PageTable,
    item_type: str,
    reading: Reading = _PAGE_READING,
    *,
    root: Selector | None = None,
) -> Extraction:
    """The item of a page (or of one item container ``root`` on it)."""
    kinds = field_kinds(item_type)
    unknown = sorted(set(page.fields) - set(kinds))
    if unknown:
        raise KeyError(f"item type {item_type!r} has no field(s) {', '.join(unknown)}")
    node = item_node(response, page.item) if page.item or _reads_data(page) else None
    fields: dict[str, Any] = dict.fromkeys(kinds)
    fields["url"] = response.url
    problems: list[str] = []
    from_page: list[str] = []
    context = _Context(response, root if root is not None else response, reading)
    for name, rules in page.fields.items():
        for rule in rules:
            value = _value(context, rule, node, kinds[name], problems, name)
            if value is not None:
                fields[name] = value
                if rule.url is None and rule.value is None:
                    from_page.append(name)
                break
    if node is not None or from_page:
        # Defaults complete a page that has the item, after every fallback had its turn;
        # a page without it (a block page answered 200) stays without.
        for name, rules in page.fields.items():
            default = next((rule.default for rule in rules if rule.default is not None), None)
            if fields[name] is None and default is not None:
                fields[name] = _valid(kinds[name], _convert(kinds[name], default, context))
    return Extraction(fields, node is not None, tuple(problems), tuple(from_page))


@dataclass(frozen=True)
class _Context:
    """What a rule reads: the page, the part of it holding the item, how it prints."""

    response: TextResponse
    root: Selector | TextResponse
    reading: Reading

    @functools.cached_property
    def languages(self) -> tuple[str, ...]:
        return self.reading.languages_of(self.response)

    @functools.cached_property
    def market(self) -> Market:
        return self.reading.market_of(self.response)


def _is_path(query: str) -> bool:
    return query.strip().startswith(("/", "(", "./"))


def _value(
    context: _Context,
    rule: FieldRule,
    node: dict[str, Any] | None,
    kind: Kind,
    problems: list[str],
    name: str,
) -> Any:
    """One rule's value, converted and checked against the item field's type; a value
    found but not fitting is a problem (and None), not an item the pipeline drops."""
    try:
        return _valid(kind, _convert(kind, _read(context, rule, node, kind), context))
    except ValueError as exc:
        problems.append(f"{name}: {exc}")
        return None


def _valid(kind: Kind, value: Any) -> Any:
    if value is None or kind.adapter is None:
        return value
    try:
        if kind.many:
            return [kind.adapter.validate_python(v, strict=True) for v in value]
        return kind.adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        reason = exc.errors(include_url=False)[0]["msg"]
        raise ValueError(f"{text(value)!r} does not fit the field ({reason})") from None


def _reads_data(page: PageTable) -> bool:
    return any(rule.data for rules in page.fields.values() for rule in rules)


def _read(context: _Context, rule: FieldRule, node: dict[str, Any] | None, kind: Kind) -> Any:
    """The raw value(s) of one rule: a list when the field takes several, else one."""
    values = _source(context, rule, node)
    split = kind.many and kind.name == "text" and rule.data and len(values) == 1
    if split and isinstance(values[0], str):  # schema.org's comma-separated lists (skills)
        values = [part for part in values[0].split(",") if part.strip()]
    if rule.count:
        found: Any = len(values) or None  # nothing matched: no rating shown, not a zero
    else:
        shaped = [_shape(rule, value) for value in values]
        shaped = [value for value in shaped if value is not None]
        found = shaped if (kind.many or rule.all) else (shaped[0] if shaped else None)
        if found == []:
            found = None
    return found


def _source(context: _Context, rule: FieldRule, node: dict[str, Any] | None) -> list[Any]:
    response, root = context.response, context.root
    if rule.value is not None:
        return [rule.value]
    if rule.data is not None:
        if rule.data.startswith("og:"):
            query = f'//meta[@property="{rule.data}"]/@content'
            return response.xpath(query).getall()
        return node_values(node, rule.data) if node is not None else []
    if rule.url is not None:
        match = re.search(rule.url, response.url)
        return [] if match is None else [match.group(1) if match.groups() else match.group(0)]
    if rule.table is not None:
        return _table_values(root.css(rule.table), rule.label or "")
    matches = root.css(rule.css) if rule.css else root.xpath(rule.xpath or "")
    return [_node_value(match, rule.attr) for match in matches]


def _node_value(match: Selector, attr: str | None) -> Any:
    if attr:
        return match.attrib.get(attr)
    if not isinstance(match.root, etree._Element):
        # ::text, ::attr(...), an XPath to text or attributes, or one computing a value
        # (string(...), count(...), boolean(...)): the value itself.
        return match.root
    return " ".join(part.strip() for part in match.xpath(".//text()").getall() if part.strip())


def _table_values(tables: Iterable[Selector], label: str) -> list[str]:
    """The value beside the key reading ``label`` in ``<table>`` rows (th/td) or ``<dl>``
    lists (dt/dd), compared without case and a trailing colon."""
    wanted = label.strip().rstrip(":").casefold()
    found = []
    for table in tables:
        for key in table.xpath(".//th | .//dt | .//tr/td[1]"):
            name = " ".join(" ".join(key.xpath(".//text()").getall()).split())
            if name.rstrip(":").strip().casefold() != wanted:
                continue
            cell = key.xpath("following-sibling::*[self::td or self::dd][1]")
            if cell:
                found.append(_node_value(cell[0], None))
    return found


def _path(value: Any, parts: Sequence[str]) -> list[Any]:
    """Every value at ``parts`` under ``value``, lists flattened at each step."""
    if not parts:
        return [v for v in (value if isinstance(value, list) else [value]) if v is not None]
    out: list[Any] = []
    for entry in value if isinstance(value, list) else [value]:
        if isinstance(entry, dict) and parts[0] in entry:
            out += _path(entry[parts[0]], parts[1:])
    return out


def _shape(rule: FieldRule, value: Any) -> Any:
    if isinstance(value, str) and rule.re is not None:
        match = re.search(rule.re, value)
        if match is None:
            return None
        value = match.group(1) if match.groups() else match.group(0)
    if rule.map:
        key = schema_name(value) if isinstance(value, str) else value
        table = {str(schema_name(k) or k).casefold(): v for k, v in rule.map.items()}
        mapped = table.get(str(key).strip().casefold())
        if mapped is None:
            # A printed value the profile does not know: reported, not silently absent.
            raise ValueError(f"{text(str(value))!r} is not in the rule's map")
        return mapped
    return value


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
    schema = schema_by_type(item_type)
    hints = typing.get_type_hints(schema.cls, include_extras=True)
    return {name: _kinds(hints[name]) for name in schema.field_names}


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


def _convert(kind: Kind, raw: Any, context: _Context) -> Any:
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


def _one(name: str, raw: Any, context: _Context) -> Any:
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


def _number(raw: Any, context: _Context) -> float | None:
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
