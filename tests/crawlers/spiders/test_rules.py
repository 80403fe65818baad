"""The rules engine of profile-driven sites (crawlers/spiders/rules.py) on small pages:
every source, shaping, conversion to the item field's type, fallbacks, page types and
follow rules. Pure: no crawl, no service."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scrapy.http import HtmlResponse

from crawlers.profile_schema import PageTable
from crawlers.spiders.rules import (
    extract_fields,
    follow_links,
    item_node,
    page_type_for,
    read_page,
    url_target,
)

URL = "https://shop.example/product/SKU-1?ref=home"


def page(html: str, url: str = URL) -> HtmlResponse:
    return HtmlResponse(url, body=f"<html><body>{html}</body></html>", encoding="utf-8")


def jsonld(*nodes: dict[str, Any]) -> str:
    return "".join(
        f'<script type="application/ld+json">{json.dumps(node)}</script>' for node in nodes
    )


def table(item: str | None = None, **fields: Any) -> PageTable:
    """A ``[pages.<name>]`` table as TOML gives it (one rule or a list of fallbacks)."""
    return PageTable.model_validate(
        {"item": item, "fields": fields} if item else {"fields": fields}
    )


def read(
    html: str, item_type: str = "product", node: str | None = None, **fields: Any
) -> dict[str, Any]:
    """The fields ``fields`` (rules) read on ``html``; ``node``: the page's item type."""
    return extract_fields(page(html), table(node, **fields), item_type)


def one(html: str, rule: Any, field: str = "name", item_type: str = "product") -> Any:
    return read(html, item_type, **{field: rule})[field]


PRODUCT = {
    "@context": "https://schema.org",
    "@type": "Product",
    "name": "Chef's Knife",
    "sku": "SKU-1",
    "brand": {"@type": "Brand", "name": "Culinox"},
    "image": ["/img/1.jpg", "https://cdn.example/2.jpg"],
    "offers": [
        {"@type": "Offer", "price": "63.00", "priceCurrency": "EUR"},
        {"@type": "Offer", "price": "70.00", "priceCurrency": "EUR"},
    ],
    "aggregateRating": {"@type": "AggregateRating", "ratingValue": 4.3, "reviewCount": "12"},
}


# -- sources ---------------------------------------------------------------------------------


def test_data_paths_read_the_item_node_through_nested_nodes_and_lists() -> None:
    html = jsonld({"@type": "BreadcrumbList", "name": "crumbs"}, PRODUCT)
    fields = read(
        html,
        node="Product",
        name={"data": "name"},
        brand={"data": "brand"},  # a nested node where a value is expected: its name
        price={"data": "offers.price"},  # a list of offers: the first
        images={"data": "image"},
        rating={"data": "aggregateRating.ratingValue"},
        review_count={"data": "aggregateRating.reviewCount"},
    )
    assert fields["name"] == "Chef's Knife"  # the Product node, not the first node
    assert fields["brand"] == "Culinox"
    assert fields["price"] == 63.0
    assert fields["images"] == ["https://shop.example/img/1.jpg", "https://cdn.example/2.jpg"]
    assert (fields["rating"], fields["review_count"]) == (4.3, 12)
    assert fields["url"] == URL  # the page's URL unless a rule says otherwise


def test_the_page_item_names_the_node_data_rules_read() -> None:
    html = jsonld({"@type": "Organization", "name": "The Shop"}, PRODUCT)
    assert one(html, {"data": "name"}) == "The Shop"  # no item type named: the first node
    response = page(html)
    assert read_page(response, table("Product", name={"data": "name"}), "product").fields[
        "name"
    ] == ("Chef's Knife")
    assert item_node(response, "Product") is not None
    assert item_node(response, "JobPosting") is None
    extraction = read_page(response, table("JobPosting", name={"data": "name"}), "product")
    assert (extraction.has_node, extraction.fields["name"]) == (False, None)


def test_json_ld_graphs_and_microdata_are_item_nodes_too() -> None:
    graph = jsonld({"@context": "https://schema.org", "@graph": [{"@type": "WebPage"}, PRODUCT]})
    assert read_page(page(graph), table("Product", name={"data": "name"}), "product").has_node
    microdata = """
      <div itemscope itemtype="https://schema.org/Product">
        <h1 itemprop="name">Orbital Sander</h1>
        <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
          <meta itemprop="price" content="37.99"><meta itemprop="priceCurrency" content="EUR">
          <link itemprop="availability" href="https://schema.org/PreOrder">
        </div>
      </div>"""
    fields = extract_fields(
        page(microdata),
        table(
            "Product",
            name={"data": "name"},
            price={"data": "offers.price"},
            currency={"data": "offers.priceCurrency"},
            availability={"data": "offers.availability"},
        ),
        "product",
    )
    assert (fields["name"], fields["price"], fields["currency"]) == ("Orbital Sander", 37.99, "EUR")
    assert fields["availability"] == "PreOrder"  # a schema.org URL: its name


def test_opengraph_is_read_from_meta_tags_without_an_item_node() -> None:
    html = (
        '<meta property="og:title" content="  Chef\'s   Knife ">'
        '<meta property="og:image" content="/i.png">'
    )
    fields = read(html, name={"data": "og:title"}, images={"data": "og:image"})
    assert fields["name"] == "Chef's Knife"
    assert fields["images"] == ["https://shop.example/i.png"]


def test_css_reads_text_attributes_and_pseudo_elements() -> None:
    html = """<h1 class="t">  Chef's <b>Knife</b> </h1>
      <a class="img" href="/a.jpg">one</a><a class="img" href="/b.jpg">two</a>"""
    assert one(html, {"css": "h1.t"}) == "Chef's Knife"  # the element's whole text
    assert one(html, {"css": "h1.t::text"}) == "Chef's"  # only its own text node
    assert one(html, {"css": "a.img", "attr": "href"}, "images") == [
        "https://shop.example/a.jpg",
        "https://shop.example/b.jpg",
    ]
    assert one(html, {"css": "a.img::attr(href)"}, "images") == [
        "https://shop.example/a.jpg",
        "https://shop.example/b.jpg",
    ]
    assert one(html, {"css": "a.img"}) == "one"  # one value for a single field: the first
    assert one(html, {"css": "h2"}) is None


def test_xpath_reads_elements_text_and_attributes() -> None:
    html = '<p id="x">Colour: <span>red</span></p><img src="/i.png">'
    assert one(html, {"xpath": "//p[@id='x']"}, "color") == "Colour: red"
    assert one(html, {"xpath": "//p[@id='x']/span/text()"}, "color") == "red"
    assert one(html, {"xpath": "//img/@src"}, "images") == ["https://shop.example/i.png"]
    assert one(html, {"xpath": "//img", "attr": "src"}, "images") == ["https://shop.example/i.png"]


def test_xpaths_computing_a_value_give_that_value() -> None:
    html = "<title> Knife </title><i class='s'></i><i class='s'></i>"
    assert one(html, {"xpath": "normalize-space(//title)"}) == "Knife"
    assert one(html, {"xpath": "count(//i[@class='s'])"}, "review_count") == 2
    assert one(html, {"xpath": "boolean(//i)"}, "verified", "review") is True


TABLES = """
  <table class="specs">
    <tr><th>Colour:</th><td>Mustard <i>yellow</i></td></tr>
    <tr><th> MATERIAL </th><td>Steel</td></tr>
  </table>
  <dl class="facts"><dt>Brand</dt><dd>Culinox</dd><dt>Category</dt><dd>Kitchen</dd></dl>
  <table class="rows"><tr><td>Reviews</td><td>1,234</td></tr></table>
"""


@pytest.mark.parametrize(
    ("field", "rule", "expected"),
    [
        ("color", {"table": "table.specs", "label": "Colour"}, "Mustard yellow"),
        ("material", {"table": "table.specs", "label": "material:"}, "Steel"),
        ("brand", {"table": "dl.facts", "label": "brand"}, "Culinox"),
        ("category", {"table": "dl.facts", "label": "Category"}, "Kitchen"),
        ("review_count", {"table": "table.rows", "label": "Reviews"}, 1234),
        ("color", {"table": "table.specs", "label": "Size"}, None),
    ],
)
def test_key_value_tables_give_the_cell_beside_the_label(
    field: str, rule: dict[str, str], expected: Any
) -> None:
    assert one(TABLES, rule, field) == expected


def test_url_regexes_give_their_first_group_or_the_whole_match() -> None:
    assert one("", {"url": r"/product/([^/?#]+)"}, "product_id") == "SKU-1"
    assert one("", {"url": r"ref=\w+"}, "product_id") == "ref=home"
    assert one("", {"url": r"/item/(\d+)"}, "product_id") is None


def test_a_value_is_stated_as_is_and_converted() -> None:
    assert one("", {"value": "EUR"}, "currency") == "EUR"
    assert one("", {"value": 3}, "review_count") == 3


# -- shaping ---------------------------------------------------------------------------------


def test_re_keeps_its_first_group_and_a_text_it_does_not_match_is_nothing() -> None:
    html = '<span class="sku">Ref. AB-12 (new)</span>'
    assert one(html, {"css": ".sku", "re": r"Ref\. (\S+)"}, "product_id") == "AB-12"
    assert one(html, {"css": ".sku", "re": r"AB-\d+"}, "product_id") == "AB-12"
    assert one(html, {"css": ".sku", "re": r"EAN (\d+)"}, "product_id") is None


def test_maps_match_without_case_and_schema_org_urls_by_their_name() -> None:
    printed = '<p class="a">  IN STOCK </p><p class="b">Sold out</p>'
    in_stock = {"In stock": "InStock", "sold out": "OutOfStock"}
    assert one(printed, {"css": ".a", "map": in_stock}, "availability") == "InStock"
    assert one(printed, {"css": ".b", "map": in_stock}, "availability") == "OutOfStock"
    offer = jsonld({"@type": "Product", "offers": {"availability": "https://schema.org/InStock"}})
    rule = {"data": "offers.availability", "map": {"instock": "available"}}
    assert one(offer, rule, "availability") == "available"
    by_url = {"data": "offers.availability", "map": {"http://schema.org/InStock": "yes"}}
    assert one(offer, by_url, "availability") == "yes"
    # A printed value the map does not know is not stored under its printed form, and
    # it is reported (the spider counts it), not silently absent.
    assert one(printed, {"css": ".b", "map": {"In stock": "InStock"}}, "availability") is None
    unknown = read_page(
        page(printed), table(availability={"css": ".b", "map": {"In stock": "InStock"}}), "product"
    )
    assert len(unknown.problems) == 1
    assert "is not in the rule's map" in unknown.problems[0]


def test_count_counts_matches_and_none_shown_is_no_value_not_zero() -> None:
    stars = '<i class="star full"></i><i class="star full"></i><i class="star"></i>'
    assert one(stars, {"css": "i.star.full", "count": True}, "rating") == 2.0
    assert one(stars, {"xpath": "//i[contains(@class, 'star')]", "count": True}, "rating") == 3.0
    assert one("<div></div>", {"css": "i.star.full", "count": True}, "rating") is None


def test_all_keeps_every_match_for_a_list_field_and_drops_repeats() -> None:
    html = "<nav><a>Home</a><a>Kitchen, Dining</a><a>Home</a></nav>"
    assert one(html, {"css": "nav a", "all": True}, "breadcrumbs") == ["Home", "Kitchen, Dining"]
    # A single match of a CSS rule is one value, commas and all.
    assert one("<nav><a>Kitchen, Dining</a></nav>", {"css": "nav a"}, "breadcrumbs") == [
        "Kitchen, Dining"
    ]


def test_defaults_fill_a_page_with_the_item_after_every_fallback() -> None:
    html = jsonld(PRODUCT) + '<p class="c">Red</p>'
    rules = [{"data": "color", "default": "unknown"}, {"css": ".c"}]
    fields = read_page(page(html), table("Product", color=rules), "product").fields
    assert fields["color"] == "Red"  # the fallback found it: the default did not pre-empt it
    fields = read_page(page(jsonld(PRODUCT)), table("Product", color=rules), "product").fields
    assert fields["color"] == "unknown"
    # A page without the item (a block page answered 200) does not become one by defaults.
    extraction = read_page(page("<p>blocked</p>"), table("Product", color=rules), "product")
    assert (extraction.has_node, extraction.fields["color"], extraction.found) == (
        False,
        None,
        ["url"],
    )


# -- conversion to the item field's type -----------------------------------------------------


@pytest.mark.parametrize(
    ("printed", "amount", "currency"),
    [
        ("1.234,50 €", 1234.5, "EUR"),
        ("€ 1 200", 1200.0, "EUR"),
        ("CA$6,250", 6250.0, "CAD"),
        ("3,498 MXN", 3498.0, "MXN"),
        ("Rp 1.234.567", 1_234_567.0, "IDR"),
    ],
)
def test_money_and_currency_from_a_printed_price(
    printed: str, amount: float, currency: str
) -> None:
    html = f'<span class="p">{printed}</span>'
    fields = read(html, price={"css": ".p"}, currency={"css": ".p"})
    assert (fields["price"], fields["currency"]) == (amount, currency)


def test_a_shared_sign_is_read_in_the_page_language() -> None:
    # "£" is also the Falkland, Gibraltar, St Helena and South Sudan pound; "$" dozens.
    for lang, printed, currency in [
        ("en-GB", "£12.99", "GBP"),
        ("en-CA", "$12.99", "CAD"),
        ("es-MX", "$12.99", "MXN"),
        (None, "£12.99", None),
    ]:
        attribute = f' lang="{lang}"' if lang else ""
        html = f'<html{attribute}><body><span class="p">{printed}</span></body></html>'
        response = HtmlResponse(URL, body=html, encoding="utf-8")
        rules = table(None, price={"css": ".p"}, currency={"css": ".p"})
        fields = extract_fields(response, rules, "product")
        assert (fields["price"], fields["currency"]) == (12.99, currency), lang


def test_money_from_numbers_and_currency_from_codes() -> None:
    html = jsonld({"@type": "Product", "offers": {"price": 63, "priceCurrency": "USD"}})
    fields = read(html, price={"data": "offers.price"}, currency={"data": "offers.priceCurrency"})
    assert (fields["price"], fields["currency"]) == (63.0, "USD")
    assert isinstance(fields["price"], float)


def test_values_that_do_not_convert_are_problems_not_silent_nones() -> None:
    html = '<span class="p">$5</span><span class="n">call us</span>'
    extraction = read_page(
        page(html),
        table(currency={"css": ".p"}, price={"css": ".n"}, name={"css": ".n"}),
        "product",
    )
    assert extraction.fields["currency"] is None  # "$" names several currencies
    assert extraction.fields["price"] is None
    assert extraction.fields["name"] == "call us"
    assert extraction.problems == (
        "currency: '$5' is not a currency",
        "price: 'call us' is not an amount",
    )


def test_urls_are_made_absolute_and_non_http_ones_are_problems() -> None:
    html = '<a class="i" href="//cdn.example/a.png">a</a><a class="i" href="img/b.png">b</a>'
    assert one(html, {"css": "a.i", "attr": "href"}, "images") == [
        "https://cdn.example/a.png",
        "https://shop.example/product/img/b.png",
    ]
    bad = page('<a class="i" href="mailto:shop@example.com">mail</a>')
    extraction = read_page(bad, table(images={"css": "a.i", "attr": "href"}), "product")
    assert extraction.fields["images"] is None
    assert extraction.problems and extraction.problems[0].startswith("images: ")


def test_nested_image_nodes_give_their_url_not_their_name() -> None:
    image = {"@type": "ImageObject", "name": "front", "url": "/img/front.jpg"}
    html = jsonld({"@type": "Product", "image": image, "brand": {"@type": "Brand", "name": "X"}})
    fields = read(html, images={"data": "image"}, brand={"data": "brand"})
    assert fields["images"] == ["https://shop.example/img/front.jpg"]
    assert fields["brand"] == "X"


def test_iso_dates_are_accepted_as_written_printed_ones_read_and_others_are_problems() -> None:
    html = (
        '<time class="a">2024-07-18</time><time class="b">2024-07-18T10:00:00Z</time>'
        '<time class="c">18/07/2024</time><p class="d">Published on Apr 24, 2022</p>'
        '<p class="e">coming soon</p>'
    )
    rules = {
        "published_at": {"css": ".a"},
        "updated_at": {"css": ".b"},
    }
    fields = read(html, "property_listing", **rules)
    assert (fields["published_at"], fields["updated_at"]) == ("2024-07-18", "2024-07-18T10:00:00Z")
    assert one(html, {"css": ".c"}, "published_at", "property_listing") == "2024-07-18"
    assert one(html, {"css": ".d"}, "published_at", "property_listing") == "2022-04-24"
    extraction = read_page(page(html), table(published_at={"css": ".e"}), "property_listing")
    assert extraction.fields["published_at"] is None
    assert extraction.problems == ("published_at: 'coming soon' is not a date",)


def test_country_codes_are_upper_cased_and_names_are_problems() -> None:
    assert one('<p class="c">es</p>', {"css": ".c"}, "country", "property_listing") == "ES"
    extraction = read_page(
        page('<p class="c">Spain</p>'), table(country={"css": ".c"}), "property_listing"
    )
    assert extraction.fields["country"] is None
    assert extraction.problems == ("country: 'Spain' is not a country code",)


def test_long_text_keeps_paragraphs_and_drops_html_tags_of_json_ld_descriptions() -> None:
    description = (
        "<p>Sharp &amp; <b>light</b>.</p>\n\n\n\n<p>Second   paragraph.<br>Line 2</p><p>3</p>"
    )
    html = jsonld({"@type": "Product", "description": description})
    assert one(html, {"data": "description"}, "description") == (
        "Sharp & light.\n\nSecond paragraph.\nLine 2\n\n3"
    )


def test_counts_read_printed_numbers() -> None:
    assert one('<p class="r">(1,234 reviews)</p>', {"css": ".r"}, "review_count") == 1234
    assert one('<p class="r">12</p>', {"css": ".r"}, "rooms", "property_listing") == 12


def test_booleans_from_data_and_words() -> None:
    assert one(jsonld({"@type": "Review", "v": True}), {"data": "v"}, "verified", "review") is True
    assert one('<p class="v">Yes</p>', {"css": ".v"}, "verified", "review") is True
    assert one('<p class="v">no</p>', {"css": ".v"}, "verified", "review") is False
    assert one("", {"value": False}, "verified", "review") is False
    extraction = read_page(page('<p class="v">maybe</p>'), table(verified={"css": ".v"}), "review")
    assert extraction.fields["verified"] is None
    assert extraction.problems == ("verified: 'maybe' is not true or false",)


def test_map_to_a_boolean_with_a_default() -> None:
    rule = {"data": "jobLocationType", "map": {"TELECOMMUTE": True}, "default": False}
    remote = jsonld({"@type": "Review", "name": "x", "jobLocationType": "TELECOMMUTE"})
    onsite = jsonld({"@type": "Review", "name": "x"})
    assert one(remote, rule, "verified", "review") is True
    assert one(onsite, rule, "verified", "review") is False


def test_comma_separated_structured_data_lists_become_lists() -> None:
    html = jsonld({"@type": "Product", "amenityFeature": "lift, terrace,  air_conditioning,"})
    assert one(html, {"data": "amenityFeature"}, "features", "property_listing") == [
        "lift",
        "terrace",
        "air_conditioning",
    ]
    listed = jsonld({"@type": "Product", "amenityFeature": ["lift", "terrace, sea view"]})
    assert one(listed, {"data": "amenityFeature"}, "features", "property_listing") == [
        "lift",
        "terrace, sea view",
    ]


def test_literal_fields_take_only_their_values() -> None:
    assert one('<p class="o">rent</p>', {"css": ".o"}, "operation", "property_listing") == "rent"
    extraction = read_page(
        page('<p class="o">swap</p>'), table(operation={"css": ".o"}), "property_listing"
    )
    assert extraction.fields["operation"] is None
    assert extraction.problems[0].startswith("operation: 'swap' ")


def test_values_out_of_the_field_s_range_are_problems_not_dropped_items() -> None:
    extraction = read_page(page('<p class="r">9/10</p>'), table(rating={"css": ".r"}), "product")
    assert extraction.fields["rating"] is None  # FiveStars: 0..5
    assert len(extraction.problems) == 1 and extraction.problems[0].startswith("rating: '9.0'")


# -- fallbacks and unknown fields ------------------------------------------------------------


def test_the_first_rule_giving_a_value_wins() -> None:
    html = jsonld({"@type": "Product", "name": ""}) + "<h1>From the page</h1><h2>Other</h2>"
    rules = [{"data": "name"}, {"css": "h3"}, {"css": "h1"}, {"css": "h2"}]
    assert one(html, rules) == "From the page"
    html = jsonld({"@type": "Product", "name": "From data"}) + "<h1>From the page</h1>"
    assert one(html, rules) == "From data"


def test_a_fallback_after_an_unconvertible_value_still_counts_and_the_problem_is_kept() -> None:
    html = '<p class="a">ask us</p><p class="b">12,50 €</p>'
    extraction = read_page(page(html), table(price=[{"css": ".a"}, {"css": ".b"}]), "product")
    assert extraction.fields["price"] == 12.5
    assert extraction.problems == ("price: 'ask us' is not an amount",)


def test_a_field_the_item_type_lacks_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="item type 'product' has no field"):
        read("", nickname={"css": "h1"}, colour={"css": "h2"})


def test_found_lists_the_fields_with_values() -> None:
    extraction = read_page(
        page("<h1>N</h1>"), table(name={"css": "h1"}, color={"css": "h2"}), "product"
    )
    assert extraction.found == ["url", "name"]
    assert extraction.has_node is False


# -- page types and links --------------------------------------------------------------------

PAGES = {
    "home": PageTable.model_validate({"url_patterns": ["^/$"]}),
    "listing": PageTable.model_validate({"url_patterns": ["^/category/", r"[?&]page=\d+"]}),
    "product": PageTable.model_validate({"url_patterns": ["^/product/"]}),
}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://s.example/", "home"),
        ("https://s.example/category/kitchen", "listing"),
        ("https://s.example/search?q=x&page=2", "listing"),  # the query is searched too
        ("https://s.example/product/DM-1", "product"),
        ("https://s.example/about", None),
        ("https://s.example/x/product/1", None),  # anchored at the path's start
    ],
)
def test_page_type_for_is_the_first_page_type_matching_path_and_query(
    url: str, expected: str | None
) -> None:
    assert page_type_for(url, PAGES) == expected


def test_page_type_for_falls_back_to_the_default_and_keeps_declaration_order() -> None:
    assert page_type_for("https://s.example/about", PAGES, "home") == "home"
    both = {
        "first": PageTable.model_validate({"url_patterns": ["/p"]}),
        "second": PageTable.model_validate({"url_patterns": ["/product/"]}),
    }
    assert page_type_for("https://s.example/product/1", both) == "first"


def test_a_url_without_a_path_is_its_site_root() -> None:
    """The scaffold writes ``^/$`` for the home page; a start URL given without its slash
    is the same page."""
    home = {"home": PageTable.model_validate({"url_patterns": ["^/$"]})}
    assert url_target("https://s.example") == "/"
    assert url_target("https://s.example?lang=en") == "/?lang=en"
    assert page_type_for("https://s.example", home) == "home"


LISTING = """
<nav class="cats"><a href="/category/tools">Tools</a><a href="/about">About</a></nav>
<ul class="grid">
  <li><a class="p" href="/product/1">1</a></li>
  <li><a class="p" href="/product/2?utm=x">2</a></li>
  <li><a class="p" href="https://other.example/product/9">9</a></li>
  <li><a class="p" href="/product/1">1 again</a></li>
</ul>
<div class="pages"><a href="?page=2">2</a></div>
"""


def links_of(follow: list[dict[str, Any]], html: str = LISTING) -> tuple[list[Any], list[str]]:
    pages = {**PAGES, "here": PageTable.model_validate({"follow": follow})}
    return follow_links(page(html, "https://s.example/category/kitchen"), "here", pages)


def test_follow_rules_keep_to_their_regions_and_route_by_to() -> None:
    links, unrouted = links_of([{"css": "ul.grid", "to": "product"}])
    assert links == [
        ("https://s.example/product/1", "product"),
        ("https://s.example/product/2?utm=x", "product"),
        ("https://other.example/product/9", "product"),  # the offsite filter's to drop
    ]
    assert unrouted == []


def test_links_without_to_go_to_the_page_type_their_url_matches_and_others_are_reported() -> None:
    links, unrouted = links_of([{"css": "nav.cats"}, {"css": "div.pages"}])
    assert links == [
        ("https://s.example/category/tools", "listing"),
        ("https://s.example/category/kitchen?page=2", "listing"),
    ]
    assert unrouted == ["https://s.example/about"]


def test_to_wins_over_url_patterns() -> None:
    links, _ = links_of([{"css": "nav.cats", "to": "product"}])
    assert links == [
        ("https://s.example/category/tools", "product"),
        ("https://s.example/about", "product"),
    ]


def test_allow_and_deny_are_searched_in_the_absolute_url() -> None:
    links, _ = links_of([{"allow": [r"^https://s\.example/product/"], "deny": [r"utm="]}])
    assert links == [("https://s.example/product/1", "product")]
    links, _ = links_of([{"xpath": "//ul", "deny": ["other\\.example"], "to": "product"}])
    assert [url for url, _ in links] == [
        "https://s.example/product/1",
        "https://s.example/product/2?utm=x",
    ]


def test_a_link_routed_by_one_rule_is_not_reported_unrouted_by_another() -> None:
    links, unrouted = links_of([{"css": "nav.cats"}, {"css": "nav.cats", "to": "home"}])
    assert ("https://s.example/about", "home") in links
    assert unrouted == []


def test_a_page_type_without_follow_rules_follows_nothing() -> None:
    assert follow_links(page(LISTING), "product", PAGES) == ([], [])


def test_from_page_names_the_fields_the_page_s_content_gave() -> None:
    rules = table(
        "Product",
        product_id={"url": r"/product/([^/?#]+)"},
        currency={"value": "EUR"},
        name={"css": "h1"},
        color={"css": ".c", "default": "none"},
    )
    blocked = read_page(page("<p>Are you a robot?</p>"), rules, "product")
    # A URL and a stated value are no evidence the page holds the item: no defaults either.
    assert blocked.from_page == () and blocked.fields["color"] is None
    assert (blocked.fields["product_id"], blocked.fields["currency"]) == ("SKU-1", "EUR")
    shown = read_page(page("<h1>Knife</h1>"), rules, "product")
    assert shown.from_page == ("name",) and shown.fields["color"] == "none"


JOB = {
    "@context": "https://schema.org",
    "@type": "JobPosting",
    "title": "Data Engineer",
    "skills": "Python, SQL ,  Airflow",
    "jobLocationType": "TELECOMMUTE",
    "employmentType": ["FULL_TIME", "CONTRACTOR"],
    "baseSalary": {"currency": "EUR", "value": {"minValue": 50000, "maxValue": "65000"}},
    "datePosted": "2026-11-02",
    "description": "<p>Build <em>pipelines</em>.</p><p>Own them.</p>",
}


def test_a_job_posting_from_json_ld_and_its_facts_table() -> None:
    html = (
        jsonld(JOB)
        + """
      <table class="job-facts"><tr><th>Remote</th><td>Yes</td></tr>
        <tr><th>Experience level</th><td>Senior</td></tr></table>
      <span class="rating"><i class="star filled"></i><i class="star filled"></i>
        <i class="star"></i></span>
      <section class="job-description"><p>First.</p><p>Second.</p></section>"""
    )
    remote = {"data": "jobLocationType", "map": {"TELECOMMUTE": True}, "default": False}
    fields = read(
        html,
        "job_posting",
        "JobPosting",
        title={"data": "title"},
        skills={"data": "skills"},
        remote=remote,
        employment_type={"data": "employmentType"},
        salary_min={"data": "baseSalary.value.minValue"},
        salary_max={"data": "baseSalary.value.maxValue"},
        salary_currency={"data": "baseSalary.currency"},
        date_posted={"data": "datePosted"},
        description={"css": "section.job-description p", "all": True},
        experience_level={"table": "table.job-facts", "label": "Experience level"},
        company_rating={"css": "span.rating i.star.filled", "count": True},
    )
    assert fields["skills"] == ["Python", "SQL", "Airflow"]
    assert fields["remote"] is True
    assert fields["employment_type"] == "FULL_TIME"  # one value for a single field
    assert (fields["salary_min"], fields["salary_max"], fields["salary_currency"]) == (
        50000.0,
        65000.0,
        "EUR",
    )
    assert fields["date_posted"] == "2026-11-02"
    assert fields["description"] == "First.\n\nSecond."  # all: the paragraphs joined
    assert fields["experience_level"] == "Senior"
    assert fields["company_rating"] == 2
    by_table = {"table": "table.job-facts", "label": "Remote", "map": {"Yes": True, "No": False}}
    assert one(html, by_table, "remote", "job_posting") is True
    onsite = jsonld({**JOB, "jobLocationType": None})
    assert read(onsite, "job_posting", "JobPosting", remote=remote)["remote"] is False
    json_description = read(html, "job_posting", "JobPosting", description={"data": "description"})
    assert json_description["description"] == "Build pipelines.\n\nOwn them."


def test_a_list_page_yields_one_item_per_container_with_fields_read_within_it() -> None:
    from crawlers.profile_schema import MarketTable
    from crawlers.spiders.rules import Reading, read_items

    html = (
        '<div class="card" id="a"><h2>Ein</h2><b>1.234,50 kr</b><i>12,3K</i>'
        "<time>3. März 2021</time></div>"
        '<div class="card" id="b"><h2>Zwei</h2><b>99 kr</b><i>7</i></div>'
        "<h2>Not an item</h2>"
    )
    page_type = PageTable.model_validate(
        {
            "items": "div.card",
            "fields": {
                "listing_id": {"xpath": "./@id"},
                "title": {"css": "h2"},
                "price": {"css": "b"},
                "currency": {"css": "b"},
                "rooms": {"css": "i"},
                "published_at": {"css": "time"},
            },
        }
    )
    reading = Reading.of(MarketTable(country="SE", languages=("de",)))
    items = [x.fields for x in read_items(page(html), page_type, "property_listing", reading)]
    assert [(i["listing_id"], i["title"]) for i in items] == [("a", "Ein"), ("b", "Zwei")]
    assert [(i["price"], i["currency"]) for i in items] == [(1234.5, "SEK"), (99.0, "SEK")]
    assert [i["rooms"] for i in items] == [12300, 7]
    assert [i["published_at"] for i in items] == ["2021-03-03", None]
    # Without a market, "kr" is several currencies: none is guessed.
    assert read_items(page(html), page_type, "property_listing")[0].fields["currency"] is None


def test_a_rule_s_value_that_does_not_fit_is_the_next_source_s_each_counted() -> None:
    """A data rule reads the item's JSON-LD node, then its microdata node; then the next
    rule. Each refused value names its field, source and reason; an optional field no
    rule has fitting is left empty (its default still applies), a required one keeps its
    first value for validation to name."""
    ld = jsonld({"@type": "Product", "name": "Knife", "image": "javascript:void(0)",
                 "offers": {"@type": "Offer", "price": -12, "priceCurrency": "EUR"},
                 "aggregateRating": {"@type": "AggregateRating", "ratingValue": 9}})  # fmt: skip
    microdata = (
        '<div itemscope itemtype="https://schema.org/Product"><meta itemprop="name" '
        'content="Knife"><div itemprop="offers" itemscope itemtype="https://schema.org/Offer">'
        '<meta itemprop="price" content="12.00"></div></div><p class="stars">4.5</p>'
    )
    rules = {
        "price": {"data": "offers.price"},
        "rating": [{"data": "aggregateRating.ratingValue"}, {"css": ".stars"}],
        "images": {"data": "image"},
        "review_count": {"data": "aggregateRating.reviewCount", "default": 0},
        "name": {"data": "name"},
    }
    extraction = read_page(page(ld + microdata), table("Product", **rules), "product")
    assert extraction.fields["price"] == 12.0 and extraction.fields["rating"] == 4.5
    assert extraction.fields["images"] is None and extraction.fields["review_count"] == 0
    picked = extraction.picked
    assert picked is not None
    assert picked.sources == {"price": "microdata", "rating": "dom", "name": "json-ld"}
    assert [(r.field, r.source, r.reason) for r in picked.rejected] == [
        ("price", "json-ld", "greater_than_equal"),
        ("rating", "json-ld", "less_than_equal"),
        ("images", "json-ld", "value_error"),
    ]
    assert picked.no_valid == ("images",)
    # A required field (a listing's price) no rule has fitting keeps its first value.
    listing = jsonld({"@type": "Offer", "price": -5, "priceCurrency": "EUR"})
    rules = {"price": {"data": "price"}, "currency": {"data": "priceCurrency"}}
    unfit = read_page(page(listing), table("Offer", **rules), "property_listing")
    assert unfit.fields["price"] == -5.0 and unfit.picked is not None
    assert unfit.picked.no_valid == () and unfit.fields["currency"] == "EUR"
