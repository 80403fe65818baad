"""``core.jobs.outcome``: the close reason and the one line of a crawl or a job, from its
counters (Scrapy's stat names as the platform's crawls count them)."""

from __future__ import annotations

import pytest

from core.jobs.index import job_document
from core.jobs.outcome import (
    EXIT_CODES,
    NONE_LISTED,
    STORE_FAILURE,
    WORKER_REASONS,
    Outcome,
    exit_code,
    job_reason,
    judge,
)

CONNECTION_REFUSED = (
    "downloader/exception_type_count/scrapy.exceptions.DownloadConnectionRefusedError"
)


def pages(ok: int, *, robots: bool = True) -> dict[str, int]:
    """The fetch layer's counters of ``ok`` good pages (and a good robots.txt)."""
    extra = 1 if robots else 0
    return {
        "responses/classified": ok + extra,
        "responses/ok": ok + extra,
        "responses/robots_txt": extra,
        "downloader/request_count": ok + extra,
    }


def test_the_exit_status_follows_the_reason() -> None:
    assert EXIT_CODES == {
        "finished": 0,
        "elasticsearch_auth": 2,
        "refused": 3,
        "nothing_stored": 4,
        "store_failed": 5,
        "shutdown_forced": 6,
    }
    # Scrapy's own reasons stand only with items stored.
    assert exit_code("budget_pages") == exit_code("shutdown") == 0
    outcome = Outcome("nothing_stored", "0 items: ...")
    assert (outcome.exit_code, outcome.ok) == (4, False)
    assert outcome.text() == "finish_reason nothing_stored: 0 items: ..."


def test_items_stored_is_finished() -> None:
    counters = {**pages(12), "validation/valid/demo_product": 10, "items/stored": 10}
    assert judge(counters) == Outcome("finished", "10 items stored")
    # Some lost on the way: said, still finished (the items stored are fine).
    counters |= {
        "validation/dropped/demo_product": 2,
        "validation/invalid/demo_product/price/float_type": 2,
        "store/dead_letter": 1,
        "demo/product_unparsed": 1,
    }
    assert judge(counters, spill_remaining=3) == Outcome(
        "finished",
        "10 of 12 items stored; 2 dropped by validation (price float_type); 1 rejected by "
        "Elasticsearch (dead letters); 3 wait in the spill; 1 page could not be parsed",
    )


def test_without_a_store_the_feeds_items_count_and_the_line_says_so() -> None:
    counters = {**pages(3), "validation/valid/demo_product": 3, "item_scraped_count": 3}
    outcome = judge(counters)
    assert outcome.reason == "finished"
    assert outcome.line == (
        "3 items stored; no store (ELASTICSEARCH_URL): the items went to the feed exports only"
    )


def test_every_item_dropped_names_the_field() -> None:
    counters = {
        **pages(1),
        "validation/dropped/demo_product": 20,
        "validation/invalid/demo_product/name/missing": 20,
        "item_dropped_count": 20,
    }
    assert judge(counters) == Outcome(
        "nothing_stored", "0 of 20 items stored: all dropped by validation (name missing)"
    )
    # Several causes: the most frequent first, with their counts.
    counters["validation/invalid/demo_product/price/float_type"] = 3
    assert judge(counters).line == (
        "0 of 20 items stored: all dropped by validation (name missing 20, price float_type 3)"
    )


def test_a_site_that_never_answered_is_down() -> None:
    counters = {CONNECTION_REFUSED: 4, "downloader/request_count": 4}
    assert judge(counters) == Outcome(
        "nothing_stored", "0 items: site down (connection refused on every request, 4 requests)"
    )
    dns = {"downloader/exception_type_count/twisted.internet.error.DNSLookupError": 1}
    assert judge({**dns, "downloader/request_count": 1}).line == (
        "0 items: site down (DNS lookup failed on every request, 1 request)"
    )


def test_a_site_answering_errors_only() -> None:
    counters = {
        "responses/classified": 5,
        "responses/error": 5,
        "responses/error_status/503": 4,
        "responses/error_status/404": 1,
    }
    assert judge(counters).line == (
        "0 items: the site answered errors only (HTTP 503 x 4, HTTP 404 x 1)"
    )


def test_pages_read_and_nothing_extracted() -> None:
    assert judge(pages(2)) == Outcome(
        "nothing_stored", "0 items: 2 pages read, no item extracted (selectors matched nothing?)"
    )
    unparsed = {**pages(73), "demo/product_unparsed": 60}
    assert judge(unparsed).line == (
        "0 items: 73 pages read, no item extracted; 60 could not be parsed "
        "(demo/product_unparsed 60): did the site's layout change?"
    )


def test_a_site_that_truly_has_none_is_declared_by_the_spider() -> None:
    counters = {**pages(2), NONE_LISTED: 1}
    assert judge(counters) == Outcome(
        "finished", "0 items: the site lists none (2 pages read, 1 of them listing no items)"
    )
    # Never when a page could not be parsed or items were extracted and lost.
    assert judge({**counters, "demo/listing_unparsed": 1}).reason == "nothing_stored"
    dropped = {**counters, "validation/dropped/demo_product": 1}
    assert judge(dropped).reason == "nothing_stored"


def test_nothing_stored_for_items_left_in_the_spill() -> None:
    counters = {**pages(20), "validation/valid/demo_product": 20, "items/stored": 0}
    assert judge(counters, spill_remaining=20) == Outcome(
        "nothing_stored", "0 of 20 items stored: 20 wait in the spill for Elasticsearch"
    )


def test_a_refused_crawl_is_refused_whatever_scrapy_said() -> None:
    line = "every page was refused: 12 of 12 responses were blocks [blocked 12]; ..."
    counters = {"responses/classified": 12, "blocks/total": 12}
    assert judge(counters, reason="finished", refusal=line) == Outcome("refused", line)
    assert judge(counters, reason="refused").reason == "refused"
    # Judged from the counters when no line is given.
    blocked = {**counters, "blocks/blocked": 12, "blocks/reason/http_403": 12}
    judged = judge(blocked)
    assert judged.reason == "refused"
    assert judged.line.startswith("every page was refused: 12 of 12 responses were blocks")


def test_a_store_that_failed() -> None:
    counters = {
        **pages(12),
        "validation/valid/demo_product": 12,
        "items/stored": 0,
        "store/unsaved": 12,
        STORE_FAILURE: "store gave up on 12 items after STORE_CLOSE_TIMEOUT=5s: ...",
    }
    assert judge(counters, reason="budget_time") == Outcome(
        "store_failed",
        "0 of 12 items stored: 12 neither stored nor spilled: store gave up on 12 items "
        "after STORE_CLOSE_TIMEOUT=5s: ...",
    )
    # Items stored do not hide items lost.
    assert judge({**counters, "items/stored": 3}).reason == "store_failed"
    rejected = {**pages(5), "validation/valid/demo_product": 5, "items/stored": 0}
    rejected["store/dead_letter"] = 5
    assert judge(rejected).line == (
        "0 of 5 items stored: 5 rejected by Elasticsearch for good (dead letters)"
    )


def test_budgets_and_shutdown_stand_with_items_stored_only() -> None:
    stored = {**pages(5), "validation/valid/demo_product": 5, "items/stored": 5}
    assert judge(stored, reason="budget_pages").reason == "budget_pages"
    assert judge(stored, reason="shutdown").reason == "shutdown"
    empty = {**pages(5), "budget/reached/pages": 1}
    outcome = judge(empty, reason="budget_pages")
    assert outcome.reason == "nothing_stored"
    assert outcome.line == (
        "0 items: 5 pages read, no item extracted before the budget stopped it; the crawl "
        "ended early (budget_pages); crawl budget reached: pages"
    )
    assert judge(pages(0, robots=False), reason="shutdown").line == (
        "0 items: no request was made (no start URL, or nothing enqueued for the job?); the "
        "crawl ended early (shutdown)"
    )


def test_items_that_failed_in_the_pipelines_are_said() -> None:
    # No validation (a project's own pipelines): the failures are all that is known.
    assert judge({**pages(3), "item_error_count": 3}).line == (
        "0 items stored: 3 failed in the pipelines (item_error, see the log)"
    )
    validated = {**pages(3), "validation/valid/demo_product": 3, "item_error_count": 3}
    assert judge(validated).line == (
        "0 of 3 items stored: 3 failed in the pipelines (item_error, see the log)"
    )


def test_a_reason_the_judgement_gave_is_judged_again() -> None:
    stored = {**pages(5), "validation/valid/demo_product": 5, "items/stored": 5}
    assert judge(stored, reason="nothing_stored").reason == "finished"


def test_a_worker_judges_its_jobs_items_stored() -> None:
    own = {**pages(3), "validation/valid/demo_product": 3, "items/stored": 0}
    assert judge(own).reason == "nothing_stored"
    assert judge(own, stored=1200) == Outcome(
        "finished", "1,200 items stored (by the job's workers; this one stored 0)"
    )


def test_elasticsearch_refusing_the_credentials() -> None:
    counters = {**pages(3), "validation/valid/demo_product": 3, "items/stored": 0}
    outcome = judge(counters, reason="elasticsearch_auth")
    assert (outcome.reason, outcome.exit_code) == ("elasticsearch_auth", 2)
    # A job: its workers said so.
    assert judge({**counters, WORKER_REASONS + "elasticsearch_auth": 1}).reason == (
        "elasticsearch_auth"
    )


@pytest.mark.parametrize(
    ("counters", "reason"),
    [
        ({}, "finished"),
        ({"budget/reached/pages": 1}, "budget_pages"),
        ({"budget/reached/time": 1, "budget/reached/depth": 2}, "budget_time"),
        ({"budget/reached/chain": 1}, "finished"),  # refused links, the crawl went on
    ],
)
def test_a_jobs_reason_before_judging(counters: dict[str, int], reason: str) -> None:
    assert job_reason(counters) == reason


def test_the_job_document_carries_the_reason_and_the_line() -> None:
    job = {
        "items/scraped": 0,
        "items/invalid": 20,
        "items/stored": 0,
        "validation/dropped/demo_product": 20,
        "validation/invalid/demo_product/name/missing": 20,
    }
    doc = job_document("demo", "j1", "completed", 0, 1, job, spill_remaining=0)
    assert (doc["close_reason"], doc["outcome"]) == (
        "nothing_stored",
        "0 of 20 items stored: all dropped by validation (name missing)",
    )
    stored = {"items/scraped": 12, "items/stored": 12, "budget/reached/time": 1}
    doc = job_document("demo", "j2", "completed", 0, 1, stored)
    assert (doc["close_reason"], doc["outcome"]) == ("budget_time", "12 items stored")
    # A crawl's own verdict is kept as given.
    doc = job_document("demo", "j3", "failed", 0, 1, {}, close_reason="refused", outcome="x")
    assert (doc["close_reason"], doc["outcome"]) == ("refused", "x")


def test_a_jobs_ledger_figures_say_what_its_workers_read() -> None:
    # A job's counters hold the ledger's exact pages (core.figures.ledger), refused ones apart.
    pages = judge({"pages/total": 12, "pages/refused": 2, "shop/product_unparsed": 10})
    assert pages.reason == "nothing_stored"
    assert pages.line.startswith("0 items: 10 pages read, no item extracted; 10 could not")
    # Requests that failed for good, each counted once (core.recrawl.removals.failed_requests).
    failed = judge({"fetch/gave_up/network": 3, "errors/request_failed/TimeoutError": 3})
    assert failed.line == "0 items: no page was fetched (3 requests failed for good)"
