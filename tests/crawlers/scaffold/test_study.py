"""The scaffold's reading of a sample end to end on small made-up sites: page types, the
item type, and fields whose rules read every item right."""

from __future__ import annotations

from crawlers.scaffold.page import Page
from crawlers.scaffold.study import study
from crawlers.scaffold.synth import read
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading

BASE = "http://cards.test"
NAMES = [f"Lenovo ThinkPad X{n} Carbon Gen {n + 3} 14 inch business laptop" for n in range(8)]


def detail(n: int) -> str:
    return (
        "<html><head><title>Test Sites</title></head><body><header><a href='/'>Test Sites</a>"
        "</header><main><div class='caption'><h4 class='price'>$"
        f"{400 + 10 * n}.99</h4><h4 class='title'>{NAMES[n]}</h4><p class='description'>"
        f"A light laptop, number {n}, with a long battery life and a sharp screen for work."
        f"</p></div><div class='ratings'><p>{n + 2} reviews</p><p data-rating='{n % 5 + 1}'>"
        "</p></div></main></body></html>"
    )


def listing(page: int) -> str:
    cards = "".join(
        f"<div class='thumbnail'><h4 class='price'>${400 + 10 * n}.99</h4><a class='title' "
        f"href='/product/{n}' title='{NAMES[n]}'>{NAMES[n][:20]}...</a><p>{n + 2} reviews</p>"
        "</div>"
        for n in range(8)
        if n // 4 == page - 1
    )
    return (
        "<html><head><title>Test Sites</title></head><body><header><a href='/'>Test Sites</a>"
        f"</header><main><h2>Laptops</h2>{cards}<a href='/laptops?page=2'>2</a></main>"
        "</body></html>"
    )


def test_names_read_as_the_listings_links_read_them() -> None:
    pages = [Page(BASE + "/", html=listing(1), source="start")]
    pages += [Page(f"{BASE}/laptops?page={p}", html=listing(p)) for p in (1, 2)]
    pages += [Page(f"{BASE}/product/{n}", html=detail(n)) for n in range(8)]
    found = study(pages, BASE + "/")
    assert found.item_type == "product" and found.page_type is not None
    assert found.page_type.name == "product" and len(found.page_type.pages) == 8
    en = Reading(("en",), market(language="en"))
    for name, expected in (("name", NAMES), ("price", [400 + 10 * n + 0.99 for n in range(8)])):
        rules = found.fields[name].rules()
        assert found.fields[name].sure, name
        values = [read(u, "product", name, rules[0], en) for u in found.units]
        assert values == expected, name
    rating = found.fields["rating"]
    assert rating.rules()[0]["attr"] == "data-rating" and rating.sure
    assert found.fields["review_count"].sure and found.fields["description"].sure


def event(n: int) -> str:
    return (
        f"<html><head><title>Gig {n}</title></head><body><main><h1>The Band {n}</h1>"
        f"<ul class='facts'><li>Venue: Hall {n}</li><li>Doors: {n + 6}pm</li></ul>"
        "<p>An evening of loud songs and quiet ones, as the band likes it best.</p>"
        "</main></body></html>"
    )


def test_a_site_of_no_known_kind_keeps_what_it_labels_by_its_labels() -> None:
    home = "<html><body><ul class='gigs'>" + "".join(
        f"<li><a href='/gig/{n}'>The Band {n}</a> <span>Hall {n}</span></li>" for n in range(6)
    ) + "</ul></body></html>"  # fmt: skip
    pages = [Page("http://gigs.test/", html=home, source="start")]
    pages += [Page(f"http://gigs.test/gig/{n}", html=event(n)) for n in range(6)]
    found = study(pages, "http://gigs.test/")
    assert found.item_type == "item"
    assert {"name", "venue", "doors"} <= set(found.fields)
    assert found.declared["venue"] == {"type": "text"} and found.declared["name"]["required"]
    en = Reading(("en",), market(language="en"))
    venue = found.fields["venue"].rules()[0]
    assert [read(u, "item", "venue", venue, en) for u in found.units] == [
        f"Hall {n}" for n in range(6)
    ]
