"""A run's final word from its job document (orchestration.outcome): pure, on documents
built by core.jobs.index from the counters a crawl writes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from core.jobs.index import job_document
from orchestration.outcome import (
    COMPLETED,
    INCOMPLETE,
    NOTHING_STORED,
    WARNINGS,
    judge,
)

NOW = dt.datetime(2026, 12, 2, 4, 0, tzinfo=dt.UTC)
GOOD = {
    "items/scraped": 20,
    "items/new": 20,
    "items/stored": 20,
    "pages/total": 25,
    "pages/requests": 25,
    "downloader/response_count": 27,
}


def document(counters: dict[str, int], **fields: Any) -> dict[str, Any]:
    doc = job_document("shop", "shop-1", "completed", NOW, NOW, counters)
    return doc | fields


def test_a_job_that_stored_everything_it_found_is_plain_completed() -> None:
    outcome = judge(document(GOOD))
    assert (outcome.state, outcome.status, outcome.failed) == (COMPLETED, "completed", False)
    assert (outcome.losses, outcome.warnings, outcome.message) == ((), (), "")


def test_unparsed_pages_lose_items_the_run_is_incomplete() -> None:
    outcome = judge(document(GOOD | {"shop/product_unparsed": 124}))
    assert (outcome.state, outcome.status, outcome.failed) == (INCOMPLETE, "incomplete", True)
    assert outcome.message == (
        "124 page(s) could not be parsed (shop/product_unparsed 124): "
        "their items are missing from this job"
    )


@pytest.mark.parametrize(
    ("counters", "line"),
    [
        ({"pages/refused": 3}, "3 page(s) refused by the site (every answer a block)"),
        # A generic spider's errback counts both families: one request, counted once.
        (
            {
                "fetch/gave_up/network": 781,
                "errors/request_failed/TCPTimedOutError": 781,
                "shop/request_failed": 781,
            },
            "781 request(s) failed for good",
        ),
        (
            {"items/invalid": 4, "validation/invalid/product/price/float_type": 4},
            "4 item(s) dropped by validation (price float_type 4)",
        ),
        (
            {"items/stored": 15, "store/dead_letter": 5},
            "5 of 20 item(s) not stored (5 dead-lettered)",
        ),
        (
            {"items/incomplete": 2, "parts/gave_up/reviews": 2},
            "2 item(s) stored without some of their parts (gave_up/reviews 2): "
            "fetched again next run",
        ),
    ],
)
def test_every_kind_of_loss_is_named_with_its_figure(counters: dict[str, int], line: str) -> None:
    outcome = judge(document(GOOD | counters))
    assert outcome.state == INCOMPLETE
    assert outcome.losses == (line,)


def test_a_field_coverage_drop_is_a_loss() -> None:
    drop = {"field": "price", "expected": 1.0, "actual": 0.4, "tolerance": 0.1}
    outcome = judge(document(GOOD), coverage={"drops": [drop], "items": 20})
    assert (outcome.state, outcome.losses) == (INCOMPLETE, ("field coverage dropped: price",))


def test_warnings_that_lose_nothing_stay_completed() -> None:
    outcome = judge(
        document(GOOD | {"log_count/ERROR": 3, "budget/reached/pages": 1}),
        drift="listing: skeleton changed",
        errors_per_1000_pages=10,
    )
    assert (outcome.state, outcome.status, outcome.failed) == (WARNINGS, "completed", False)
    assert outcome.losses == ()
    assert outcome.warnings == (
        "3 ERROR log line(s) in 25 pages fetched (over 10 per 1,000 pages)",
        "crawl budget reached, the crawl was cut short: pages",
        "structure drifted (the data still came out): listing: skeleton changed",
    )
    assert outcome.message == "; ".join(outcome.warnings)


def test_a_loss_and_a_warning_lead_with_the_loss() -> None:
    outcome = judge(document(GOOD | {"shop/listing_unparsed": 1}), drift="drifted")
    assert outcome.state == INCOMPLETE
    assert outcome.message.startswith("1 page(s) could not be parsed")
    assert outcome.message.endswith("structure drifted (the data still came out): drifted")


@pytest.mark.parametrize(
    ("counters", "line"),
    [
        (
            {
                "items/invalid": 20,
                "validation/dropped/product": 20,
                "validation/invalid/product/name/missing": 20,
            },
            "0 of 20 items stored: all dropped by validation (name missing)",
        ),
        (
            {"items/scraped": 20, "store/dead_letter": 20},
            "0 of 20 items stored: 20 rejected by Elasticsearch for good (dead letters)",
        ),
        (
            {"fetch/gave_up/network": 1, "errors/request_failed/ConnectionRefusedError": 1},
            "0 items: no page was fetched (1 request failed for good)",
        ),
        (
            {"pages/total": 2, "pages/requests": 2},
            "0 items: 2 pages read, no item extracted (selectors matched nothing?)",
        ),
        (
            {"pages/total": 12, "pages/requests": 12, "shop/product_unparsed": 10},
            "0 items: 12 pages read, no item extracted; 10 could not be parsed "
            "(shop/product_unparsed 10): did the site's layout change?",
        ),
    ],
)
def test_nothing_stored_fails_with_one_line_saying_why(counters: dict[str, int], line: str) -> None:
    outcome = judge(document(counters))
    assert (outcome.state, outcome.status, outcome.failed) == (NOTHING_STORED, "failed", True)
    assert outcome.message == outcome.reason == line
    assert "\n" not in outcome.message


def test_a_refused_crawl_says_the_refusal_line() -> None:
    counters = {
        "pages/total": 8,
        "pages/requests": 8,
        "pages/refused": 8,
        "blocks/total": 8,
        "blocks/blocked": 8,
    }
    doc = document(counters)
    assert doc["refusal"]
    outcome = judge(doc)
    assert (outcome.state, outcome.message) == (NOTHING_STORED, doc["refusal"])


def test_the_crawls_close_reason_is_never_contradicted() -> None:
    said = {"close_reason": "store_failed", "outcome": "20 items stored; 3 neither stored"}
    outcome = judge(document(GOOD) | said)
    assert (outcome.state, outcome.losses) == (
        INCOMPLETE,
        ("the crawl closed store_failed: 20 items stored; 3 neither stored",),
    )
    assert judge(document(GOOD) | {"close_reason": "finished"}).state == COMPLETED
    # Where the crawl judged itself, its one line is the run's.
    line = "0 of 3 items stored: the site answered HTTP 503"
    crawl = {"close_reason": "nothing_stored", "outcome": line}
    outcome = judge(document({"pages/total": 3, "pages/requests": 3}) | crawl)
    assert (outcome.state, outcome.message) == (NOTHING_STORED, line)


def test_a_site_that_lists_nothing_stores_nothing_and_is_right() -> None:
    empty = {"pages/total": 2, "pages/requests": 2, "items/none_listed": 1}
    assert judge(document(empty)).state == COMPLETED
    assert judge(document(empty) | {"close_reason": "finished"}).state == COMPLETED
    # ... but not when a page could not be read: its items may be what is missing.
    assert judge(document(empty | {"shop/listing_unparsed": 1})).state == NOTHING_STORED
    # Without the spider saying so, pages read and nothing found is never success.
    assert judge(document({"pages/total": 2, "pages/requests": 2})).state == NOTHING_STORED


def test_the_outcome_travels_as_a_dict() -> None:
    outcome = judge(document(GOOD | {"shop/product_unparsed": 1}))
    data = outcome.as_dict()
    assert (data["state"], data["status"], data["message"]) == (
        INCOMPLETE,
        "incomplete",
        outcome.message,
    )
    assert data["counts"]["pages_unparsed"] == 1
