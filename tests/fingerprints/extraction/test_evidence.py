"""Absent is not lost (fingerprints.extraction.evidence), listing cards judged on the visible
page apart from the embedded store, and ``--page-type`` judging a page type as the full check
does."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from crawlers.profile_schema import Evidence, Shown
from fingerprints.baselines.store import SITES_DIR, FingerprintConfig, load_baseline
from fingerprints.extraction.callbacks import PageOutput
from fingerprints.extraction.evidence import (
    PageEvidence,
    absent_fields,
    page_evidence,
    tallies,
    tally,
)
from fingerprints.extraction.fields import ITEMS, FieldPolicy
from fingerprints.extraction.judgement import judge_extraction
from fingerprints.gate import Page, check_site, evaluate, judge_sample
from tests.fingerprints.extraction.test_callbacks import restyle

# In-process, but seconds of CPU (real pages judged field by field): the integration tier keeps
# `make test-fast` within its budget.
pytestmark = pytest.mark.integration

RULES = FingerprintConfig.for_site("trustpilot").page_types["company_reviews"]
BASELINES = {"company_reviews": {ITEMS: {"reply": 1.0, "experienced_at": 1.0, "title": 1.0}}}
POLICY = FieldPolicy(required=frozenset({"experienced_at", "title"}))


def review_page(*cards: str, state: str = "") -> bytes:
    script = f'<script id="__NEXT_DATA__" type="application/json">{state}</script>' if state else ""
    return f"<html><head>{script}</head><body><main>{''.join(cards)}</main></body></html>".encode()


def card(reply: str = "", experienced: str = "") -> str:
    parts = ['<article data-service-review-card-paper="true"><h2>Great</h2>']
    if experienced:
        parts.append(f"<p>Date of experience: <span>{experienced}</span></p>")
    if reply:
        parts.append(f"<div><p>Reply from Shop</p><p>{reply}</p></div>")
    return "".join(parts) + "</article>"


def review(**fields: str | None) -> dict[str, str | None]:
    return {"title": "Great", "reply": None, "experienced_at": None} | fields


def evidence(body: bytes) -> PageEvidence:
    return page_evidence(body, RULES.shows, RULES.absent)


def judged(body: bytes, items: Sequence[dict[str, str | None]]) -> tuple[str, ...]:
    """The fields that fell on one trustpilot page (required or not)."""
    output = PageOutput(
        "https://www.trustpilot.com/review/x", "company_reviews", "parse", tuple(items)
    )
    output = PageOutput(**{**output.__dict__, "evidence": evidence(body)})
    report = judge_extraction([output], BASELINES, POLICY)
    return tuple(f.field for f in report.page_types["company_reviews"].falls)


# -- what a page shows and lacks ----------------------------------------------------------------


def test_shows_rules_count_instances_and_the_largest_alternative_wins() -> None:
    state = '{"reviews":[{"reply":{"message":"a"}},{"reply": {"message":"b"}},{"reply":null}]}'
    body = review_page(card(reply="Thanks"), card(), state=state)
    found = evidence(body)
    # The state names two replies, the cards print one: the page shows two.
    assert found.shown == {"reply": 2, "experienced_at": 0}
    assert tally([review(reply="a"), review()], found, "reply").expected == 2
    assert tally([review(reply="a"), review()], found, "experienced_at").expected == 0


def test_absent_rules_page_re_each_and_field() -> None:
    rules = {
        "price": (
            Evidence(re=r"b_checkin_date\s*=\s*''"),
            Evidence(each='//li[contains(., "on request")]'),
        ),
        "review_score": (Evidence(field="review_count", equals=(0,)),),
        "stars": (Evidence(page="p.no-stars"),),
    }
    listing = (
        b"<html><body><ul><li>12 EUR</li><li>Price on request</li><li>9 EUR</li></ul></body></html>"
    )
    found = page_evidence(listing, {}, rules)
    assert (found.lacks, found.lacking) == (frozenset(), {"price": 1})
    cards = [{"price": 12}, {"price": None}, {"price": 9}]
    assert tally(cards, found, "price") == tally(cards[:1] + cards[2:], PageEvidence(), "price")
    assert (tally(cards, found, "price").expected, tally(cards, found, "price").filled) == (2, 2)

    undated = b"<html><script>b_checkin_date = '';</script><p class='no-stars'>-</p></html>"
    found = page_evidence(undated, {}, rules)
    assert found.lacks == {"price", "stars"}
    assert tally(cards, found, "price").expected == 0

    hotels = [{"review_count": 0, "review_score": None}, {"review_count": 12, "review_score": 8.1}]
    found = page_evidence(b"<html></html>", {}, rules)
    assert (
        tally(hotels, found, "review_score").expected,
        tally(hotels, found, "review_score").filled,
    ) == (1, 1)
    # The count lost too (None): the score is expected, so its loss shows.
    lost = [{"review_count": None, "review_score": None}]
    assert tally(lost, found, "review_score").expected == 1
    # True is no 1, and 0.0 is 0.
    assert tally([{"review_count": 0.0, "review_score": None}], found, "review_score").expected == 0
    assert (
        tally([{"review_count": False, "review_score": None}], found, "review_score").expected == 1
    )
    assert absent_fields([(hotels[:1], found)]) == ("review_score",)


def test_rules_are_checked_when_the_profile_loads() -> None:
    with pytest.raises(ValueError, match="exactly one of page, re, each, field"):
        Evidence(page="p", re="x")
    with pytest.raises(ValueError, match="field and equals together"):
        Evidence(field="review_count")
    with pytest.raises(ValueError, match="exactly one of select, re"):
        Shown()


# -- trustpilot: replies and dates of experience --------------------------------------------------


def test_no_replies_on_the_page_is_not_a_lost_reply() -> None:
    body = review_page(*(card(experienced="May 1, 2024") for _ in range(20)))
    items = [review(experienced_at="2024-05-01") for _ in range(20)]
    assert evidence(body).shown == {"reply": 0, "experienced_at": 20}
    assert judged(body, items) == ()
    # The report names it: empty, and rightly so.
    output = PageOutput(
        "https://www.trustpilot.com/review/x",
        "company_reviews",
        "parse",
        tuple(items),
        evidence=evidence(body),
    )
    report = judge_extraction([output], BASELINES, POLICY).to_dict()
    assert report["page_types"]["company_reviews"]["absent_fields"] == ["reply"]


def test_a_reply_shown_but_not_extracted_is_lost() -> None:
    body = review_page(card(reply="Thanks!", experienced="May 1"), card(experienced="May 2"))
    items = [review(experienced_at="2024-05-01"), review(experienced_at="2024-05-02")]
    assert judged(body, items) == ("reply",)
    items[0]["reply"] = "Thanks!"
    assert judged(body, items) == ()


def test_a_printed_date_the_spider_misses_is_lost_and_none_printed_is_absent() -> None:
    # The state has experiencedDate null; the cards print the date: the page shows it.
    state = '{"reviews":[{"dates":{"experiencedDate":null}}]}'
    body = review_page(card(experienced="May 1, 2024"), state=state)
    assert judged(body, [review()]) == ("experienced_at",)
    assert judged(body, [review(experienced_at="2024-05-01")]) == ()
    # Nothing printed and nothing in the state: a review without one, absent.
    assert judged(review_page(card()), [review()]) == ()


def test_fields_without_a_rule_keep_the_rate_judgement() -> None:
    body = review_page(card(experienced="May 1"))
    assert judged(body, [review(experienced_at="2024-05-01", title=None)]) == ("title",)


# -- the real spider through the gate --------------------------------------------------------------


def site_pages(
    site: str, edit: Callable[[str], str], edited: str, page_types: Sequence[str]
) -> list[Page]:
    pages = []
    host = {"trustpilot": "https://www.trustpilot.com", "booking_com": "https://www.booking.com"}
    for page_type in page_types:
        for path in sorted((SITES_DIR / site / "fixtures" / page_type).glob("*.html")):
            body = path.read_text()
            if page_type == edited:
                body = edit(body)
            url = f"{host[site]}/{page_type}/{path.stem}?checkin=2026-03-01&checkout=2026-03-02"
            pages.append(Page(url, page_type, 200, {"Content-Type": "text/html"}, body.encode()))
    return pages


def verdict_of(
    site: str, pages: list[Page], page_types: Sequence[str] | None = None
) -> tuple[str, str]:
    baseline, config = load_baseline(site), FingerprintConfig.for_site(site)
    if page_types:
        baseline, config = baseline.subset(page_types), config.subset(page_types)
    structural = evaluate(site, pages, baseline, config=config, mode="fixtures")
    result = judge_sample(structural, pages, baseline, config)
    return str(result.verdict), result.reason


def without_replies(html: str) -> str:
    html = re.sub(r'"reply": ?\{"[^{}]*\}', '"reply": null', html)
    reply = r"<[^<>]*data-service-review-business-reply[^<>]*>.*?</div>"
    return restyle(re.sub(reply, "", html, flags=re.S))


def test_a_redesigned_business_without_replies_drifts() -> None:
    pages = site_pages("trustpilot", without_replies, "company_reviews", ["company_reviews"])
    assert not any(evidence(p.body).shown["reply"] for p in pages)
    assert verdict_of("trustpilot", pages)[0] == "drifted"


def test_dates_of_experience_lost_on_a_matching_layout_stop_the_run() -> None:
    """The printed date stays on every card but the spider reads none (here: the card's
    date removed from what it reads, the state's set to null): extraction_broken."""

    def unread(html: str) -> str:
        html = re.sub(r'"experiencedDate": ?"[^"]*"', '"experiencedDate": null', html)
        # The printed date moves to an element the spider does not read.
        return re.sub(
            r'<p ([^>]*)data-service-review-date-of-experience-typography="true">(.*?)</p>',
            r"<div \1>\2</div>",
            html,
            flags=re.S,
        )

    pages = site_pages("trustpilot", unread, "company_reviews", ["company_reviews"])
    verdict, reason = verdict_of("trustpilot", pages)
    assert verdict == "extraction_broken", reason
    assert "experienced_at: 0 of" in reason


# -- booking.com: cards, visible and embedded, a holiday home, an undated search ------------------


SEARCH_ONLY = ["search"]


def no_price(html: str) -> str:
    """A redesign whose cards no longer carry their price: every card lost it."""
    html = re.sub(r'"amountUnformatted": [0-9.]+', '"amountUnformatted": null', html)
    html = re.sub(r'"amount": "[^"]*"', '"amount": null', html)
    return restyle(html, ("class", "data-testid"))


def no_visible_price(html: str) -> str:
    """The same layout; the cards show no price any more, the embedded store still has it."""
    return re.sub(r'(data-testid="price-and-discounted-price"[^>]*>)[^<]*', r"\1", html)


def test_a_card_field_lost_on_every_card_stops_the_run() -> None:
    verdict, reason = verdict_of(
        "booking_com", site_pages("booking_com", no_price, "search", ["search", "hotel"])
    )
    assert verdict == "extraction_broken", reason
    assert "price: 0 of" in reason
    # The same redesign with the prices kept on the cards drifts.
    kept = site_pages(
        "booking_com", lambda h: restyle(h, ("class", "data-testid")), "search", ["search", "hotel"]
    )
    assert verdict_of("booking_com", kept)[0] == "drifted"


def test_prices_gone_from_the_visible_cards_stop_a_matching_layout() -> None:
    """The issue's false pass: the layout still matches and the store backs the cards, but
    the cards users see show no price. The visible cards are judged apart."""
    pages = site_pages("booking_com", no_visible_price, "search", SEARCH_ONLY)
    structural = evaluate(
        "booking_com",
        pages,
        load_baseline("booking_com").subset(SEARCH_ONLY),
        config=FingerprintConfig.for_site("booking_com").subset(SEARCH_ONLY),
    )
    assert structural.status == "passed"
    verdict, reason = verdict_of("booking_com", pages, SEARCH_ONLY)
    assert verdict == "extraction_broken", reason
    assert "price: 0 of" in reason and "visible cards" in reason


def test_an_undated_search_shows_no_price_and_loses_none() -> None:
    def undated(html: str) -> str:
        html = no_visible_price(
            re.sub(r'"amountUnformatted": [0-9.]+', '"amountUnformatted": null', html)
        )
        html = re.sub(r'"amount": "[^"]*"', '"amount": null', html)
        return html.replace("</body>", "<script>var b = {b_checkin_date: ''};</script></body>")

    verdict, reason = verdict_of(
        "booking_com", site_pages("booking_com", undated, "search", SEARCH_ONLY), SEARCH_ONLY
    )
    assert verdict == "passed", reason


def test_a_holiday_home_without_reviews_has_no_score_to_lose() -> None:
    """reviewsCount 0, no score block, no aggregateRating: review_score absent, not lost."""
    path = SITES_DIR / "booking_com" / "fixtures" / "hotel" / "casa-del-lago-atlanga.html"
    body = path.read_bytes()
    page = Page(
        "https://www.booking.com/hotel/mx/casa-del-lago-atlanga.html", "hotel", 200, {}, body
    )
    verdict, reason = verdict_of("booking_com", [page], ["hotel"])
    assert verdict == "passed", reason
    # The same page claiming 5 reviews, its score unread: lost.
    claimed = body.replace(b'"score": 0, "reviewsCount": 0', b'"score": null, "reviewsCount": 5')
    assert claimed != body
    page = Page(page.url, "hotel", 200, {}, claimed)
    verdict, reason = verdict_of("booking_com", [page], ["hotel"])
    assert verdict == "extraction_broken" and "review_score: 0 of 1" in reason, reason


# -- --page-type: the full check's verdict, no other page type's page fetched ------------------


def test_page_type_subset_gives_the_full_verdict_and_fetches_no_detail_page() -> None:
    def redesign(html: str) -> str:
        return restyle(html, ("class", "data-testid"))

    full, _ = verdict_of(
        "booking_com", site_pages("booking_com", redesign, "search", ["search", "hotel"])
    )
    subset, reason = verdict_of(
        "booking_com", site_pages("booking_com", redesign, "search", SEARCH_ONLY), SEARCH_ONLY
    )
    assert (full, subset) == ("drifted", "drifted"), reason

    # Live (with a fetch): the hotel pages the cards lead to are never requested.
    asked: list[str] = []

    def fetch(urls: Sequence[str]) -> dict[str, Page]:
        asked.extend(urls)
        return {}

    baseline = load_baseline("booking_com").subset(SEARCH_ONLY)
    config = FingerprintConfig.for_site("booking_com").subset(SEARCH_ONLY)
    pages = site_pages("booking_com", redesign, "search", SEARCH_ONLY)
    structural = evaluate("booking_com", pages, baseline, config=config)
    result = judge_sample(structural, pages, baseline, config, fetch=fetch)
    assert result.verdict == "drifted", result.summary()
    assert asked == []


def test_check_page_type_matches_the_full_check(tmp_path: Path) -> None:
    sites = tmp_path / "sites"
    shutil.copytree(SITES_DIR / "booking_com", sites / "booking_com")
    for path in (sites / "booking_com" / "fixtures" / "search").glob("*.html"):
        path.write_text(restyle(path.read_text(), ("class", "data-testid")))
    full = check_site("booking_com", sites_dir=sites)
    subset = check_site("booking_com", sites_dir=sites, page_types=["search"])
    assert (full.verdict, subset.verdict) == ("drifted", "drifted"), subset.summary()


def test_the_card_defect_is_caught_by_the_subset_too() -> None:
    verdict, reason = verdict_of(
        "booking_com", site_pages("booking_com", no_price, "search", SEARCH_ONLY), SEARCH_ONLY
    )
    assert verdict == "extraction_broken" and "price: 0 of" in reason, reason


def test_tallies_sum_pages() -> None:
    found = tallies([([{"a": 1}, {"a": None}], PageEvidence()), ([{"a": 2}], PageEvidence())])
    assert (found["a"].expected, found["a"].filled) == (3, 2)


def test_a_field_the_item_type_lacks_is_named_when_the_gate_reads_the_profile(
    tmp_path: Path,
) -> None:
    from crawlers.profiles import PROFILES_DIR
    from fingerprints.baselines.store import BaselineError

    text = (PROFILES_DIR / "trustpilot.toml").read_text()
    for old, new, key in (
        ('required = ["subject"', 'required = ["subjct"', "required"),
        ("experienced_at = [\n", "experienced_on = [\n", "page_types.company_reviews.shows"),
    ):
        (tmp_path / "trustpilot.toml").write_text(text.replace(old, new, 1))
        with pytest.raises(BaselineError) as raised:
            FingerprintConfig.for_site("trustpilot", tmp_path)
        message = str(raised.value)
        assert (
            f"[fingerprint] {key} names" in message and "no field of item type 'review'" in message
        )
        assert "\n" not in message
        result = check_site("trustpilot", profiles_dir=tmp_path)
        assert (result.verdict, result.passed) == ("no_baseline", False)


def test_a_page_that_says_it_has_no_record_loses_none() -> None:
    """A product nobody reviewed yet (its aggregate's count 0) yields no review: the
    callback's silence is no loss there; anywhere else it is."""
    rules = FingerprintConfig.for_site("g2").page_types["product_reviews"]
    url = "https://www.g2.com/products/new/reviews"

    def aggregate(count: int) -> bytes:
        return (
            '<html><body><div itemscope itemtype="http://schema.org/SoftwareApplication">'
            '<span itemprop="aggregateRating" itemscope>'
            f'<meta content="{count}" itemprop="reviewCount"></span></div></body></html>'
        ).encode()

    for count, complete in ((0, True), (12, False)):
        found = page_evidence(aggregate(count), rules.shows, rules.absent, rules.empty)
        assert found.empty is (count == 0)
        output = PageOutput(url, "product_reviews", "parse", evidence=found)
        report = judge_extraction([output])
        assert report.complete is complete, report.problems()
    with pytest.raises(ValueError, match="empty rules of page or re"):
        FingerprintConfig.from_mapping(
            {"page_types": {"p": {"empty": {"field": "review_count", "equals": 0}}}}
        )
