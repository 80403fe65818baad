"""Ratings and counts in the idioms sites print them."""

from __future__ import annotations

import pytest

from crawlers.scaffold.finders import Site
from crawlers.scaffold.rating import LIKES_RE, find_count, find_rating, find_review_count
from crawlers.scaffold.synth import read
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading
from tests.crawlers.scaffold.support import unit

EN = Reading(("en",), market(language="en"))
ICONS = "<span class='row'>" + "<i class='s on'></i>" * 3 + "<i class='s'></i>" * 2 + "</span>"


@pytest.mark.parametrize(
    ("markup", "rating", "reading"),
    [
        ("<p class='star-rating Three'><i></i><i></i></p>", 3.0, EN),
        ("<div class='stars' aria-label='Rated 4.5 out of 5'></div>", 4.5, EN),
        ("<span>4,5 su 5</span>", 4.5, Reading(("it",), market(language="it"))),
        ("<span class='score'>4.2/5</span>", 4.2, EN),
        ("<meta itemprop='ratingValue' content='3.5'>", 3.5, EN),
        (ICONS, 3.0, EN),
        ("<span class='r'>★★★★☆</span>", 4.0, EN),
        ("<div class='rating rating-4'></div>", 4.0, EN),
        ("<div class='stars'><span style='width: 70%'></span></div>", 3.5, EN),
    ],
)
def test_ratings(markup: str, rating: float, reading: Reading) -> None:
    u = unit(f"<body><main><h1>Lamp</h1><div>{markup}</div></main></body>")
    hit = find_rating(u, Site())
    assert hit is not None
    assert read(u, "product", "rating", hit.exact, reading) == rating
    assert any(read(u, "product", "rating", rule, reading) == rating for rule in hit.rules)


def test_a_row_of_icons_all_alike_tells_nothing() -> None:
    u = unit(
        "<body><main><span class='row'>" + "<i class='s on'></i>" * 5 + "</span></main></body>"
    )
    assert find_rating(u, Site()) is None


@pytest.mark.parametrize(
    ("text", "count", "languages"),
    [
        ("(1,234 reviews)", 1234, ("en",)),
        ("1.234 opiniones", 1234, ("es",)),
        ("12 recensioni", 12, ("it",)),
        ("1,2K Bewertungen", 1200, ("de",)),
    ],
)
def test_review_counts(text: str, count: int, languages: tuple[str, ...]) -> None:
    u = unit(f"<body><main><h1>Lamp</h1><a href='#r'>{text}</a></main></body>")
    reading = Reading(languages, market(language=languages[0]))
    hit = find_review_count(u, Site())
    assert hit is not None and read(u, "product", "review_count", hit.exact, reading) == count


def test_likes() -> None:
    u = unit("<body><main><span class='x'>59K likes</span></main></body>")
    hit = find_count(u, LIKES_RE)
    assert hit is not None and read(u, "product", "review_count", hit.exact, EN) == 59000
