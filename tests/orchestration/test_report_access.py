"""Getting the pages in the report: blocks by kind, challenges, sessions, renders, refusal."""

from __future__ import annotations

import datetime as dt

from core.fetch.refusal import Presented
from core.jobs.index import job_document
from orchestration.alerts import render
from orchestration.report import markdown, summary_context, table_rows

NOW = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)


def document(**counters: int) -> dict:
    return job_document("demo", "job-1", "completed", NOW, NOW, counters)


def test_the_ledgers_access_figures_reach_the_document_table_and_slack() -> None:
    doc = document(
        **{
            "pages/total": 1300,
            "pages/requests": 1288,
            "pages/refused": 0,
            "pages/rendered": 13,
            "blocks/total": 13,
            "blocks/challenge": 12,
            "blocks/captcha": 1,
            "sessions/created": 13,
            "sessions/retired": 1,
            "sessions/retired/captcha": 1,
            "sessions/challenges_passed": 12,
            "items/scraped": 1200,
            "items/stored": 1200,
        }
    )
    assert (doc["pages"], doc["pages_rendered"], doc["renders_per_1000_pages"]) == (1300, 13, 10.0)
    assert (doc["blocks_challenge"], doc["blocks_captcha"], doc["blocks_blocked"]) == (12, 1, 0)
    assert (doc["challenges_passed"], doc["sessions_retired"], doc["refusal"]) == (12, 1, None)
    assert doc["block_rate"] == 13 / 1300
    rows = {row["metric"]: row["value"] for row in table_rows(doc, chunks=0)}
    assert rows["blocks by kind"] == "challenge 12, CAPTCHA 1"
    assert rows["access"] == (
        "12 challenges passed, 13 sessions created, 1 retired; "
        "13 pages rendered (10 per 1,000 pages)"
    )
    assert "refused" not in rows
    text = render("job_summary", **summary_context(doc, chunks=0))
    # One figure, one text: the report's block rate is Slack's, counted over the same pages.
    assert rows["block rate"] == "1.00% (13 of 1300 pages fetched)"
    assert f"• block rate: {rows['block rate']}: challenge 12, CAPTCHA 1" in text
    assert "• access: 12 challenges passed" in text
    assert ":no_entry:" not in text


def test_a_job_whose_every_page_was_refused_says_so_in_one_line_everywhere() -> None:
    counters = {
        "pages/total": 32,
        "pages/requests": 8,
        "pages/refused": 8,
        "blocks/total": 32,
        "blocks/blocked": 32,
        "blocks/reason/cloudflare_block": 32,
    }
    doc = job_document(
        "demo",
        "job-2",
        "completed",
        NOW,
        NOW,
        counters,
        presented=Presented(fetch_identity="crawler", user_agent="scraping-platform/0.1"),
    )
    line = doc["refusal"]
    assert line.startswith("every page was refused: 8 of 8 requests were blocks")
    assert "FETCH_IDENTITY=browser" in line
    rows = table_rows(doc, chunks=0)
    assert rows[1] == {"metric": "refused", "value": line}
    # Whose refusal it was: the rule that matched (here a header check's page).
    by_kind = {row["metric"]: row["value"] for row in rows}["blocks by kind"]
    assert by_kind == "blocked 32 (cloudflare block 32)"
    assert f"| refused | {line} |" in markdown(doc, chunks=0)
    assert f"**NothingStored:** {line}" in markdown(doc, chunks=0)
    text = render("job_summary", **summary_context(doc, chunks=0))
    assert text.splitlines()[:2] == [
        ":x: *scrape-demo* stored nothing — job `job-2`",
        f"• :no_entry: {line}",
    ]
    assert text.count(line) == 1  # said once


def test_a_local_crawls_stats_give_the_same_figures() -> None:
    doc = document(
        **{
            "responses/classified": 40,
            "render/ok": 2,
            "blocks/total": 3,
            "blocks/challenge": 2,
            "blocks/throttled": 1,
            "sessions/retired/errors": 2,
        }
    )
    assert (doc["pages"], doc["pages_rendered"], doc["renders_per_1000_pages"]) == (40, 2, 50.0)
    assert doc["sessions_retired"] == 2
    assert table_rows(doc, chunks=0)[4]["metric"]  # rows render without the ledger's keys
