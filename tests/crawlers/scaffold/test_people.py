"""Who and when: authors, companies by the link to their page, elements named for a
field, dates, a card's text, tags and lists under a heading."""

from __future__ import annotations

import pytest

from crawlers.scaffold.finders import Site, find_name
from crawlers.scaffold.item_types import DECLARED, full_declaration, register_declared
from crawlers.scaffold.people import (
    find_author,
    find_dated,
    find_hinted,
    find_linked,
    find_list_under,
    find_tags,
    find_text,
)
from crawlers.scaffold.synth import read
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading
from tests.crawlers.scaffold.support import cards, unit

GB = Reading(("en-GB",), market(language="en-GB"))


@pytest.fixture(autouse=True)
def declared() -> None:
    for name in DECLARED:
        register_declared(name, full_declaration(name))


@pytest.mark.parametrize(
    "byline",
    [
        "<div class='byline'>By <a rel='author' href='/author/jd'>Jane Doe</a></div>",
        "<p>By Jane Doe</p>",
        "<span class='author-name'>Jane Doe</span>",
        "<p>Por <span>Jane Doe</span></p>",
    ],
)
def test_authors(byline: str) -> None:
    u = unit(
        f"<body><main><h1>Bridge reopens</h1>{byline}<p>Text of the story here.</p></main></body>"
    )
    hit = find_author(u, Site())
    assert hit is not None and read(u, "article", "author", hit.exact, GB) == "Jane Doe"
    assert any(read(u, "article", "author", rule, GB) == "Jane Doe" for rule in hit.rules)


def test_a_company_is_the_link_to_its_page_near_the_title() -> None:
    u = unit(
        "<body><header><a href='/employers'>For employers</a></header><main><h1>Nurse</h1>"
        "<p><a href='/company/acme-health'>Acme Health</a></p></main></body>"
    )
    name = find_name(u, Site())
    hit = find_linked(u, Site(), "company", name.element if name else None)
    assert hit is not None and read(u, "job_posting", "company", hit.exact, GB) == "Acme Health"


def test_an_element_named_for_the_field() -> None:
    u = unit(
        "<body><main><h1>Flat</h1><p class='listing-address'>12 Elm Road, Leeds</p></main></body>"
    )
    hit = find_hinted(u, Site(), "address", None)
    assert hit is not None
    assert read(u, "property_listing", "address", hit.exact, GB) == "12 Elm Road, Leeds"


@pytest.mark.parametrize(
    ("markup", "iso"),
    [
        ("<time datetime='2024-03-05T10:00:00'>5 March</time>", "2024-03-05T10:00:00"),
        ("<span class='post-date'>5 March 2024</span>", "2024-03-05"),
        ("<meta itemprop='datePublished' content='2024-03-05'>", "2024-03-05"),
    ],
)
def test_dates(markup: str, iso: str) -> None:
    u = unit(f"<body><main><h1>x</h1>{markup}</main></body>")
    hit = find_dated(u, Site(languages=("en-GB",)), "published")
    assert hit is not None and read(u, "article", "published_at", hit.exact, GB) == iso


def test_a_cards_text_without_its_quotation_marks_and_its_tags() -> None:
    units = cards(
        "<div class='q'><span>“Simple things should be simple, complex things possible.”</span>"
        "<small>Alan Kay</small><a href='/tag/design'>design</a><a href='/tag/code'>code</a></div>"
        "<div class='q'><span>“The best way to predict the future is to invent it.”</span>"
        "<small>Alan Kay</small><a href='/tag/future'>future</a></div>",
        "div.q",
    )
    texts = [read(u, "quote", "text", find_text(u, Site()).exact, GB) for u in units]
    assert texts == [
        "Simple things should be simple, complex things possible.",
        "The best way to predict the future is to invent it.",
    ]
    tags = [read(u, "quote", "tags", find_tags(u, Site()).exact, GB) for u in units]
    assert tags == [["design", "code"], ["future"]]


def test_a_list_under_its_heading() -> None:
    u = unit(
        "<body><main><h1>Flat</h1><h2>Key features</h2><ul><li>Garden</li><li>Garage</li></ul>"
        "<h2>Nearby</h2><ul><li>School</li></ul></main></body>"
    )
    hit = find_list_under(u, Site(), "features")
    assert hit is not None
    assert read(u, "property_listing", "features", hit.rules[0], GB) == ["Garden", "Garage"]
