"""Page types as a person tells them: templates, repeated blocks, listings leading to the
detail pages that show their entries, lists of items, the start page."""

from __future__ import annotations

from crawlers.scaffold.follow import propose_follow
from crawlers.scaffold.page import Page
from crawlers.scaffold.records import find_records
from crawlers.scaffold.site_map import DETAIL, HOME, ITEMS, LISTING, map_site
from crawlers.scaffold.skeleton import find_templates
from tests.crawlers.scaffold.support import BASE, shop_pages


def test_a_shop_home_listings_and_details() -> None:
    site = map_site(shop_pages(), BASE + "/")
    roles = {name: (t.role, sorted(p.path for p in t.pages)) for name, t in site.types.items()}
    assert roles[DETAIL][0] == DETAIL and len(roles[DETAIL][1]) == 6
    assert roles[LISTING] == (
        LISTING,
        ["/category/garden", "/category/kitchen", "/category/kitchen?page=2"],
    )
    assert roles[HOME] == (HOME, ["/"])
    assert [p.path for p in site.unclassified] == ["/about"]
    assert site.types[DETAIL].regexes == [r"^/product/[^/?#]+$"]


def quote_page(n: int, author_link: bool = True) -> str:
    quotes = "".join(
        f"<div class='quote'><span class='text'>“Words number {n}-{k} that say a good deal "
        f"about things.”</span> <span>by <small>Author {k}</small>"
        + (f" <a href='/author/a{k}'>(about)</a>" if author_link else "")
        + "</span></div>"
        for k in range(5)
    )
    return f"<html><body><main>{quotes}<a href='/page/{n + 1}/'>Next</a></main></body></html>"


def author_page(k: int) -> str:
    return f"<html><body><main><h3>Author {k}</h3><p>Born somewhere.</p></main></body></html>"


def test_cards_linking_to_pages_that_do_not_show_them_are_items() -> None:
    pages = [Page(f"{BASE}/", html=quote_page(1), source="start")]
    pages += [Page(f"{BASE}/page/{n}/", html=quote_page(n)) for n in range(2, 5)]
    pages += [Page(f"{BASE}/author/a{k}", html=author_page(k)) for k in range(5)]
    site = map_site(pages, BASE + "/")
    items = site.item_type
    assert items is not None and items.role == ITEMS
    # The start page is the list's first page: it joins the list's page type.
    assert sorted(p.path for p in items.pages) == ["/", "/page/2/", "/page/3/", "/page/4/"]
    assert items.blocks is not None and items.blocks.endswith("div.quote")
    assert HOME not in site.types


def test_blocks_are_lists_not_the_pages_parts() -> None:
    page = Page(
        BASE + "/x",
        html=(
            "<html><body><div id='top'><a href='/'>Site</a></div><div id='main'><h1>T</h1>"
            "<a href='/a'>a</a></div><div id='foot'><a href='/b'>b</a></div>"
            "<ul class='grid'>" + "".join(
                f"<li class='card'><div><a href='/p/{n}'>Name {n}</a></div><span>{n} €</span></li>"
                for n in range(4)
            ) + "</ul></body></html>"
        ),
    )  # fmt: skip
    found = find_records(page)
    assert [r.signature for r in found] == ["body>ul.grid>li.card"]
    (cards,) = found
    assert cards.texts[1] == ["Name 1", "1 €"] and cards.multi_text == 1.0
    assert cards.anchors[2] == {BASE + "/p/2": "Name 2"}


def test_templates_split_one_url_shape_by_skeleton() -> None:
    product = (
        "<html><body><h1>{}</h1><p class='price'>5 €</p><table><tr><th>a</th><td>b</td></tr>"
        "</table></body></html>"
    )
    category = "<html><body><ul>" + "<li><a href='/x{}'>x</a></li>" * 5 + "</ul></body></html>"
    pages = [Page(f"{BASE}/item-{n}", html=product.format(n)) for n in range(3)]
    pages += [Page(f"{BASE}/cat-{n}", html=category.format(*range(5))) for n in range(3)]
    templates = find_templates(pages)
    assert sorted(sorted(p.path for p in t.pages) for t in templates) == [
        ["/cat-0", "/cat-1", "/cat-2"],
        ["/item-0", "/item-1", "/item-2"],
    ]


def test_a_lists_last_page_built_otherwise_is_the_lists() -> None:
    """A category's second page of one product and a "previous" link, without the grid of
    its first page, is still the category's page: the list's follow rule takes it."""

    def category(name: str, numbers: range, pager: str) -> str:
        cards = "".join(
            f"<li class='card'><a href='/p/{n}'>Lamp number {n}</a><span>{n}9,50 €</span></li>"
            for n in numbers
        )
        return f"<html><body><h1>{name}</h1><ul class='grid'>{cards}</ul>{pager}</body></html>"

    def product(n: int) -> str:
        return f"<html><body><h1>Lamp number {n}</h1><p>{n}9,50 €</p></body></html>"

    last = (
        "<html><body><div class='wrap'><h2>Garden</h2><p><a href='/p/9'>Lamp number 9</a> "
        "99,50 €</p><p><a href='/c/garden'>Previous</a></p></div></body></html>"
    )
    pager = "<a href='/c/garden?page=2'>2</a>"
    pages = [
        Page(f"{BASE}/c/kitchen", html=category("Kitchen", range(0, 4), "")),
        Page(f"{BASE}/c/hall", html=category("Hall", range(10, 14), "")),
        Page(f"{BASE}/c/garden", html=category("Garden", range(5, 9), pager)),
        Page(f"{BASE}/c/garden?page=2", html=last),
    ]
    pages += [Page(f"{BASE}/p/{n}", html=product(n)) for n in [*range(0, 9), *range(10, 14)]]
    site = map_site(pages, BASE + "/c/kitchen")
    listing = site.types[LISTING]
    assert "/c/garden?page=2" in [p.path for p in listing.pages]
    assert site.unclassified == []
    follow = {rule.to: rule for rule in propose_follow(site)[LISTING]}
    assert follow[LISTING].allow == (r"^https?://[^/]+/c/[^/?#]+(\?page=\d+)?$",)
