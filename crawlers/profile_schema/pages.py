"""The page types of a profile-driven site (``[pages.<name>]``, crawlers.spiders.generic,
docs/sites.md): field rules, follow rules, the item fields a profile declares and the
market its pages are read in."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from crawlers.profile_schema.values import (
    Css,
    GateSelector,
    PageTypeName,
    Regex,
    Regexes,
    Scalar,
    SchemaType,
    Table,
    Text,
    Threshold,
    UrlPath,
    XPath,
    is_path,
    list_as_tuple,
)


class FieldRule(Table):
    """Where one item field is read on a page: exactly one source, then optional shaping.

    Sources: ``data`` (a dotted path in the page's item node of structured data, JSON-LD
    or microdata, e.g. ``offers.price``; ``og:title`` reads OpenGraph), ``css`` /
    ``xpath`` (the matched elements' text, or ``attr``), ``table`` + ``label`` (a key/value
    table or ``<dl>``: the value next to the key cell reading ``label``), ``url`` (a regular
    expression on the page's URL, its first group), ``value`` (a constant).
    Shaping: ``re`` (first group of a regular expression on the text), ``map`` (printed
    value -> stored value, case-insensitive, e.g. ``"In stock" = "InStock"``), ``count``
    (the number of matched elements, e.g. filled stars), ``all`` (every match, for list
    fields); ``default``: the value when the source finds nothing. The value is then
    converted to the item field's type (money, count, URL...).
    """

    data: Text | None = None
    css: Css | None = None
    xpath: XPath | None = None
    table: Css | None = None
    label: Text | None = None
    url: Regex | None = None
    value: Scalar | None = None
    attr: Text | None = None
    re: Regex | None = None
    map: dict[str, Scalar] = {}
    count: bool = False
    all: bool = False
    # The value when the source finds nothing on a page that has it (e.g. ``remote =
    # false`` beside a map of ``TELECOMMUTE``); not applied to a page missing the item.
    default: Scalar | None = None

    @model_validator(mode="after")
    def _one_source(self) -> FieldRule:
        sources = [name for name in FIELD_SOURCES if getattr(self, name) is not None]
        if len(sources) != 1:
            raise PydanticCustomError(
                "expected",
                "expected {expected}",
                {
                    "expected": "exactly one of " + ", ".join(FIELD_SOURCES),
                    "detail": f"found {', '.join(sources) or 'none'}",
                },
            )
        if (self.table is None) != (self.label is None):
            raise PydanticCustomError(
                "expected", "expected {expected}", {"expected": "table and label together"}
            )
        if self.count and self.css is None and self.xpath is None:
            raise PydanticCustomError(
                "expected", "expected {expected}", {"expected": "count with css or xpath"}
            )
        return self

    @property
    def selector(self) -> str | None:
        """The CSS or XPath this rule relies on (the structure gate counts its matches), if
        any: an XPath computing a value (``string(//h1)``) selects no elements to count."""
        if self.xpath is not None:
            return self.xpath if is_path(self.xpath) else None
        return self.css or self.table


FIELD_SOURCES = ("data", "css", "xpath", "table", "url", "value")


def _rules(value: Any) -> Any:
    # One rule or a list of fallbacks (the first that gives a value wins): always a tuple.
    if isinstance(value, dict):
        return (value,)
    return list_as_tuple(value)


FieldRules = Annotated[tuple[FieldRule, ...], BeforeValidator(_rules), Field(min_length=1)]


class FollowRule(Table):
    """Links a page type follows (Scrapy's LinkExtractor): within the ``css`` / ``xpath``
    regions (none: the whole page), whose URL matches one of ``allow`` (none: any) and none
    of ``deny``; ``to`` names the page type they lead to (none: the first page type whose
    ``url_patterns`` match each link)."""

    css: Css | None = None
    xpath: XPath | None = None
    allow: Regexes = ()
    deny: Regexes = ()
    to: PageTypeName | None = None

    @property
    def selector(self) -> str | None:
        return self.css or self.xpath


class ItemField(Table):
    """One field of an item type a profile declares (``[item_fields]``,
    crawlers.declared_items): its type, whether an item is invalid without it, whether it
    is the site's own id (the item key), and whether it holds a list."""

    type: Literal[
        "text",
        "keyword",
        "long_text",
        "url",
        "date",
        "money",
        "currency",
        "count",
        "number",
        "bool",
        "country",
        "language",
    ] = "text"
    required: bool = False
    key: bool = False
    list: bool = False


class MarketTable(Table):
    """Where the site's pages are read (``[market]``): their country (ISO 3166, ``DE``),
    the languages they print in (``["de", "en"]``: dates and number words) and the
    currency they pay in (ISO 4217; default the country's). Unset: each page's
    ``<html lang>``."""

    country: Annotated[str, Field(pattern=r"^[A-Z]{2}$")] | None = None
    languages: Annotated[tuple[Text, ...], BeforeValidator(list_as_tuple)] = ()
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] | None = None


class PageTable(Table):
    """One page type of a profile-driven site (``[pages.<name>]``): how it is recognised,
    which links it follows, which item it yields, and the structure gate's samples. Its
    rules' selectors are the gate's selectors for the page type (one set)."""

    # Regular expressions searched in a URL's path and query: start and sitemap URLs, and
    # links of follow rules without ``to``, go to the first page type matching them.
    url_patterns: Regexes = ()
    follow: Annotated[tuple[FollowRule, ...], BeforeValidator(list_as_tuple)] = ()
    # The schema.org type of the page's item node (``Product``, ``JobPosting``): ``data``
    # rules read that node. A page type with ``fields`` yields one item per page.
    item: SchemaType | None = None
    fields: dict[Text, FieldRules] = {}
    # Many items per page (quotes, reviews, search results without detail pages): the
    # repeated container, CSS or XPath; each match is one item, its fields' css/xpath/
    # table rules read within it (an XPath from it starts with ``./``).
    items: GateSelector | None = None
    # The gate (docs/fingerprints.md): sample pages, a threshold, and selectors beyond the
    # rules' own ones.
    sample_paths: list[UrlPath] = []
    selectors: dict[str, GateSelector] = {}
    threshold: Threshold | None = None
