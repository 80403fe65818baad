"""What the production-site spiders share: a spider base and pure extraction helpers.

``ProductionSpider`` adds to ``SiteSpider`` what every production site needs: offsite
filtering on the base URL's host, a page limit for pagination (``MAX_LISTING_PAGES``
in the profile's ``[settings]``), and counted, logged failures (``<site>/<what>`` stats),
so nothing is dropped silently.

The helpers read what pages embed through the kept libraries: extruct for JSON-LD and
schema.org microdata (``structured_nodes``), price-parser for numbers and prices as sites
print them ("1.234,50 €", "3,498", "4.5/5", "CA$6,250"), plus JSON inside ``<script>``
tags. Every price goes through ``money``: its currency sign is read in the page's market
from babel's CLDR data and price-parser's table (``crawlers.spiders.currency``).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, Literal, NamedTuple
from urllib.parse import urlparse

import extruct
from lxml import etree
from price_parser import Price
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawlers import defaults
from crawlers.limits.bounded import loads
from crawlers.spiders.base import SiteSpider
from crawlers.spiders.currency import NO_MARKET, Market, currency_code, printed_sign, resolve

logger = logging.getLogger(__name__)

_SCHEMA_PREFIXES = ("https://schema.org/", "http://schema.org/")
# The blocks extruct reads as JSON-LD (its own selection), handed to it one at a time.
_JSONLD_SCRIPTS = etree.XPath('//script[@type="application/ld+json"]')
_SKIPPED_SHOWN = 3  # unreadable blocks whose reasons the one warning line names


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
            # A replay of the site on loopback (harness.replay_site): politeness protects
            # the real site, not our own server, so its delays (and its sessions' rate
            # budget) would only slow tests and demos down. Command-line settings (-s)
            # still win.
            for name, value in (
                ("DOWNLOAD_DELAY", 0.0),
                ("AUTOTHROTTLE_ENABLED", False),
                ("SESSION_MAX_RATE", 0.0),
            ):
                crawler.settings.set(name, value, priority="spider")
            spider.logger.info("%s is a loopback replay: no download delay", spider.base_url)
        return spider

    @property
    def max_pages(self) -> int:
        """Listing pages followed per start entry (the profile's ``MAX_LISTING_PAGES``)."""
        # The add-on's default, also for a crawler built without the add-on (unit tests).
        return int(self.settings.getint("MAX_LISTING_PAGES", defaults.MAX_LISTING_PAGES))

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

    def failure_reason(self, failure: Failure) -> str:
        return failure_reason(failure, self.settings.getint("DOWNLOAD_MAXSIZE"))

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy for errbacks
        self.logger.error("request failed: %s (%s)", request.url, self.failure_reason(failure))
        self.count("request_failed")
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"errors/request_failed/{failure.type.__name__}")


def failure_reason(failure: Failure, maxsize: int = 0) -> str:
    """A failed request's reason for its one log line: the error's message (an HTTP error's
    status first: lines of one status are summed up as one, crawlers.limits.log_repeats),
    or, for a download cancelled without one (a streamed body past ``DOWNLOAD_MAXSIZE``,
    which Scrapy's HTTP/1.1 handler cancels with an empty error), what cancelled it."""
    message = failure.getErrorMessage()
    if failure.check(HttpError):
        return f"HTTP {failure.value.response.status}: {message}"
    if message:
        return message
    name = failure.type.__name__ if failure.type else "error"
    if "Cancel" in name:
        request = getattr(failure, "request", None)
        limit = (request.meta.get("download_maxsize") if request is not None else None) or maxsize
        if limit:
            return f"{name}: download cancelled, the body passed DOWNLOAD_MAXSIZE={limit} bytes"
        return f"{name}: download cancelled"
    return name


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
            return _loads(raw)
        except ValueError:
            continue
    return None


def _loads(raw: str) -> Any:
    # Old pages wrap script JSON in an HTML comment to hide it from pre-HTML4 browsers.
    return loads(raw.strip().removeprefix("<!--").removesuffix("-->"), strict=False)


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


# -- structured data (extruct) -----------------------------------------------------------------


def structured_nodes(
    response: TextResponse, *syntaxes: Literal["json-ld", "microdata"], html_nodes: bool = False
) -> list[dict[str, Any]]:
    """The page's schema.org nodes in the given extruct syntaxes.

    Uniform dicts (``@type``, properties; a repeated property is a list), syntaxes in the
    order given, each in document order. JSON-LD: every top-level node and ``@graph``
    member. Microdata: every item, nested ones included (a product's reviews), each with
    its element under ``htmlNode`` when ``html_nodes``.

    extruct drops a whole syntax when one part fails, so JSON-LD is handed to it one
    block at a time: a broken block is skipped (logged with the URL, and counted in the
    message), the others are read.
    """
    root = response.selector.root
    if not isinstance(root, etree._Element):
        return []
    nodes: list[dict[str, Any]] = []
    skipped = []
    for syntax in syntaxes:
        documents = _JSONLD_SCRIPTS(root) if syntax == "json-ld" else [root]
        for document in documents:
            try:
                found = extruct.extract(
                    document,
                    base_url=response.url,
                    syntaxes=[syntax],
                    uniform=True,
                    return_html_node=html_nodes,
                )[syntax]
            except Exception as exc:  # whatever its parsers raise, as extruct's errors="log"
                found = _commented_jsonld(document) if syntax == "json-ld" else None
                if found is None:
                    skipped.append(f"{syntax}: {type(exc).__name__}: {exc}")
                    continue
            if syntax == "json-ld":
                found = without_lone_surrogates(found)
            walk = _walk_jsonld if syntax == "json-ld" else _walk_microdata
            nodes.extend(node for entry in found for node in walk(entry))
    if skipped:
        # One bounded line however many blocks are broken: the first reasons, the count.
        shown = "; ".join(reason[:200] for reason in skipped[:_SKIPPED_SHOWN])
        more = len(skipped) - _SKIPPED_SHOWN
        logger.warning(
            "%s: skipped %d unreadable structured data block(s): %s%s",
            response.url,
            len(skipped),
            shown,
            f"; and {more} more" if more > 0 else "",
        )
    return nodes


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(data: Any) -> Any:
    """``data`` (decoded JSON) with every lone surrogate replaced by U+FFFD. JSON's
    ``"\\ud800"`` escape decodes to a code point no UTF-8 encoder takes (the item would
    fail at its store or feed), where a browser's JSON.parse and TextEncoder read U+FFFD:
    one bad value, not the whole block. Pairs were joined by the decoder already."""
    if isinstance(data, str):
        return _LONE_SURROGATE.sub("\ufffd", data)
    if isinstance(data, list):
        return [without_lone_surrogates(value) for value in data]
    if isinstance(data, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in data.items()}
    return data


def _commented_jsonld(script: etree._Element) -> list[Any] | None:
    """A JSON-LD block wrapped in ``<!-- -->`` over several lines, which extruct cannot read."""
    raw = script.xpath("string()")
    if not raw.strip():
        return []  # an empty block: nothing to read, nothing lost
    try:
        data = _loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, list) else [data]


def _walk_jsonld(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, list):
        for entry in data:
            yield from _walk_jsonld(entry)
    elif isinstance(data, dict):
        yield data
        if "@graph" in data:
            yield from _walk_jsonld(data["@graph"])


def _walk_microdata(item: Any) -> Iterator[dict[str, Any]]:
    if isinstance(item, list):
        for entry in item:
            yield from _walk_microdata(entry)
    elif isinstance(item, dict) and "@type" in item:
        yield item
        for name, value in item.items():
            if name != "htmlNode":
                yield from _walk_microdata(value)


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


# -- values ------------------------------------------------------------------------------------


def first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def json_object(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is a JSON object, else an empty one."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


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
    """A number as data holds it or a site prints it: ``7``, ``1.234,50``, ``3,498``,
    ``4.5/5``, ``€ 1 200``. price-parser reads the printed ones (separators of any locale,
    currency signs and units around the number); amounts have no sign there, so signed
    values such as coordinates go through ``coordinate``.
    """
    value = first(value)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return Price.fromstring(str(value)).amount_float


def to_int(value: Any) -> int | None:
    number = to_float(value)
    return None if number is None else int(number)


def coordinate(value: Any) -> float | None:
    """A latitude or longitude as data states it (``-3.6851``): signed, decimals as written."""
    value = first(value)
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class Money(NamedTuple):
    amount: float | None
    currency: str | None  # ISO 4217


def money(value: Any, currency: Any = None, where: Market = NO_MARKET) -> Money:
    """An amount and its currency code, wherever a price is read.

    The currency: ``currency`` as structured data states it (an ISO code; a sign such as
    ``"$"`` is read like a printed one), else the sign printed with the amount read in
    the page's market ``where`` (``Rp`` -> IDR anywhere, ``$`` -> CAD on a Canadian
    page, ``kr`` -> SEK on a Swedish one; ``crawlers.spiders.currency``), else, for a bare
    amount (``1234``, no sign at all), the currency the market pays in. A sign that
    stays ambiguous (``$`` on a French page) gives no currency: never a guess.
    """
    printed: str | None = None
    if isinstance(value, str):
        amount = Price.fromstring(value).amount_float
        printed = value
    else:
        amount = to_float(value)
    stated = text(currency)
    code = (currency_code(stated) or resolve(stated, where)) if stated else None
    if code is None and amount is not None:
        sign = printed_sign(printed)
        if sign:
            code = resolve(sign, where)
        elif not stated:
            code = where.currency
    return Money(amount, code)


def absolute(response: Response, url: Any) -> str | None:
    url = text(url)
    if not url:
        return None
    if url.startswith("//"):
        url = "https:" + url
    return response.urljoin(url)


def unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(v for v in values if v not in (None, "")))
