"""A page's links read within the link cap, in one streamed pass (``crawlers.limits.streamed``).

A spider reads the links it follows with ``read_page``: at most
``CRAWL_MAX_LINKS_PER_PAGE`` distinct URLs per query are kept, the rest only counted
(``links/capped``, with what ``crawlers.limits.budget.LinkCap`` refuses), so a page of 100,000
links costs the cap, not the page: neither its lxml tree nor a ``Selector`` per link is
built. Elements the callback needs besides (listing cards) come in the same pass, kept
to the cap too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scrapy.crawler import Crawler
from scrapy.http import TextResponse
from scrapy.selector import Selector

from crawlers.limits.budget import links_unread
from crawlers.limits.streamed import Query, select


@dataclass(frozen=True)
class Links:
    """Where a page shows links of one kind: a CSS query ending in ``::attr(href)``, and
    the query tried when it finds none (the layout changed)."""

    css: str
    fallback: str | None = None


@dataclass
class Page:
    """What ``read_page`` read: the links of each kind (distinct, in document order), the
    kinds found by their fallback query, and the elements of each element query."""

    links: dict[str, list[str]] = field(default_factory=dict)
    fell_back: list[str] = field(default_factory=list)
    elements: dict[str, list[Selector]] = field(default_factory=dict)


def link_cap(crawler: Crawler) -> int | None:
    """``CRAWL_MAX_LINKS_PER_PAGE`` (None: 0, no cap)."""
    return crawler.settings.getint("CRAWL_MAX_LINKS_PER_PAGE") or None


def read_page(
    response: TextResponse,
    crawler: Crawler,
    links: Mapping[str, Links],
    elements: Mapping[str, str] | None = None,
) -> Page:
    """The links of each kind of ``links`` on ``response``, and the matches of each CSS
    query of ``elements``; the links past the cap are counted, not read."""
    cap = link_cap(crawler)
    queries: dict[str, Query] = {}
    for kind, spec in links.items():
        queries[f"link:{kind}"] = Query(spec.css, keep=cap, unique=True)
        if spec.fallback:
            queries[f"fallback:{kind}"] = Query(spec.fallback, keep=cap, unique=True)
    for kind, css in (elements or {}).items():
        queries[f"element:{kind}"] = Query(css, keep=cap)
    found = select(response, queries)
    page = Page()
    for kind, spec in links.items():
        chosen = found[f"link:{kind}"]
        if not chosen.values and spec.fallback and found[f"fallback:{kind}"].values:
            chosen = found[f"fallback:{kind}"]
            page.fell_back.append(kind)
        page.links[kind] = chosen.values
        links_unread(response, chosen.dropped)
    for kind in elements or {}:
        page.elements[kind] = found[f"element:{kind}"].values
    return page
