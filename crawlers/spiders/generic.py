"""The spider of a profile-driven site: a profile with ``[pages.<name>]`` tables and no
spider module of its own is crawled by a class made here from the profile alone.

``generic_spider(profile)`` builds ``<Site>Spider`` (a ``ProductionSpider``: offsite
filter on the base URL, loopback replays without delays) with

* ``parse``: the start URLs, each handed to the page type its URL matches (``url_patterns``)
  or to the profile's ``start_page``;
* ``parse_sitemap``: sitemap indexes, sitemaps (gzipped too) and robots.txt files listed
  in the profile's ``sitemaps``; each page URL goes to the page type its URL matches;
* ``parse_<page type>`` per page type: the item its ``fields`` read (the profile's
  ``item_type``), then the links its ``follow`` rules find, each to its page type.

The callbacks are real methods, so the frontier's queued requests, the structure gate
(``callback = "parse_<name>"``) and ``[recrawl] item_callbacks`` name them like any
spider's. Nothing is dropped silently: a page without its item, a value that does not
convert, a link or sitemap URL no page type claims are logged and counted
(``<site>/<what>`` stats).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from scrapy import Request
from scrapy.http import Response, TextResponse
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from core.items_schema import UnknownItemType
from crawlers.items import schema_by_type
from crawlers.profiles import ProfileError, SiteProfile, generic_callback
from crawlers.spiders.common import ProductionSpider
from crawlers.spiders.rules import (
    Extraction,
    Reading,
    field_kinds,
    follow_links,
    page_type_for,
    read_items,
)

__all__ = ["GenericSpider", "generic_spider", "read_sitemap"]

# Fields the platform sets itself: a profile's rules never fill them.
_PLATFORM_FIELDS = ("job_id", "incomplete")
# A gzipped sitemap larger than this unpacked is refused (a decompression bomb).
_SITEMAP_MAX_BYTES = 50 * 1024 * 1024


class GenericSpider(ProductionSpider):
    """Base of the classes ``generic_spider`` makes; ``name`` and ``_profile`` are set
    there, with one ``parse_<page type>`` method per page type."""

    # -- start and sitemaps --------------------------------------------------------------
    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        """A start URL: parsed as the page type its URL matches, else ``start_page``."""
        page = page_type_for(response.url, self.profile.pages, self.profile.start_page)
        if page is None:
            self.fail(response, "start", "no page type's url_patterns match it")
            return
        yield from self._parse_page(response, page)

    def parse_sitemap(self, response: Response) -> Iterator[Request]:
        """A sitemap index (its sitemaps), a sitemap (its pages, by page type) or a
        robots.txt (its ``Sitemap:`` lines)."""
        if response.url.endswith("/robots.txt"):
            for url in sitemap_urls_from_robots(response.body, base_url=response.url):
                yield Request(url, callback=self.parse_sitemap, errback=self.on_error)
            return
        try:
            sitemap = read_sitemap(response.body)
        except ValueError as exc:
            self.fail(response, "sitemap", str(exc))
            return
        for entry in sitemap:
            url = response.urljoin(entry["loc"])
            if sitemap.type == "sitemapindex":
                yield Request(url, callback=self.parse_sitemap, errback=self.on_error)
                continue
            page = page_type_for(url, self.profile.pages)
            if page is None:
                self.logger.debug("%s: no page type for sitemap URL %s", response.url, url)
                self.count("sitemap_unrouted")
                continue
            yield Request(
                url, callback=getattr(self, generic_callback(page)), errback=self.on_error
            )

    # -- page types ------------------------------------------------------------------------
    def _parse_page(self, response: Response, name: str) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            self.fail(response, name, "not a text response")
            return
        page = self.profile.pages[name]
        if page.fields:
            yield from self._items(response, name)
        links, unrouted = follow_links(response, name, self.profile.pages)
        if unrouted:
            self.logger.debug("%s: %d links match no page type", response.url, len(unrouted))
            self.count("links_unrouted", len(unrouted))
        for url, target in links:
            yield response.follow(
                url, callback=getattr(self, generic_callback(target)), errback=self.on_error
            )

    def _items(self, response: TextResponse, name: str) -> Iterator[Any]:
        page = self.profile.pages[name]
        reading = Reading.of(self.profile.market)
        extractions = read_items(response, page, self.profile.item_type, reading)
        if page.items is not None and not extractions:
            # A list page whose containers are gone: a block page, or a changed layout.
            self.fail(response, name, f"no item container ({page.items}) on the page")
            return
        for extraction in extractions:
            item = self._item(response, name, extraction)
            if item is not None:
                yield item

    def _item(self, response: TextResponse, name: str, extraction: Extraction) -> Any | None:
        if not extraction.has_node and not extraction.from_page:
            # A block page answered with 200, or markup the rules no longer match.
            self.fail(response, name, "no item data on the page")
            return None
        # Values found but refused: counted under their field and source, said in one
        # line (crawlers.spiders.fallbacks), and in the site's own count.
        if extraction.problems:
            self.count("unconverted", len(extraction.problems))
        if extraction.picked is not None:
            self.picked(response.url, extraction.picked)
        missing = [f for f in self.profile.pages[name].fields if extraction.fields[f] is None]
        if missing:
            self.logger.info("%s: nothing found for %s", response.url, ", ".join(missing))
            self.count("missing_fields")
        self.count("items")
        fields = {k: v for k, v in extraction.fields.items() if k not in _PLATFORM_FIELDS}
        return schema_by_type(self.profile.item_type).cls(**fields)


def read_sitemap(body: bytes) -> Sitemap:
    """A sitemap or sitemap index, as served (gzipped too, or after a UTF-8 byte order
    mark some CMSs write); ValueError saying why ``body`` is none."""
    if body[:2] == b"\x1f\x8b":  # served as a .gz file rather than Content-Encoding
        try:
            body = gunzip(body, max_size=_SITEMAP_MAX_BYTES)  # a decompression bomb: refused
        except (OSError, EOFError, ValueError):
            raise ValueError("not a sitemap (XML or gzipped XML)") from None
    if body.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()[:1] != b"<":
        raise ValueError("not a sitemap (XML or gzipped XML)")
    try:
        sitemap = Sitemap(body)
    except Exception as exc:  # lxml's errors on broken XML
        raise ValueError(f"unreadable sitemap ({exc})") from None
    if sitemap.type not in ("sitemapindex", "urlset"):
        raise ValueError(f"not a sitemap (an XML <{sitemap.type}> document)")
    return sitemap


def generic_spider(profile: SiteProfile) -> type[GenericSpider]:
    """The spider class of ``profile``'s site (its ``[pages]``, checked against its item
    type). A ``ProfileError`` names what does not fit."""
    source = f"{profile.site} profile"
    try:
        kinds = field_kinds(profile.item_type)
    except UnknownItemType:
        raise ProfileError(
            f"{source}: item_type: {profile.item_type!r} is not an item type of crawlers/items.py"
        ) from None
    for name, page in profile.pages.items():
        unknown = sorted(set(page.fields) - set(kinds) | set(page.fields) & set(_PLATFORM_FIELDS))
        if unknown:
            fields = ", ".join(f for f in kinds if f not in _PLATFORM_FIELDS)
            raise ProfileError(
                f"{source}: pages.{name}.fields: {', '.join(unknown)} not a field of "
                f"{profile.item_type} (its fields: {fields})"
            )
    if profile.recrawl.card_fields:
        raise ProfileError(
            f"{source}: recrawl.card_fields: listing cards need a spider module that reads "
            f"them (crawlers.recrawl.cards); a profile-only site uses conditional requests only"
        )
    attrs: dict[str, Any] = {
        "name": profile.site,
        "_profile": profile,
        "__module__": __name__,
        "__doc__": f"The profile-driven spider of {profile.site} (crawlers/profiles).",
    }
    for page_name in profile.pages:
        attrs[generic_callback(page_name)] = _page_callback(page_name)
    class_name = "".join(part.title() for part in profile.site.split("_")) + "Spider"
    return type(class_name, (GenericSpider,), attrs)


def _page_callback(page: str) -> Callable[[GenericSpider, Response], Iterator[Any]]:
    def callback(self: GenericSpider, response: Response) -> Iterator[Any]:
        return self._parse_page(response, page)

    callback.__name__ = callback.__qualname__ = generic_callback(page)
    callback.__doc__ = f"A {page!r} page: its item and the links it follows."
    return callback
