"""CSS queries answered from a streamed pass (crawlers.limits.streamed) exactly as from the page's
tree, kept within their limit; a page's links read within the cap, counted exactly with
what LinkCap refuses (crawlers.limits.links)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, TextResponse, XmlResponse
from scrapy.utils.test import get_crawler

from crawlers.limits.budget import LinkCap
from crawlers.limits.links import Links, read_page
from crawlers.limits.streamed import Query, select

PAGE = b"""<!doctype html><html><head><title>t</title></head><body>
<p>text<a class="product-link x" href="/p/1">1</a><!-- c --><a href='/p/2' class=product-link>2</a>
<nav class="pagination"><ul><li><a href="?page=2">2</a><li><a rel="next" href="?page=2">n</a></ul>
</nav><a rel=next href="?page=3">n3</a>
<li class="product-card" data-sku="S1"><a class="product-link" href="/p/1">x</a>
<span class="product-name">Na<b>me</b> &amp; co</span></li>
<div class="product-card"><li class="product-card" data-sku="S2"><p>un<p>closed</li></div>
<table><tr><td><a href="/p/3" CLASS="product-link">3</a></table>
<a href="/p/1" class="product-link">dup</a><a class="product-link">no href</a>
<a class="product-link" href="">empty</a><a class="\tx\nproduct-link " href="/p/4">4</a>
<section id="s"><div class="product-card" lang="en-GB"><a href="/p/5">5</a></div></section>
</body></html>"""

QUERIES = [
    "a.product-link::attr(href)",
    'a[href*="/p/"]::attr(href)',
    'nav.pagination a::attr(href), a[rel="next"]::attr(href)',
    "li.product-card",
    ".product-card",  # nested matches: in document order
    "a:not(.x)::attr(href)",
    "ul > li > a::attr(href)",
    "body a::attr(href)",
    "*::attr(class)",
    "[href^='?']::attr(href)",
    "[href$='1']::attr(href)",
    "[class~=x]::attr(href)",
    "[lang|=en]",
    "#s .product-card a::attr(href)",
    "#nope",
    # Outside the streamed subset: answered from the tree.
    ".product-name ::text",
    "li:first-child a::attr(href)",
    "nav + a::attr(href)",
]


def _response(body: bytes = PAGE) -> HtmlResponse:
    return HtmlResponse("https://shop.example/c", body=body, encoding="utf-8")


def _values(values: list[Any]) -> list[str | None]:
    return [value if isinstance(value, str) else value.get() for value in values]


@pytest.mark.parametrize("css", QUERIES)
def test_a_query_finds_what_the_page_s_tree_finds(css: str) -> None:
    response = _response()
    found = select(response, {"q": Query(css)})["q"]
    assert _values(found.values) == response.css(css).getall()
    assert found.dropped == 0


def test_every_query_of_one_pass_finds_its_own() -> None:
    response = _response()
    found = select(response, {css: Query(css) for css in QUERIES})
    assert {css: _values(f.values) for css, f in found.items()} == {
        css: response.css(css).getall() for css in QUERIES
    }


def test_an_element_match_is_queried_as_in_the_page() -> None:
    cards = select(_response(), {"cards": Query("li.product-card")})["cards"].values
    assert [card.css("::attr(data-sku)").get() for card in cards] == ["S1", "S2"]
    assert cards[0].css(".product-name ::text").getall() == ["Na", "me", " & co"]
    assert cards[0].css("a.product-link::attr(href)").get() == "/p/1"


def test_names_xml_refuses_are_left_out_of_an_element_s_subtree() -> None:
    vue = b'<div class="card" @click="go()" :class="{on: x}" data-sku="S3"><a href="/p/6">6</a>'
    (card,) = select(_response(vue), {"q": Query(".card")})["q"].values
    assert card.get() == '<div class="card" data-sku="S3"><a href="/p/6">6</a></div>'
    assert card.css("a::attr(href)").get() == "/p/6"


def test_past_its_limit_a_query_counts_distinct_values_only() -> None:
    found = select(_response(), {"q": Query("a.product-link::attr(href)", keep=2, unique=True)})
    # Kept /p/1 and /p/2; past the limit /p/3, "" and /p/4 (the repeats of /p/1 kept).
    assert found["q"].values == ["/p/1", "/p/2"] and found["q"].dropped == 3
    elements = select(_response(), {"q": Query(".product-card", keep=1)})["q"]
    assert len(elements.values) == 1 and elements.dropped == 3


def test_a_page_that_is_not_html_is_queried_on_its_tree() -> None:
    xml = XmlResponse("https://shop.example/s.xml", body=b"<r><a href='/x'/><a href='/y'/></r>")
    assert select(xml, {"q": Query("a::attr(href)", keep=1)})["q"].values == ["/x"]
    empty = select(_response(b""), {"q": Query("a::attr(href)")})["q"]
    assert empty.values == [] and empty.dropped == 0
    text = TextResponse("https://shop.example/t", body=b"<a href='/z'>", encoding="utf-8")
    assert select(text, {"q": Query("a::attr(href)")})["q"].values == ["/z"]


def test_a_page_s_links_past_the_cap_are_counted_with_what_linkcap_refuses() -> None:
    crawler = get_crawler(Spider, {"CRAWL_MAX_LINKS_PER_PAGE": 3})
    response = _response()
    page = read_page(
        response,
        crawler,
        {
            "products": Links("a.product-link::attr(href)"),
            "pages": Links("a.nothing::attr(href)", '[href^="?"]::attr(href)'),
        },
    )
    assert page.links == {"products": ["/p/1", "/p/2", "/p/3"], "pages": ["?page=2", "?page=3"]}
    assert page.fell_back == ["pages"]
    # 5 requests reach LinkCap: 3 pass, 2 are refused; with the 2 products left unread
    # ("" and /p/4), 4 links of the page are not followed.
    requests = [Request(response.urljoin(u)) for u in page.links["products"] + page.links["pages"]]
    cap = LinkCap.from_crawler(crawler)
    assert len(list(cap.process_spider_output(response, requests))) == 3
    assert crawler.stats is not None
    assert crawler.stats.get_value("links/capped") == 4
    assert crawler.stats.get_value("links/capped_pages") == 1
