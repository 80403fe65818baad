"""Follow rules and sample paths proposed from small HTML pages."""

from __future__ import annotations

from crawlers.scaffold.classify import Page, classify
from crawlers.scaffold.propose import link_regex, propose_follow, sample_paths
from tests.crawlers.scaffold.support import BASE, shop_pages


def test_follow_rules_regions_pagination_and_allow_fallback() -> None:
    classification = classify(shop_pages(), BASE + "/")
    follows = propose_follow(classification)
    assert [r.rule() for r in follows["listing"]] == [
        {"css": 'a[rel="next"]', "to": "listing"},
        {"css": "a.product-link", "to": "product"},
    ]
    assert [r.rule() for r in follows["home"]] == [{"css": "a.cat", "to": "listing"}]
    assert "product" not in follows
    # Links to a page type without a class of their own (nor a classed parent): allow.
    bare = [
        Page(
            BASE + "/",
            html="<a href='/p/1'>1</a><a href='/p/2'>2</a><a href='/p/3'>3</a>",
            source="start",
        ),
    ]
    bare += [Page(f"{BASE}/p/{n}", html=shop_pages()[-1].html) for n in (1, 2, 3)]
    bare.append(
        Page(BASE + "/l", html="<a href='/p/1'>1</a><a href='/p/2'>2</a><a href='/p/3'>x</a>")
    )
    rules = propose_follow(classify(bare, BASE + "/"))
    assert [r.rule() for r in rules["listing"]] == [{"allow": ["/p/[^/?#]+$"], "to": "product"}]
    assert link_regex("^/p/[^/?#]+$") == "/p/[^/?#]+$"


def test_sample_paths_are_spread() -> None:
    pages = [Page(f"{BASE}/p/{n:02d}") for n in range(10)]
    assert sample_paths(pages) == ["/p/00", "/p/03", "/p/06", "/p/09"]
    assert sample_paths(pages[:2]) == ["/p/00", "/p/01"]
