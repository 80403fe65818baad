"""The proposed profile as TOML: values, comments, and a round trip through SiteProfile."""

from __future__ import annotations

import tomllib
from pathlib import Path

from crawlers.profiles import SiteProfile
from crawlers.scaffold.profile import profile_text, propose
from crawlers.scaffold.study import study
from crawlers.scaffold.verify import verify
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


def test_the_proposed_profile_loads_and_checks_itself(tmp_path: Path) -> None:
    found = study(shop_pages(), BASE + "/")
    proposal = propose("acme", BASE + "/", found, [BASE + "/sitemap.xml"])
    text = profile_text(proposal, "python -m crawlers.scaffold acme http://shop.test/")
    profile = SiteProfile.from_dict("acme", tomllib.loads(text))
    assert profile.item_type == "product" and profile.base_url == BASE
    assert profile.start_paths == ("/",) and profile.start_page == "home"
    assert profile.sitemaps == ("/sitemap.xml",)
    assert list(profile.pages) == ["product", "listing", "home"]
    product = profile.pages["product"]
    assert product.item == "Product" and product.url_patterns == ("^/product/[^/?#]+$",)
    # A field the structured data holds is read from it, with the page's own element after.
    assert product.fields["name"][0].data == "name"
    assert product.fields["name"][1].css == "h1.product-title"
    assert product.fields["price"][0].data == "offers.price"
    assert profile.recrawl.item_callbacks == ("parse_product",)
    # The gate's page types derive from [pages]: one set of selectors.
    gate = profile.fingerprint["page_types"]
    assert gate["product"]["selectors"]["name"] == "h1.product-title"
    assert gate["listing"]["callback"] == "parse_listing"
    assert "GUESS" in text and "scaffolded by `python -m crawlers.scaffold acme" in text
    checked = verify(profile, proposal)
    assert checked.missing == [] and checked.coverage["name"] == (6, 6)
    assert checked.reached == (6, 6)
    bare = propose("acme", BASE + "/", found, [])
    assert "no sitemap found (robots.txt, /sitemap.xml, /sitemap_index.xml)" in bare.check


def test_an_unsure_field_is_a_commented_hint() -> None:
    found = study(shop_pages(), BASE + "/")
    choice = found.fields["price"].choice
    choice.agree = 1  # as if its rules had read one of the values seen
    proposal = propose("acme", BASE + "/", found, [])
    text = profile_text(proposal, "python -m crawlers.scaffold acme http://shop.test/")
    assert "\n# price = [{data = " in text
    assert "price" not in SiteProfile.from_dict("acme", tomllib.loads(text)).pages["product"].fields
    assert any(note.startswith("field price: its rules read 1 of the 6") for note in proposal.check)
