"""Follow rules and sample paths proposed from small HTML pages."""

from __future__ import annotations

from collections import Counter

from crawlers.scaffold.classify import Classification, Page, PageType, classify, generalise
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


def _board(n: int, last: int, classed: bool) -> Page:
    """Page ``n`` of a paginated quotes list: a pager (previous/next) and page numbers."""
    previous, following = (
        ("<li class='previous'>", "<li class='next'>") if classed else ("<li>",) * 2
    )
    pager = f"{previous}<a href='/quotes?page={n - 1}'>Prev</a></li>" if n > 1 else ""
    if n < last:
        pager += f"{following}<a href='/quotes?page={n + 1}'>Next</a></li>"
    numbers = "".join(f"<a href='/quotes?page={k}'>{k}</a>" for k in range(1, last + 1))
    cards = "".join(f"<div class='quote' id='q{n}{k}'><span>Q{n}{k}</span></div>" for k in range(3))
    return Page(
        f"{BASE}/quotes?page={n}",
        html=f"<html><body>{cards}<ul class='pager'>{pager}</ul>"
        f"<div class='numbers'>{numbers}</div></body></html>",
    )


def test_a_list_pages_through_the_selector_of_its_next_link() -> None:
    def follows(classed: bool) -> list[dict[str, object]]:
        pages = [_board(n, 4, classed) for n in (1, 2, 4)]
        quotes = PageType("quote", "items", pages, generalise([p.url for p in pages]))
        classification = Classification("quote", {"quote": quotes}, [], Counter())
        return [rule.rule() for rule in propose_follow(classification)["quote"]]

    # Only the next page's link, one fetch per page: not the numbers, not the previous.
    assert follows(True) == [{"css": "li.next a", "to": "quote"}]
    # A next link told from the others by nothing: the list's own URL patterns.
    assert follows(False) == [{"allow": [r"/quotes(\?page=\d+)?$"], "to": "quote"}]
