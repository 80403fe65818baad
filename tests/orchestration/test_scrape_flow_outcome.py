"""A run that lost data is not green: on the real Prefect server (test_scrape_flow's stack),
a crawl whose product pages partly never answer ends Failed as ``Incomplete``, with its
report written, its job document saying so, one Slack summary saying what was lost (no
second alert), the same figures everywhere, and a log that ends on the state's line.
"""

from __future__ import annotations

import re
from typing import Any

from tests.orchestration.test_scrape_flow import (
    PRODUCTS,
    Stack,
    final_log_lines,
    job_id_of,
    latest_artifact,
    slack_texts,
    stack,
)

__all__ = ["stack"]  # the module-scoped fixture, shared by import

# Product pages the gate never samples (it samples DM-00001, -00420, -00777, -01200):
# DM-00050 .. DM-00069 answer 503 to every attempt.
GONE = ("/product/DM-0005", "/product/DM-0006")
LOST = 20


def report_rows(report: str) -> dict[str, str]:
    return {
        match[1].strip(): match[2].strip()
        for match in re.finditer(r"^\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|\s*$", report, re.M)
    }


def test_a_run_that_lost_pages_ends_incomplete_and_says_what_it_lost(stack: Stack) -> None:
    stack.site.control(unavailable={"rate": 1.0, "attempts": None, "paths": list(GONE)})
    try:
        run_id = stack.trigger("scrape-demo")
        run = stack.wait(run_id, timeout=900)
    finally:
        stack.site.control(unavailable=None)
    state: dict[str, Any] = run["state"]
    assert (state["type"], state["name"]) == ("FAILED", "Incomplete"), state
    assert state["message"].startswith(f"{LOST} request(s) failed for good"), state

    job_id = job_id_of(run_id)
    es = stack.es()
    job = es.get(index="jobs", id=f"demo:{job_id}")["_source"]
    assert job["status"] == "incomplete"
    assert job["items_stored"] == job["items_scraped"] == PRODUCTS - LOST
    es.indices.refresh(index="items-demo")
    assert es.count(index="items-demo")["count"] == PRODUCTS - LOST

    # The report is written, leads with the loss, and its rows say what each counts.
    report = latest_artifact(stack, run_id, "scrape-demo-report")
    assert report is not None
    assert f"- :x: {LOST} request(s) failed for good" in report["data"]
    rows = report_rows(report["data"])
    assert rows["status"] == "incomplete"
    assert rows["requests failed for good"] == str(LOST)
    assert rows["stored"] == str(PRODUCTS - LOST)

    # One Slack message for the run: its summary, with the report's figures.
    about = [text for text in slack_texts(stack) if job_id in text]
    assert len(about) == 1, about
    (summary,) = about
    assert summary.startswith(":x: *scrape-demo* incomplete: data lost")
    assert f"• :x: {LOST} request(s) failed for good" in summary
    assert f"• block rate: {rows['block rate']}" in summary
    assert f"requests failed for good {LOST}" in summary
    assert f"errors (ERROR log lines): {rows['errors (ERROR log lines)']}" in summary
    assert f"*{PRODUCTS - LOST}* (new" in summary and f"stored {PRODUCTS - LOST}" in summary

    # The run's log ends on its state, with no traceback of the returned state.
    lines = final_log_lines(stack, run_id)
    assert lines[-1].startswith("Finished in state Incomplete("), lines[-3:]
    assert not [line for line in lines if "unexpected exception" in line]
