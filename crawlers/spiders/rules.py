"""The rules of a profile-driven site, applied to a page: which page type a URL is, which
links a page follows, and the item fields it holds (``[pages.<name>]`` of the profile,
``crawlers.profile_schema``).

Pure functions over a Scrapy response, so the generic spider, the scaffold command and
tests share one reading of a rule. Field values are converted to the item field's type
(crawlers.spiders.field_kinds: ``Money`` -> an amount, ``Currency`` -> an ISO code,
``Url`` -> absolute, ``list[...]`` -> every value...). A value found but not
convertible is reported in ``Extraction.problems``, never passed off as absent silently.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lxml import etree
from parsel import Selector
from pydantic import ValidationError
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor

from crawlers.items import schema_by_type
from crawlers.profile_schema import FieldRule, MarketTable, PageTable
from crawlers.spiders.common import has_type, schema_name, structured_nodes, text
from crawlers.spiders.currency import Market, market
from crawlers.spiders.fallbacks import Picked, Rejected
from crawlers.spiders.field_kinds import Kind, convert, field_kinds

__all__ = [
    "Extraction",
    "Kind",
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
    # Each rule's value refused (crawlers.spiders.fallbacks: counted by the spider), and
    # the source each field's value came from.
    picked: Picked | None = None

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
    nodes = _item_nodes(response, page.item) if page.item or _reads_data(page) else []
    node = nodes[0][1] if nodes else None
    fields: dict[str, Any] = dict.fromkeys(kinds)
    fields["url"] = response.url
    problems: list[str] = []
    from_page: list[str] = []
    refused: list[Rejected] = []
    sources: dict[str, str] = {}
    no_valid: list[str] = []
    required = schema_by_type(item_type).required
    context = _Context(response, root if root is not None else response, reading)
    unfit: dict[str, Any] = {}  # a field's first value converted but refused by its type
    for name, rules in page.fields.items():
        for rule, source, data in _candidates(rules, nodes):
            try:
                value = _value(context, rule, data, kinds[name])
            except _Refused as exc:
                problems.append(f"{name}: {exc}")
                refused.append(Rejected(name, source, exc.reason, str(exc)))
                if exc.value is not None:
                    unfit.setdefault(name, exc.value)
                continue
            if value is not None:
                fields[name], sources[name] = value, source
                if rule.url is None and rule.value is None:
                    from_page.append(name)
                break
    if node is not None or from_page:
        # Defaults complete a page that has the item, after every fallback had its turn;
        # a page without it (a block page answered 200) stays without.
        for name, rules in page.fields.items():
            default = next((rule.default for rule in rules if rule.default is not None), None)
            if fields[name] is None and default is not None:
                fields[name] = _valid(kinds[name], convert(kinds[name], default, context))
    # Still without a value after all that: a required field keeps its first unfit value
    # (validation drops the item, naming why), another is left empty.
    for name in dict.fromkeys(r.field for r in refused if fields[r.field] is None):
        if name in unfit and name in required:
            fields[name] = unfit[name]
        else:
            no_valid.append(name)
    picked = Picked(item_type, fields, sources, tuple(refused), tuple(no_valid))
    return Extraction(fields, node is not None, tuple(problems), tuple(from_page), picked)


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


class _Refused(ValueError):
    """A rule's value found but refused: not convertible (``unconverted``), or converted
    (``value``) and not fitting the field's type (pydantic's error type as ``reason``)."""

    def __init__(self, message: str, reason: str = "unconverted", value: Any = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.value = value


def _candidates(
    rules: Sequence[FieldRule], nodes: Sequence[tuple[str, dict[str, Any] | None]]
) -> Iterator[tuple[FieldRule, str, dict[str, Any] | None]]:
    """Each rule with its source (crawlers.spiders.fallbacks' names): a ``data`` rule once
    per structured-data node of the item (JSON-LD's, then microdata's), the others once."""
    for rule in rules:
        if rule.data is not None and not rule.data.startswith("og:"):
            yield from ((rule, syntax, node) for syntax, node in nodes or [("json-ld", None)])
        else:
            yield rule, _source_name(rule), None


def _source_name(rule: FieldRule) -> str:
    """Where a rule other than a structured-data path reads (OpenGraph's ``og:`` too)."""
    if rule.data is not None:
        return "meta"
    if rule.url is not None:
        return "url"
    return "value" if rule.value is not None else "dom"


def _item_nodes(response: TextResponse, item: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The page's item node in each syntax that has one: (``json-ld`` | ``microdata``, node)."""
    found = [
        (syntax, first_node(structured_nodes(response, syntax), item))
        for syntax in ("json-ld", "microdata")
    ]
    return [(syntax, node) for syntax, node in found if node is not None]


def _value(context: _Context, rule: FieldRule, node: dict[str, Any] | None, kind: Kind) -> Any:
    """One rule's value, converted and checked against the item field's type; a value
    found but not fitting is refused (``_Refused``), not an item the pipeline drops."""
    try:
        converted = convert(kind, _read(context, rule, node, kind), context)
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    return _valid(kind, converted)


def _valid(kind: Kind, value: Any) -> Any:
    if value is None or kind.adapter is None:
        return value
    try:
        if kind.many:
            return [kind.adapter.validate_python(v, strict=True) for v in value]
        return kind.adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        message = f"{text(value)!r} does not fit the field ({error['msg']})"
        raise _Refused(message, error["type"], value) from None


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
