"""Lost means the page has it (fingerprints.evidence), listing cards judged per field, and
``--page-type`` judging a page type as the full check does."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from fingerprints.baseline import SITES_DIR, FingerprintConfig, load_baseline
from fingerprints.coverage import CoverageBaseline, FieldExpectation
from fingerprints.evidence import PageItems, absent_fields, judge_lost, page_evidence
from fingerprints.extraction import PageOutput
from fingerprints.gate import Page, check_site, evaluate, judge_sample
from fingerprints.judgement import judge_extraction
from tests.fingerprints.test_gate_callbacks import restyle

RULES = FingerprintConfig.for_site("trustpilot").page_types["company_reviews"].shows
COVERAGE = CoverageBaseline(
    "trustpilot",
    {
        "reply": FieldExpectation(0.43, 0.4),
        "experienced_at": FieldExpectation(1.0),
        "title": FieldExpectation(1.0),
    },
)


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


def lost(body: bytes, items: Sequence[dict[str, str | None]]) -> tuple[str, ...]:
    return judge_lost([PageItems(items, page_evidence(body, RULES))], COVERAGE)


def test_no_replies_on_the_page_is_not_a_lost_reply() -> None:
    body = review_page(*(card(experienced="May 1, 2024") for _ in range(20)))
    items = [review(experienced_at="2024-05-01") for _ in range(20)]
    assert page_evidence(body, RULES) == {"reply": False, "experienced_at": True}
    assert lost(body, items) == ()
    assert absent_fields([PageItems(items, page_evidence(body, RULES))]) == ("reply",)


def test_a_reply_shown_but_not_extracted_is_lost() -> None:
    body = review_page(card(reply="Thanks!", experienced="May 1"), card(experienced="May 2"))
    items = [review(experienced_at="2024-05-01"), review(experienced_at="2024-05-02")]
    assert lost(body, items) == ("reply",)
    # Extracted: nothing lost.
    items[0]["reply"] = "Thanks!"
    assert lost(body, items) == ()


def test_a_reply_in_the_state_only_is_shown() -> None:
    state = '{"props":{"pageProps":{"reviews":[{"reply":{"message":"Thanks"}}]}}}'
    body = review_page(card(experienced="May 1"), state=state)
    assert page_evidence(body, RULES)["reply"] is True
    assert lost(body, [review(experienced_at="2024-05-01")]) == ("reply",)


def test_no_date_printed_is_not_a_lost_date() -> None:
    # One review, no date of experience: the baseline's rate of 1.0 would call it lost.
    body = review_page(card())
    assert page_evidence(body, RULES) == {"reply": False, "experienced_at": False}
    assert lost(body, [review()]) == ()


def test_a_date_printed_but_missed_is_lost() -> None:
    body = review_page(card(experienced="May 1, 2024"))
    assert lost(body, [review()]) == ("experienced_at",)


def test_fields_without_a_rule_keep_the_rate_judgement() -> None:
    body = review_page(card(experienced="May 1"))
    assert lost(body, [review(experienced_at="2024-05-01", title=None)]) == ("title",)


def test_evidence_reaches_the_verdict() -> None:
    body = review_page(card(experienced="May 1, 2024"))
    url = "https://www.trustpilot.com/review/x"
    absent = PageOutput(url, "company_reviews", "parse", (review(experienced_at="2024-05-01"),))
    shown = PageOutput(url, "company_reviews", "parse", (review(),))
    evidence = page_evidence(body, RULES)
    # (Plain dicts are no item type: only the lost fields are looked at here.)
    report = judge_extraction([replace(absent, evidence=evidence)], COVERAGE)
    assert report.page_types["company_reviews"].lost_fields == ()
    report = judge_extraction([replace(shown, evidence=evidence)], COVERAGE)
    assert report.page_types["company_reviews"].lost_fields == ("experienced_at",)


# -- the real spider: a redesigned company page without replies --------------------------------


def trustpilot_pages(edit: object) -> list[Page]:
    root = SITES_DIR / "trustpilot" / "fixtures" / "company_reviews"
    return [
        Page(
            f"https://www.trustpilot.com/review/{path.stem}",
            "company_reviews",
            200,
            {"Content-Type": "text/html"},
            edit(path.read_text()).encode(),  # type: ignore[operator]
        )
        for path in sorted(root.glob("*.html"))
    ]


def without_replies(html: str) -> str:
    html = re.sub(r'"reply":\{"[^{}]*\}', '"reply":null', html)
    reply = r"<[^<>]*data-service-review-business-reply[^<>]*>.*?</div>"
    html = re.sub(reply, "", html, flags=re.S)
    return restyle(html)


def test_a_redesigned_business_without_replies_drifts() -> None:
    baseline, config = load_baseline("trustpilot"), FingerprintConfig.for_site("trustpilot")
    pages = trustpilot_pages(without_replies)
    assert not any(page_evidence(p.body, RULES)["reply"] for p in pages)
    structural = evaluate("trustpilot", pages, baseline, config=config, mode="fixtures")
    assert structural.status == "structure_changed"
    result = judge_sample(structural, pages, baseline, config)
    assert result.verdict == "drifted", result.summary()


# -- cards of a search page ---------------------------------------------------------------------


def booking_pages(edit_search: object) -> list[Page]:
    pages = []
    for page_type in ("search", "hotel"):
        for path in sorted((SITES_DIR / "booking_com" / "fixtures" / page_type).glob("*.html")):
            body = path.read_text()
            if page_type == "search":
                body = edit_search(body)  # type: ignore[operator]
            url = f"https://www.booking.com/{page_type}/{path.stem}"
            pages.append(Page(url, page_type, 200, {"Content-Type": "text/html"}, body.encode()))
    return pages


def no_price(html: str) -> str:
    """A redesign whose cards no longer carry their price : every card lost it."""
    html = re.sub(r'"amountUnformatted": [0-9.]+', '"amountUnformatted": null', html)
    html = re.sub(r'"amount": "[^"]*"', '"amount": null', html)
    return restyle(html, ("class", "data-testid"))


def booking_verdict(edit: object, page_types: Sequence[str] | None = None) -> tuple[str, str]:
    baseline, config = load_baseline("booking_com"), FingerprintConfig.for_site("booking_com")
    pages = booking_pages(edit)
    if page_types:
        baseline, config = baseline.subset(page_types), config.subset(page_types)
        pages = [page for page in pages if page.page_type in page_types]
    structural = evaluate("booking_com", pages, baseline, config=config, mode="fixtures")
    result = judge_sample(structural, pages, baseline, config)
    return str(result.verdict), result.reason


def test_a_card_field_lost_on_every_card_stops_the_run() -> None:
    verdict, reason = booking_verdict(no_price)
    assert verdict == "structure_changed", reason
    assert "card fields lost: price" in reason
    # The same redesign with the prices kept on the cards drifts.
    assert booking_verdict(lambda h: restyle(h, ("class", "data-testid")))[0] == "drifted"


# -- --page-type: the full check's verdict, no other page type's page fetched ------------------


def test_page_type_subset_gives_the_full_verdict_and_fetches_no_detail_page() -> None:
    def redesign(html: str) -> str:
        return restyle(html, ("class", "data-testid"))

    full, _ = booking_verdict(redesign)
    subset, reason = booking_verdict(redesign, ["search"])
    assert (full, subset) == ("drifted", "drifted"), reason

    # Live (with a fetch): the hotel pages the cards lead to are never requested.
    asked: list[str] = []

    def fetch(urls: Sequence[str]) -> dict[str, Page]:
        asked.extend(urls)
        return {}

    baseline = load_baseline("booking_com").subset(["search"])
    config = FingerprintConfig.for_site("booking_com").subset(["search"])
    pages = [page for page in booking_pages(redesign) if page.page_type == "search"]
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


@pytest.mark.parametrize("edit", [no_price])
def test_the_card_defect_is_caught_by_the_subset_too(edit: object) -> None:
    verdict, reason = booking_verdict(edit, ["search"])
    assert verdict == "structure_changed" and "card fields lost" in reason, reason
