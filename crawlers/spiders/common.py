"""What the production-site spiders share: a spider base and pure extraction helpers.

``ProductionSpider`` adds to ``SiteSpider`` what every production site needs: offsite
filtering on the base URL's host, a page limit for pagination (``MAX_LISTING_PAGES``
in the profile's ``[settings]``), and counted, logged failures (``<site>/<what>`` stats),
so nothing is dropped silently.

The helpers read structured data the way the sites embed it: JSON-LD nodes (``@graph``
included), schema.org microdata items, JSON inside ``<script>`` tags, and numbers as
sites print them ("1.234,50 €", "3,498", "4.5/5").
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlparse

from lxml import etree
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawlers.spiders.base import SiteSpider

_SCHEMA_PREFIXES = ("https://schema.org/", "http://schema.org/")
_NUMBER = re.compile(r"-?\d[\d.,\u00a0\u202f' ]*")


class ProductionSpider(SiteSpider):
    """Base of the six production spiders (``name`` and callbacks set by subclasses)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        host = urlparse(self.base_url).hostname
        if not host:
            raise ValueError(f"base_url must be an absolute http(s) URL, got {self.base_url!r}")
        self.allowed_domains = [host]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> ProductionSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, ProductionSpider)
        if is_loopback(spider.base_url) and not crawler.settings.frozen:
            # A replay of the site on loopback (services.replay_site): politeness protects
            # the real site, not our own server, so its delays would only slow tests and
            # demos down. Command-line settings (-s) still win.
            for name, value in (("DOWNLOAD_DELAY", 0.0), ("AUTOTHROTTLE_ENABLED", False)):
                crawler.settings.set(name, value, priority="spider")
            spider.logger.info("%s is a loopback replay: no download delay", spider.base_url)
        return spider

    @property
    def max_pages(self) -> int:
        """Listing pages followed per start entry (the profile's ``MAX_LISTING_PAGES``)."""
        return int(self.settings.getint("MAX_LISTING_PAGES", 10))

    def count(self, key: str, n: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"{self.name}/{key}", n)

    def fail(self, response: Response, page: str, reason: str) -> None:
        """A page the spider could not read: logged with its URL and counted."""
        self.logger.error("%s (%s page): %s", response.url, page, reason)
        self.count(f"{page}_unparsed")

    def note_missing(self, url: str, fields: dict[str, Any], names: Iterable[str]) -> None:
        missing = [name for name in names if fields.get(name) in (None, "", [])]
        if missing:
            self.logger.warning("%s: missing %s", url, ", ".join(missing))
            self.count("missing_fields")

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        self.logger.error("request failed: %s (%s)", request.url, failure.getErrorMessage())
        self.count("request_failed")
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"errors/request_failed/{failure.type.__name__}")


def is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- JSON in scripts ---------------------------------------------------------------------------


def script_json(response: TextResponse, xpath: str) -> Any:
    """The JSON of the first script matching ``xpath``; None when absent or unreadable."""
    for raw in response.xpath(xpath).getall():
        try:
            return json.loads(raw.strip().removeprefix("<!--").removesuffix("-->"), strict=False)
        except ValueError:
            continue
    return None


def jsonld_nodes(response: TextResponse) -> list[dict[str, Any]]:
    """Every JSON-LD node of the page, ``@graph`` members included; broken blocks skipped."""
    nodes: list[dict[str, Any]] = []
    for raw in response.xpath('//script[contains(@type, "ld+json")]/text()').getall():
        try:
            data = json.loads(raw.strip().removeprefix("<!--").removesuffix("-->"), strict=False)
        except ValueError:
            continue  # one broken block must not hide the others
        nodes.extend(_walk_jsonld(data))
    return nodes


def _walk_jsonld(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, list):
        for entry in data:
            yield from _walk_jsonld(entry)
    elif isinstance(data, dict):
        yield data
        if "@graph" in data:
            yield from _walk_jsonld(data["@graph"])


def has_type(node: dict[str, Any], *wanted: str) -> bool:
    types = node.get("@type")
    names: Iterable[Any] = types if isinstance(types, list) else [types]
    return any(
        isinstance(name, str) and any(name == w or name.endswith(f"schema.org/{w}") for w in wanted)
        for name in names
    )


def schema_name(value: Any) -> str | None:
    """``https://schema.org/InStock`` -> ``InStock``."""
    value = first(value)
    if not isinstance(value, str) or not value.strip():
        return None
    for prefix in _SCHEMA_PREFIXES:
        value = value.removeprefix(prefix)
    return value.strip()


def find_key(data: Any, key: str, *, limit: int = 50_000) -> Iterator[Any]:
    """Every value stored under ``key`` anywhere in a JSON document (depth first)."""
    stack = [data]
    seen = 0
    while stack and seen < limit:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if key in node:
                yield node[key]
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


# -- microdata ---------------------------------------------------------------------------------


def microdata_items(response: TextResponse, itemtype: str) -> list[dict[str, Any]]:
    """Top-level or nested microdata items of ``itemtype``, as JSON-LD-like dicts.

    Each property keeps every value (a list), in document order, since a product has
    many ``review`` properties.
    """
    root = response.selector.root
    if not isinstance(root, etree._Element):
        return []
    items = []
    for element in root.iter():
        if not isinstance(element.tag, str) or "itemscope" not in element.attrib:
            continue
        if has_type({"@type": (element.get("itemtype") or "").split()}, itemtype):
            items.append(microdata_item(element))
    return items


def microdata_item(element: etree._Element) -> dict[str, Any]:
    item: dict[str, Any] = {"@type": element.get("itemtype", "")}

    def walk(node: etree._Element) -> None:
        for child in node:
            if not isinstance(child.tag, str):
                continue
            scoped = "itemscope" in child.attrib
            if prop := child.get("itemprop"):
                value = microdata_item(child) if scoped else microdata_value(child)
                for name in prop.split():
                    item.setdefault(name, []).append(value)
            if not scoped:  # a nested item's properties are its own
                walk(child)

    walk(element)
    return item


def microdata_value(element: etree._Element) -> str:
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if tag == "meta":
        return element.get("content", "")
    if tag in ("a", "link", "area"):
        return element.get("href", "")
    if tag in ("img", "audio", "video", "source", "iframe", "embed"):
        return element.get("src", "")
    if tag == "time" and element.get("datetime"):
        return element.get("datetime", "")
    if tag in ("data", "meter") and element.get("value") is not None:
        return element.get("value", "")
    if element.get("content") is not None:
        return element.get("content", "")
    return " ".join("".join(element.itertext()).split())


# -- values ------------------------------------------------------------------------------------


def first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def text(value: Any) -> str | None:
    """Whitespace-collapsed text; None for empty values."""
    value = first(value)
    if value is None or isinstance(value, dict | list):
        return None
    collapsed = " ".join(str(value).split())
    return collapsed or None


def long_text(value: Any) -> str | None:
    """Multi-line text with its paragraphs kept (reviews, descriptions)."""
    value = first(value)
    if not isinstance(value, str):
        return None
    lines = [" ".join(line.split()) for line in value.replace("\r", "").split("\n")]
    joined = "\n".join(lines).strip()
    return re.sub(r"\n{3,}", "\n\n", joined) or None


def css_text(response: TextResponse | Any, query: str) -> str | None:
    """The text of every node ``query`` matches, joined and collapsed."""
    return text(" ".join(response.css(query).getall()))


def to_float(value: Any) -> float | None:
    """A number as sites print it: ``1.234,50``, ``3,498``, ``4.5/5``, ``€ 1 200``."""
    value = first(value)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    match = _NUMBER.search(str(value).replace("\u00a0", " "))
    if not match:
        return None
    number = re.sub(r"[\s\u202f']", "", match.group(0)).rstrip(".,")
    if "," in number and "." in number:
        # The later separator is the decimal one: 1.234,50 or 1,234.50.
        if number.rfind(",") > number.rfind("."):
            number = number.replace(".", "").replace(",", ".")
        else:
            number = number.replace(",", "")
    elif "," in number:
        head, _, tail = number.rpartition(",")
        # 3,498 / 1,200,000 are thousands; 4,5 / 12,50 are decimals.
        if len(tail) == 3 and number.count(",") >= 1 and head.replace(",", "").isdigit():
            number = number.replace(",", "")
        else:
            number = head.replace(",", "") + "." + tail
    elif number.count(".") > 1 or (
        "." in number and len(number.rpartition(".")[2]) == 3 and number[0] != "0"
    ):
        number = number.replace(".", "")  # 1.200.000 / 450.000 (European thousands)
    try:
        return float(number)
    except ValueError:
        return None


def to_int(value: Any) -> int | None:
    number = to_float(value)
    return None if number is None else int(number)


def absolute(response: Response, url: Any) -> str | None:
    url = text(url)
    if not url:
        return None
    if url.startswith("//"):
        url = "https:" + url
    return response.urljoin(url)


def unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(v for v in values if v not in (None, "")))
