"""g2: microdata extraction on the saved real page and fixtures, block pages, a replay crawl."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from crawlers.spiders.g2 import G2Spider, extract_product_page
from harness.replay_site import ReplaySite
from tests.sites.support import (
    crawl,
    fixture,
    fixture_response,
    real_page,
    real_response,
    response,
    verdict,
)

SITE = "g2"
HOST = "https://www.g2.com"
FIXTURES = "fixtures/product_reviews"


def test_real_product_reviews_page() -> None:
    url = f"{HOST}/products/opusclip/reviews"
    page = extract_product_page(real_response("g2/product_reviews_2025.html", url))
    assert page.subject is not None
    assert (page.subject.name, page.subject.subject_id, page.subject.category) == (
        "OpusClip",
        "opusclip",
        "Video Editing Software",
    )
    assert (page.rating, page.review_count, len(page.reviews)) == (4.7, 110, 10)
    assert page.next_url == f"{url}?focus_review=9399412&page=2&product_id=opusclip"
    first = page.reviews[0]
    expected = {
        "review_id": "11033491",
        "url": f"{url}/opusclip-review-11033491",
        "author": "Treyson N.",
        "rating": 4.5,
        "rating_scale": 5.0,
        "title": "Quick and easy video editing tool",
        "published_at": "2025-04-09",
        "verified": True,
        "helpful_count": 0,
    }
    assert {k: first[k] for k in expected} == expected
    assert first["pros"].startswith("I like how much time Opus saves the user")
    assert first["cons"].startswith("Opus has several things being beta tested")
    assert "Review collected by and hosted on G2.com" not in first["pros"]
    assert first["body"].startswith("What do you like best about OpusClip?\nI like how much")
    assert [(r["author"], r["rating"]) for r in page.reviews[1:3]] == [
        ("Eric S.", 2.0),
        ("Don M.", 5.0),
    ]


def _without_microdata(body: bytes) -> bytes:
    return re.sub(rb'\s(itemscope(="[^"]*")?|itemtype="[^"]*"|itemprop="[^"]*")', b"", body)


@pytest.mark.parametrize(
    ("source", "url"),
    [
        pytest.param("real", f"{HOST}/products/opusclip/reviews", id="real"),
        pytest.param("fixture", f"{HOST}/products/clipforge/reviews", id="fixture"),
    ],
)
def test_review_blocks_without_microdata_give_the_same_reviews(source: str, url: str) -> None:
    path = (
        real_page("g2/product_reviews_2025.html")
        if source == "real"
        else fixture(SITE, f"{FIXTURES}/clipforge-reviews.html")
    )
    full = extract_product_page(response(path, url))
    bare = extract_product_page(response(path, url, _without_microdata(path.read_bytes())))
    keys = ("review_id", "author", "rating", "title", "published_at", "pros", "cons")
    assert [tuple(r[k] for k in keys) for r in bare.reviews] == [
        tuple(r[k] for k in keys) for r in full.reviews
    ]


def test_fixture_pages_paginate() -> None:
    url = f"{HOST}/products/clipforge/reviews"
    first = extract_product_page(fixture_response(SITE, f"{FIXTURES}/clipforge-reviews.html", url))
    assert first.next_url == f"{url}?page=2"
    assert [r["review_id"] for r in first.reviews] == [
        "81000101",
        "81000102",
        "81000103",
        "81000104",
    ]
    last = extract_product_page(
        fixture_response(SITE, f"{FIXTURES}/clipforge-reviews-page-2.html", f"{url}?page=2")
    )
    assert last.next_url is None


def test_a_page_without_a_product_is_counted() -> None:
    crawler = get_crawler(G2Spider)
    spider = G2Spider.from_crawler(crawler, base_url=HOST)
    blank = response(Path("x.html"), f"{HOST}/products/x/reviews", b"<html><body></body></html>")
    assert list(spider.parse(blank)) == []
    assert crawler.stats is not None
    assert crawler.stats.get_value("g2/product_reviews_unparsed") == 1


def test_datadome_pages_are_captchas_and_real_pages_are_not() -> None:
    # The same vendor answers idealista and g2: the saved block page is idealista's.
    assert verdict(
        SITE, real_page("idealista/datadome_block_page.html").read_bytes(), 403
    ).kind == ("captcha")
    ours = fixture(SITE, "blocked/datadome-captcha.html").read_bytes()
    assert verdict(SITE, ours, 200).kind == "captcha"
    other_host = verdict(SITE, fixture(SITE, "blocked/datadome-no-script.html").read_bytes(), 200)
    assert (other_host.kind, other_host.reason) == (
        "challenge",
        "datadome interstitial text on a thin page",
    )
    # The real page loads DataDome's tags.js and Cloudflare's bot detection: a real page.
    assert verdict(SITE, real_page("g2/product_reviews_2025.html").read_bytes()).ok
    for path in sorted(fixture(SITE, FIXTURES).glob("*.html")):
        assert verdict(SITE, path.read_bytes()).ok, path.name


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    with ReplaySite(SITE, run_dir=tmp_path_factory.mktemp("replay")) as site:
        yield site


def test_crawl_of_the_replay_follows_pagination(replay: ReplaySite, tmp_path: Path) -> None:
    replay.clear_log()
    result = crawl(SITE, replay, tmp_path)
    assert result.returncode == 0, result.log[-3000:]
    assert result.errors() == []
    by_id = {item["review_id"]: item for item in result.items}
    assert sorted(by_id) == [
        "81000101",
        "81000102",
        "81000103",
        "81000104",
        "81000105",
        "81000201",
        "81000202",
    ]
    assert result.stat("validation/valid/review") == 7
    page_two = by_id["81000105"]
    assert page_two["subject"]["name"] == "Clipforge"
    assert (page_two["subject_rating"], page_two["subject_review_count"]) == (4.6, 5)
    assert page_two["url"] == f"{replay.url}/products/clipforge/reviews/clipforge-review-81000105"
    assert page_two["cons"] == "Captions for strong accents need a second pass."
    paths = [entry["path"] for entry in replay.access_log()]
    assert "/products/clipforge/reviews?page=2" in paths
    assert all(entry["proxied"] for entry in replay.access_log())


# -- the 2023 layout: questions as h5 headings, a four-level breadcrumb -----------------------


def test_the_2023_layout_real_page_gives_pros_cons_and_the_category() -> None:
    url = f"{HOST}/products/zoominfo-salesos/reviews"
    page = extract_product_page(real_response("g2/product_reviews_2023.html", url))
    assert page.subject is not None
    # Home > Sales Intelligence Software > ZoomInfo SalesOS > Reviews: the entry linking to
    # /categories/, not the third one (the product's name).
    assert page.subject.category == "Sales Intelligence Software"
    assert len(page.reviews) == 25
    with_questions = [r for r in page.reviews if r["body"] and "?" in r["body"]]
    assert len(with_questions) == 24  # one video review has no questionnaire
    assert all(r["pros"] and r["cons"] for r in with_questions)
    first = page.reviews[0]
    assert first["pros"].startswith("The ability to pull contact information")
    assert first["cons"].startswith("Their customer service is absolutely terrible")
    assert "Review collected by and hosted on G2.com" not in first["cons"]
    assert first["body"].startswith("What do you like best about ZoomInfo SalesOS?\nThe ability")


def test_the_2023_layout_fixture_and_answers_of_several_paragraphs() -> None:
    url = f"{HOST}/products/pipewise/reviews"
    path = "fixtures/product_reviews_2023/pipewise-reviews.html"
    page = extract_product_page(fixture_response(SITE, path, url))
    assert page.subject is not None and page.subject.category == "Lead Routing Software"
    assert [(r["review_id"], bool(r["pros"]), bool(r["cons"])) for r in page.reviews] == [
        (rid, True, True) for rid in ("82000101", "82000102", "82000103", "82000104")
    ]
    second = page.reviews[1]
    assert second["pros"] == (
        "Territory maps import straight from our spreadsheet.\n"
        "Working hours per rep are respected, holidays included."
    )
    assert second["cons"].startswith("Reports cannot be scheduled")


def _breadcrumb_page(*entries: tuple[str, str]) -> bytes:
    items = "".join(
        '<li itemprop="itemListElement" itemscope itemtype="http://schema.org/ListItem">'
        f'<a itemprop="item" href="{href}"><span itemprop="name">{name}</span></a></li>'
        for name, href in entries
    )
    return (
        '<html><body><div itemscope itemtype="http://schema.org/SoftwareApplication">'
        '<meta itemprop="applicationCategory" content="BusinessApplication">'
        '<div itemprop="name">Acme</div>'
        f'<ol itemscope itemtype="http://schema.org/BreadcrumbList">{items}</ol>'
        "</div></body></html>"
    ).encode()


@pytest.mark.parametrize(
    ("entries", "category"),
    [
        # Five levels (2025): the most specific category link.
        (
            [
                ("Home", "/"),
                ("Video Software", "/categories/video"),
                ("Video Editing Software", "https://www.g2.com/categories/video-editing"),
                ("Acme", "/products/acme/reviews"),
                ("Acme Reviews", "/products/acme/reviews#details"),
            ],
            "Video Editing Software",
        ),
        # Four levels (2023): the second entry, not the third (the product).
        (
            [
                ("Home", "/"),
                ("CRM Software", "/categories/crm"),
                ("Acme", "/products/acme/reviews"),
                ("Acme Reviews", "/products/acme/reviews#details"),
            ],
            "CRM Software",
        ),
        # No entry links to a category: the microdata's category, never the product.
        (
            [("Home", "/"), ("Acme", "/products/acme/reviews"), ("Acme Reviews", "/x")],
            "BusinessApplication",
        ),
    ],
)
def test_the_category_is_the_breadcrumb_entry_linking_to_a_category(
    entries: list[tuple[str, str]], category: str
) -> None:
    url = f"{HOST}/products/acme/reviews"
    page = extract_product_page(response(Path("x.html"), url, _breadcrumb_page(*entries)))
    assert page.subject is not None
    assert page.subject.category == category


def test_a_questionnaire_without_answer_paragraphs_is_read_from_the_body_text() -> None:
    """An older markup: questions and answers as plain elements inside the review body."""
    block = (
        '<div id="survey-response-77" itemprop="review" itemscope '
        'itemtype="http://schema.org/Review"><a class="pjax" href="/x-review-77">t</a>'
        '<div itemprop="reviewBody"><strong>What do you like best?</strong><br>Fast setup.'
        "<br><strong>What do you dislike?</strong><br>Slow exports.<br>Big files.</div></div>"
    )
    body = _breadcrumb_page(("Home", "/")).replace(b"</ol>", b"</ol>" + block.encode())
    page = extract_product_page(response(Path("x.html"), f"{HOST}/products/acme/reviews", body))
    (review,) = page.reviews
    assert (review["pros"], review["cons"]) == ("Fast setup.", "Slow exports.\nBig files.")
