"""The proposed profile as TOML: values, comments, and a round trip through SiteProfile."""

from __future__ import annotations

import tomllib
from pathlib import Path

from crawlers.profiles import SiteProfile
from crawlers.scaffold.classify import classify
from crawlers.scaffold.profile import profile_text, propose
from crawlers.scaffold.write import Entry, TomlTable, render, value
from tests.crawlers.scaffold.support import BASE, shop_pages


def test_values() -> None:
    assert value(r"^/p/[^/?#]+(\?page=\d+)?$") == r"'^/p/[^/?#]+(\?page=\d+)?$'"
    assert value('a[rel="next"]') == """'a[rel="next"]'"""
    assert value("it's") == '"it\'s"'
    assert value("tab\there") == '"tab\\there"'
    assert value([{"data": "x", "map": {"In stock": "InStock", "TELECOMMUTE": True}}]) == (
        '[{data = "x", map = {"In stock" = "InStock", TELECOMMUTE = true}}]'
    )
    assert value(0.5) == "0.5" and value(3) == "3" and value(False) == "false"


def test_render_reads_back() -> None:
    text = render(
        ["head"],
        [Entry("a", "x", "why"), Entry("long", [f"/path/number/{n}" for n in range(8)])],
        [TomlTable("t.sub-table.x", [Entry("k", {"r": r"\d"})], ["about t"])],
    )
    assert text.startswith('# head\na = "x"  # why\n')
    assert "\n# about t\n[t.sub-table.x]\n" in text
    assert tomllib.loads(text) == {
        "a": "x",
        "long": [f"/path/number/{n}" for n in range(8)],
        "t": {"sub-table": {"x": {"k": {"r": r"\d"}}}},
    }


def test_the_proposed_profile_loads(tmp_path: Path) -> None:
    classification = classify(shop_pages(), BASE + "/")
    proposal = propose("acme", BASE + "/", classification, [BASE + "/sitemap.xml"])
    text = profile_text(proposal, "python -m crawlers.scaffold acme http://shop.test/")
    profile = SiteProfile.from_dict("acme", tomllib.loads(text))
    assert profile.item_type == "product" and profile.base_url == BASE
    assert profile.start_paths == ("/",) and profile.start_page == "home"
    assert profile.sitemaps == ("/sitemap.xml",)
    assert list(profile.pages) == ["product", "listing", "home"]
    product = profile.pages["product"]
    assert product.item == "Product" and product.url_patterns == ("^/product/[^/?#]+$",)
    assert product.fields["name"][0].data == "name"
    assert product.fields["name"][1].css == "h1.product-title"
    assert len(product.sample_paths) == 4
    listing = profile.pages["listing"]
    assert [(r.css, r.to) for r in listing.follow] == [
        ('a[rel="next"]', "listing"),
        ("a.product-link", "product"),
    ]
    assert profile.recrawl.item_callbacks == ("parse_product",)
    # The gate's page types derive from [pages]: one set of selectors.
    gate = profile.fingerprint["page_types"]
    assert gate["product"]["selectors"]["name"] == "h1.product-title"
    assert gate["listing"]["callback"] == "parse_listing"
    assert "GUESS" in text and "scaffolded by `python -m crawlers.scaffold acme" in text
    # Nothing to check by hand on this shop (sitemap, pagination, classes all found).
    assert proposal.check == []
    bare = propose("acme", BASE + "/", classification, [])
    assert bare.check == ["no sitemap found (robots.txt, /sitemap.xml, /sitemap_index.xml)"]
