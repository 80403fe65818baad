"""Page classification and URL pattern generalisation, on small HTML strings."""

from __future__ import annotations

import json
import re

import pytest

from crawlers.scaffold.classify import Page, classify, generalise, item_type_of, pagination_links
from tests.crawlers.scaffold.support import BASE, listing_html, product_html, shop_pages


def jsonld(node: dict[str, object]) -> str:
    return (
        f"<html><head><script type='application/ld+json'>{json.dumps(node)}</script></head></html>"
    )


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"@type": "Product", "name": "x"}, ("product", "Product")),
        ({"@type": "JobPosting", "title": "Cook"}, ("job_posting", "JobPosting")),
        ({"@type": "LodgingBusiness", "name": "Inn"}, ("hotel", "LodgingBusiness")),
        ({"@type": "RealEstateListing", "name": "Flat"}, ("property_listing", "RealEstateListing")),
        (
            {"@type": "Offer", "itemOffered": {"@type": "Apartment", "name": "Flat"}},
            ("property_listing", "Offer"),
        ),
        ({"@type": "Offer", "itemOffered": {"@type": "Book"}}, None),
        ({"@type": "Organization", "name": "Acme"}, None),
    ],
)
def test_the_main_node_names_the_item_type(node: dict[str, object], expected: object) -> None:
    assert item_type_of(Page(BASE + "/x", html=jsonld(node))) == expected


def test_several_item_nodes_are_a_listing_not_a_detail_page() -> None:
    cards = "".join(
        "<li itemscope itemtype='https://schema.org/Product'>"
        f"<span itemprop='name'>P{n}</span></li>"
        for n in range(3)
    )
    assert (
        item_type_of(Page(BASE + "/c", html=f"<html><body><ul>{cards}</ul></body></html>")) is None
    )
    # One product in microdata (a Brand nested in it is no second item): a detail page.
    one = (
        "<html><body><div itemscope itemtype='https://schema.org/Product'>"
        "<span itemprop='name'>P</span><div itemprop='brand' itemscope "
        "itemtype='https://schema.org/Brand'><span itemprop='name'>B</span></div></div>"
        "</body></html>"
    )
    assert item_type_of(Page(BASE + "/p", html=one)) == ("product", "Product")


def test_generalise_aligns_urls_of_one_shape() -> None:
    [pattern] = generalise(["/product/DM-00042", "/product/DM-00007"])
    assert pattern.regex == "^/product/[^/?#]+$" and not pattern.guessed
    [pattern] = generalise(["/jobs/kitchen?page=3", "/jobs/garden", "/jobs/garden?page=2"])
    assert pattern.regex == r"^/jobs/[^/?#]+(\?page=\d+)?$" and pattern.paginated
    assert re.search(pattern.regex, "/jobs/audio?page=12")
    assert not re.search(pattern.regex, "/jobs/audio/x")
    # Literal segments stay literal, escaped; shapes of other depths get their own pattern.
    patterns = generalise(["/c/tools.html/a", "/c/tools.html/b", "/c/x"])
    assert [p.regex for p in patterns] == ["^/c/[^/?#]+$", r"^/c/tools\.html/[^/?#]+$"]
    assert [p.regex for p in generalise(["/"])] == ["^/$"]
    # Other queries are allowed without being spelt out.
    assert generalise(["/search?q=a", "/search?q=b"])[0].regex == r"^/search(\?[^#]*)?$"


def test_a_pattern_from_one_url_is_a_guess() -> None:
    [pattern] = generalise(["/product/DM-00042"])
    assert pattern.regex == "^/product/[^/?#]+$" and pattern.guessed
    [pattern] = generalise(["/item-12345"])
    assert pattern.regex == "^/[^/?#]+$"
    [pattern] = generalise(["/about"])
    assert pattern.regex == "^/about$"


def test_classify_a_shop() -> None:
    result = classify(shop_pages(), BASE + "/")
    assert result.item_type == "product"
    assert list(result.types) == ["product", "listing", "home"]
    product, listing, home = result.types.values()
    assert product.role == "detail" and product.schema_type == "Product"
    assert len(product.pages) == 6 and product.regexes == ["^/product/[^/?#]+$"]
    # The second page of a listing shows one card only: its URL makes it a listing.
    assert {p.path for p in listing.pages} == {
        "/category/kitchen",
        "/category/kitchen?page=2",
        "/category/garden",
    }
    assert listing.regexes == [r"^/category/[^/?#]+(\?page=\d+)?$"]
    assert home.regexes == ["^/$"] and home.role == "home"
    assert [p.path for p in result.unclassified] == ["/about"]
    assert result.type_of_url(BASE + "/product/ZZ-1") == "product"
    [link] = pagination_links(listing.pages[0], listing)
    assert link.url == BASE + "/category/kitchen?page=2" and link.rel == "next"


def test_hubs_are_named_after_their_urls_and_item_type_may_be_forced() -> None:
    pages = [p for p in shop_pages() if p.path != "/"]
    pages.append(
        Page(
            BASE + "/brand/acme", html="<html><body><a href='/category/garden'>g</a></body></html>"
        )
    )
    result = classify(pages, BASE + "/")
    assert result.types["brand"].role == "hub"
    assert "home" not in result.types
    forced = classify(shop_pages(), BASE + "/", item_type="job_posting")
    assert forced.detail is None and forced.seen_item_types["product"] == 6


def test_blocked_and_failed_pages_are_left_out() -> None:
    pages = [
        Page(BASE + "/product/A-1", html=product_html("A-1", "a", "1"), blocked="captcha"),
        Page(BASE + "/product/A-2", status=500, html=product_html("A-2", "b", "2")),
        Page(BASE + "/c", html=listing_html(["A-1", "A-2"])),
    ]
    assert classify(pages, BASE + "/").detail is None
