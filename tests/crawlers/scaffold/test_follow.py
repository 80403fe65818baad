"""Follow rules from the links of the sampled pages: URLs a page type's patterns alone
name are followed wherever they appear; otherwise the region holding them, or the link
saying "next"."""

from __future__ import annotations

import re

from crawlers.scaffold.follow import (
    NEXT_WORDS,
    FollowProposal,
    covering_paths,
    deny_missing,
    propose_follow,
    sample_paths,
)
from crawlers.scaffold.page import Page
from crawlers.scaffold.site_map import map_site
from tests.crawlers.scaffold.support import BASE, shop_pages


def test_home_listings_and_details_follow_by_url() -> None:
    site = map_site(shop_pages(), BASE + "/")
    follows = {
        source: [rule.rule() for rule in rules] for source, rules in propose_follow(site).items()
    }
    to_detail = {"allow": [r"^https?://[^/]+/product/[^/?#]+$"], "to": "detail"}
    to_listing = {"allow": [r"^https?://[^/]+/category/[^/?#]+(\?page=\d+)?$"], "to": "listing"}
    assert follows["home"] == [to_listing]
    assert to_detail in follows["listing"] and to_listing in follows["listing"]


def test_next_words_in_six_languages() -> None:
    for words in ("Next", "Next \u203a", "Siguiente", "Successiva \u203a", "Suivant", "Weiter",
                  "\u00bb", "Older stories", "Próxima"):  # fmt: skip
        assert NEXT_WORDS.match(words), words
    assert not NEXT_WORDS.match("Previous") and not NEXT_WORDS.match("Nextdoor lamps")


def test_sample_paths_first_pages_before_later_ones() -> None:
    pages = [Page(f"{BASE}/c/{n}") for n in range(6)] + [Page(f"{BASE}/c/1?page=2")]
    assert sample_paths(pages) == ["/c/0", "/c/2", "/c/3", "/c/5"]
    assert sample_paths(pages[:2] + pages[-1:]) == ["/c/0", "/c/1", "/c/1?page=2"]


def test_fixtures_show_every_field_some_sampled_page_shows() -> None:
    shown = {
        "/p/1": {"name", "price"},
        "/p/2": {"name", "price"},
        "/p/3": {"name", "price", "rating"},
        "/p/4": {"name", "price", "rating", "review_count"},
        "/p/5": {"name", "brand"},
    }
    # The pages showing most of the fields not yet shown are added, nothing else.
    assert covering_paths(["/p/1", "/p/2"], shown) == ["/p/1", "/p/2", "/p/4", "/p/5"]
    assert covering_paths(["/p/4", "/p/5"], shown) == ["/p/4", "/p/5"]
    assert covering_paths([], {}) == []


def test_a_lists_first_page_linked_again_as_page_1_is_denied() -> None:
    pages = shop_pages()
    # Page 2 links back to page 1 by its number, as "previous" links do.
    second = next(p for p in pages if p.url.endswith("?page=2"))
    again = Page(second.url, html=second.html.replace("</ul>", "<a href='?page=1'>1</a></ul>"))
    pages = [again if p is second else p for p in pages]
    site = map_site(pages, BASE + "/")
    rules = {rule.to: rule for rule in propose_follow(site)["listing"]}
    assert rules["listing"].deny == (r"[?&]page=1(?:&|$)",)
    assert rules["detail"].deny == ()


def test_a_broken_link_an_allow_pattern_takes_is_denied() -> None:
    allow = r"^https?://[^/]+/[^/?#]+$"  # a one-segment listing pattern
    follows = {
        "home": [FollowProposal("listing", allow=(allow,)), FollowProposal("detail", css="a.x")]
    }
    missing = ["http://shop.test/valuation", "http://shop.test/a/b/gone"]
    (listing, detail) = deny_missing(follows, missing)["home"]
    assert detail == follows["home"][1]  # no allow pattern: nothing to deny
    (deny,) = listing.deny
    assert re.search(deny, "http://shop.test/valuation")
    assert re.search(deny, "http://shop.test/valuation?x=1")
    assert not re.search(deny, "http://shop.test/valuations")
    assert not re.search(deny, "http://shop.test/for-sale")
    assert listing.rule()["deny"] == [deny]
