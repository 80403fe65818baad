"""A sampled page of a new site and what the scaffold reads off it first: its parsed HTML,
its structured data, its same-host links, and where it stands in document order.
Pure: a (URL, status, HTML) in, views of it out."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from scrapy.http import HtmlResponse

from crawlers.spiders.common import structured_nodes
from crawlers.spiders.rules import url_target

__all__ = ["PAGE_PARAMS", "Link", "Page", "css_of", "page_number", "usable_classes"]

# Query parameters that number the pages of a list.
PAGE_PARAMS = ("page", "p", "pg", "pagina", "seite", "pagenum", "start", "offset")
_CLASS = re.compile(r"-?[A-Za-z_][\w-]*")


@dataclass(frozen=True)
class Link:
    """A same-host link: its absolute URL (no fragment), ``rel``, text and element."""

    url: str
    rel: str = ""
    text: str = ""
    element: Any = None  # the parsel Selector of the <a>

    @property
    def label(self) -> str:
        """What the link says: its text, else its aria-label or title."""
        if self.text:
            return self.text
        if self.element is None:
            return ""
        attrib = self.element.attrib
        return " ".join((attrib.get("aria-label") or attrib.get("title") or "").split())


@dataclass(frozen=True)
class Page:
    """A sampled page: its final URL, status and HTML, and how the sample reached it."""

    url: str
    status: int = 200
    html: str = ""
    source: str = "crawl"  # "start", "crawl" (a link) or "sitemap"
    blocked: str | None = None  # why the platform's block detection refused it

    @property
    def usable(self) -> bool:
        return bool(self.html) and not self.blocked and self.status < 400

    @cached_property
    def response(self) -> HtmlResponse:
        return HtmlResponse(self.url, status=self.status, body=self.html, encoding="utf-8")

    @cached_property
    def nodes(self) -> dict[str, list[dict[str, Any]]]:
        """Structured-data nodes by syntax (``json-ld``, ``microdata``)."""
        if not self.html:
            return {"json-ld": [], "microdata": []}
        return {
            syntax: structured_nodes(self.response, syntax) for syntax in ("json-ld", "microdata")
        }

    @cached_property
    def types(self) -> list[str]:
        """Every schema.org type on the page, in order."""
        found: list[str] = []
        for nodes in self.nodes.values():
            for node in nodes:
                kinds = node.get("@type")
                for kind in kinds if isinstance(kinds, list) else [kinds]:
                    if isinstance(kind, str):
                        found.append(kind.rsplit("/", 1)[-1])
        return list(dict.fromkeys(found))

    @cached_property
    def links(self) -> list[Link]:
        """The page's same-host ``<a href>`` links (nofollow ones left out), absolute."""
        if not self.html:
            return []
        host = urlsplit(self.url).netloc
        links = []
        for anchor in self.response.css("a[href]"):
            href = (anchor.attrib.get("href") or "").strip()
            rel = (anchor.attrib.get("rel") or "").lower()
            if not href or href.startswith(("#", "javascript:", "mailto:", "tel:")):
                continue
            if "nofollow" in rel.split():
                continue
            target = self.response.urljoin(href).split("#", 1)[0]  # <base href> too
            parts = urlsplit(target)
            if parts.netloc != host or parts.scheme not in ("http", "https"):
                continue
            words = " ".join(" ".join(anchor.xpath(".//text()").getall()).split())
            links.append(Link(target, rel, words, anchor))
        return links

    @property
    def path(self) -> str:
        return url_target(self.url)

    @cached_property
    def order(self) -> dict[Any, int]:
        """Each element of the page -> its position in document order."""
        return {element: n for n, element in enumerate(self.response.selector.root.iter())}

    @cached_property
    def lang(self) -> str | None:
        lang = (
            self.response.xpath("/html/@lang").get()
            or self.response.xpath(
                "//meta[@http-equiv='content-language' or @http-equiv='Content-Language']/@content"
            ).get()
        )
        return lang.strip() if lang and lang.strip() else None


def page_number(url: str) -> int | None:
    """The page number a URL asks for: a page parameter (``?page=3``, ``?start=40``) or a
    path segment (``/page/3/``, ``page-3.html``)."""
    for name, value in parse_qsl(urlsplit(url).query):
        if name.lower() in PAGE_PARAMS and value.isdigit():
            return int(value)
    path = urlsplit(url).path
    found = re.search(r"(?:^|/)(?:page|pagina|seite|p)[/-]?(\d+)(?:\.html?)?/?$", path, re.I)
    return int(found.group(1)) if found else None


def usable_classes(classes: Iterable[str]) -> list[str]:
    """Classes CSS can name as they are (``md:flex`` and ``w-1/2`` cannot)."""
    return [c for c in classes if _CLASS.fullmatch(c)]


def css_of(tag: str, classes: Iterable[str]) -> str:
    """``tag.class1.class2`` for classes CSS can name as they are."""
    return tag + "".join(f".{c}" for c in usable_classes(classes))
