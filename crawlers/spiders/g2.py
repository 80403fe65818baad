"""g2.com: the reviews of monitored software products, page by page.

``scrapy crawl g2 -O reviews.jsonl [-a base_url=http://127.0.0.1:8013]``

Start entries are product review pages (``/products/<slug>/reviews``). The page marks
up the product as schema.org microdata (``SoftwareApplication`` / ``Product`` with
``aggregateRating``) and every review as a nested ``Review`` (rating, author, date,
title, body). G2's review body is a questionnaire ("What do you like best about X?",
"What do you dislike ...?"): each answer (``p.formatted-text``) belongs to the question
before it, whatever element prints the question (a ``div.l5`` in 2025, an ``h5.l5`` in
2023); the answers become ``body``, and ``pros`` / ``cons`` by what their question asks
(the first two answers when no question says). The microdata is read first; the review
blocks' markup (``div#survey-response-<id>``, ``.stars-N``, ``time``) fills what it
lacks. The product's category is the breadcrumb entry that links to a category page
(``/categories/<slug>``), the most specific one, at whatever depth the trail puts it.
Pagination: the profile's ``next_page`` links, the one reading "Next", up to
``MAX_LISTING_PAGES``.

G2 is behind DataDome (real pages load its ``tags.js``, which is not a block); its
CAPTCHA answer is classified by the fetch middleware and retried through another proxy.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import scrapy
from parsel import Selector
from scrapy.http import Response, TextResponse

from crawlers.items import Review, ReviewSubject
from crawlers.profiles import PageSelectors
from crawlers.spiders.base import page_selectors
from crawlers.spiders.common import (
    ProductionSpider,
    css_text,
    first,
    has_type,
    long_text,
    structured_nodes,
    text,
    to_float,
    to_int,
)
from crawlers.spiders.fallbacks import Picked, pick

REVIEW_FIELDS = ("author", "rating", "title", "published_at", "pros", "cons")
_BLOCK_ID = re.compile(r"survey-response-(\d+)")
_LINK_ID = re.compile(r"-review-(\d+)")
_STARS = re.compile(r"\bstars-(\d+)\b")
_PRODUCT_SLUG = re.compile(r"/products/([^/?#]+)")
_BOILERPLATE = "Review collected by and hosted on G2.com."
_VERIFIED_TAGS = ("validated reviewer", "verified current user")
# Microdata review blocks, and blocks that lost their microdata (the markup fallback).
_REVIEW_BLOCKS = (
    '//*[@itemprop="review"][@itemscope]'
    ' | //div[starts-with(@id, "survey-response-")][not(@itemscope)]'
)
_ANSWERS = './/p[contains(@class, "formatted-text")]'
# An answer's text without G2's "Review collected by and hosted on G2.com." stamp.
_ANSWER_TEXT = './/text()[not(ancestor::span[contains(@class, "spht")])]'
# What a question asks: the dislike first ("dislike" contains "like").
_CONS_QUESTION = re.compile(r"\bdislike|\bdon.?t like|\bdo not like|\bcons\b|\bworst\b", re.I)
_PROS_QUESTION = re.compile(r"\blike\b|\bpros\b|\bbest\b", re.I)
_QUESTION_CHARS = 300  # a question is a short text ending with "?"
_CATEGORY_LINK = re.compile(r"/categories/[^/?#]+")


@dataclass
class ProductPage:
    subject: ReviewSubject | None
    rating: float | None = None
    review_count: int | None = None
    reviews: list[dict[str, Any]] = field(default_factory=list)
    next_url: str | None = None
    picked: list[Picked] = field(default_factory=list)  # each review's, its sources named


class G2Spider(ProductionSpider):
    name = "g2"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Review | scrapy.Request]:
        """A product reviews page: its reviews, then the next page."""
        if not isinstance(response, TextResponse):
            self.fail(response, "product_reviews", "not a text response")
            return
        page = extract_product_page(response, self.selectors("product_reviews"))
        if page.subject is None:
            self.fail(response, "product_reviews", "no product on the page")
            return
        if not page.reviews:
            self.logger.warning("%s: a product page without reviews", response.url)
            self.count("pages_without_reviews")
        for picked in page.picked:
            fields = self.picked(response.url, picked)
            self.note_missing(response.url, fields, REVIEW_FIELDS)
            self.count("reviews")
            yield Review(
                **fields,
                subject=page.subject,
                subject_rating=page.rating,
                subject_review_count=page.review_count,
            )
        number = int(response.meta.get("listing_page", 1))
        if page.next_url and number < self.max_pages:
            yield response.follow(
                page.next_url,
                callback=self.parse,
                errback=self.on_error,
                meta={"listing_page": number + 1},
            )


# -- extraction (pure functions: tests feed them saved pages) ------------------------------


def extract_product_page(
    response: TextResponse, selectors: PageSelectors | None = None
) -> ProductPage:
    """A product reviews page. ``selectors``: the profile's ``product_reviews`` selectors
    (default: the shipped profile's)."""
    items = structured_nodes(response, "microdata", html_nodes=True)
    product = next((i for i in items if has_type(i, "SoftwareApplication")), None) or next(
        (i for i in items if has_type(i, "Product")), {}
    )
    # A review block's microdata item, found by its element (blocks without one: markup only).
    by_element = {item["htmlNode"]: item for item in items}
    rating = first(product.get("aggregateRating"))
    rating = rating if isinstance(rating, dict) else {}
    name = text(first(product.get("name"))) or css_text(
        response, ".product-head__title [itemprop=name] ::text"
    )
    slug_match = _PRODUCT_SLUG.search(urlparse(response.url).path)
    subject = None
    if name:
        slug = slug_match.group(1) if slug_match else None
        subject = ReviewSubject(
            kind="product",
            name=name,
            subject_id=slug,
            url=response.urljoin(f"/products/{slug}/reviews") if slug else response.url,
            category=breadcrumb_category(response)
            or text(first(product.get("applicationCategory"))),
        )
    language = text(response.xpath("/html/@lang").get())
    picked = [
        review
        for element in response.xpath(_REVIEW_BLOCKS)
        if (review := _review(element, by_element.get(element.root, {}), response, language))
    ]
    return ProductPage(
        subject=subject,
        rating=to_float(first(rating.get("ratingValue"))),
        review_count=to_int(first(rating.get("reviewCount"))),
        reviews=[review.fields for review in picked],
        picked=picked,
        next_url=_next_url(response, page_selectors("g2", "product_reviews", selectors)),
    )


def _review(
    element: Selector, item: dict[str, Any], response: TextResponse, language: str | None
) -> Picked | None:
    """One review block: its microdata ``item`` (empty when the block lost it), then markup."""
    block_id = _BLOCK_ID.search(element.root.get("id") or "")
    link = element.css('a.pjax[href*="-review-"]::attr(href)').get()
    link_id = _LINK_ID.search(link or "")
    found = block_id or link_id
    review_id = found.group(1) if found else None
    if not review_id:
        return None
    rating = first(item.get("reviewRating"))
    rating = rating if isinstance(rating, dict) else {}
    author = first(item.get("author"))
    author = author if isinstance(author, dict) else {}
    stars = _STARS.search(" ".join(element.css(".stars::attr(class)").getall()))
    sections = _sections(element)
    pros, cons = _pros_cons(sections)
    tags = " ".join(element.css(".tags--teal ::text").getall()).lower()
    votes = element.css("[data-voting-options]::attr(data-voting-options)").get()
    # Each of these from the first source whose value fits (crawlers.spiders.fallbacks):
    # the block's microdata, then its markup; the body the other way round (the markup has
    # every question with its answer, the microdata one text).
    microdata = {
        "author": text(first(author.get("name"))),
        "rating": to_float(first(rating.get("ratingValue"))),
        "title": _unquoted(text(first(item.get("name")))),
        "body": long_text(_strip_boilerplate(text(first(item.get("reviewBody"))))),
        "published_at": text(first(item.get("datePublished"))),
    }
    markup = {
        "author": css_text(element, "a.link--header-color::text"),
        "rating": int(stars.group(1)) / 2 if stars else None,  # stars-9 = 4.5 of 5
        "title": _unquoted(css_text(element, "a.pjax .l2 ::text")),
        "body": long_text("\n\n".join(f"{q}\n{a}" for q, a in sections.items())),
        "published_at": text(element.css("time::attr(datetime)").get()),
    }
    picked = pick(
        "review",
        [("microdata", microdata), ("dom", markup)],
        order={"body": ("dom", "microdata")},
    )
    fields = {
        "url": response.urljoin(link) if link else f"{response.url}#survey-response-{review_id}",
        "review_id": review_id,
        **picked.fields,
        "rating_scale": to_float(first(rating.get("bestRating"))) or 5.0,
        "pros": pros,
        "cons": cons,
        "language": language,
        "verified": any(tag in tags for tag in _VERIFIED_TAGS),
        "helpful_count": _votes(votes),
    }
    return dataclasses.replace(picked, fields=fields)


def _unquoted(title: str | None) -> str | None:
    return title.strip('"“”') if title else None


def breadcrumb_category(response: TextResponse) -> str | None:
    """The most specific breadcrumb entry linking to a category page (``/categories/
    <slug>``): Home > Video Software > Video Editing Software > product > reviews gives
    "Video Editing Software", Home > Sales Intelligence Software > product > reviews
    gives "Sales Intelligence Software"."""
    found = None
    for entry in response.css('[itemtype$="BreadcrumbList"] [itemprop=itemListElement]'):
        href = entry.css("[itemprop=item]::attr(href), a::attr(href)").get() or ""
        name = text(" ".join(entry.css("[itemprop=name] ::text").getall()))
        if name and _CATEGORY_LINK.search(urlparse(href).path):
            found = name
    return found


def _sections(element: Selector) -> dict[str, str]:
    """The questionnaire: question -> answer, in page order. Each answer paragraph belongs
    to the last question printed before it (a short text ending with "?"), whatever its
    tag."""
    answers = {id(node.root): node for node in element.xpath(_ANSWERS)}
    sections: dict[str, str] = {}
    question: str | None = None
    for node in element.root.iter():
        if id(node) in answers:
            answer = text(" ".join(answers[id(node)].xpath(_ANSWER_TEXT).getall()))
            if question and answer:  # an answer of several paragraphs: each one kept
                sections[question] = "\n".join(filter(None, (sections.get(question), answer)))
            continue
        if not isinstance(node.tag, str) or node.tag in ("script", "style"):
            continue
        own = text(node.text_content()) if hasattr(node, "text_content") else None
        if own and own.endswith("?") and len(own) <= _QUESTION_CHARS:
            question = own
    return sections or _body_sections(element)


def _body_sections(element: Selector) -> dict[str, str]:
    """A layout without answer paragraphs: the review body's text, each question a short
    text ending with "?", its answer the text up to the next question."""
    sections: dict[str, str] = {}
    question: str | None = None
    for body in element.xpath('.//*[@itemprop="reviewBody"]')[:1]:
        for piece in body.xpath(_ANSWER_TEXT).getall():
            line = text(piece)
            if not line:
                continue
            if line.endswith("?") and len(line) <= _QUESTION_CHARS:
                question = line
            elif question:
                sections[question] = "\n".join(filter(None, (sections.get(question), line)))
    return sections


def _pros_cons(sections: dict[str, str]) -> tuple[str | None, str | None]:
    """What the reviewer likes and dislikes, by what the questions ask; by position (the
    first two answers) when no question says."""
    pros = next(
        (
            a
            for q, a in sections.items()
            if _PROS_QUESTION.search(q) and not _CONS_QUESTION.search(q)
        ),
        None,
    )
    cons = next((a for q, a in sections.items() if _CONS_QUESTION.search(q)), None)
    if pros is None and cons is None:
        answers = list(sections.values())
        return (answers[0] if answers else None), (answers[1] if len(answers) > 1 else None)
    return pros, cons


def _strip_boilerplate(value: str | None) -> str | None:
    return text(value.replace(_BOILERPLATE, " ")) if value else None


def _votes(raw: str | None) -> int | None:
    if not raw:
        return None
    try:
        return to_int(json.loads(raw).get("up"))
    except (ValueError, AttributeError):
        return None


def _next_url(response: TextResponse, shown: PageSelectors) -> str | None:
    for link in response.css(shown["next_page"]):
        if "next" in " ".join(link.css("::text").getall()).lower():
            href = link.attrib.get("href")
            if href:
                return response.urljoin(href)
    href = response.css('link[rel="next"]::attr(href)').get()
    return response.urljoin(href) if href else None
