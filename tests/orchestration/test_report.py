"""The run report's removed/restored rows and the Slack summary's context (pure)."""

from __future__ import annotations

from core.jobs_index import job_document
from orchestration.report import markdown, summary_context, table_rows

COUNTERS = {"items/scraped": 10, "items/unchanged": 10, "items/removed": 3, "items/restored": 2}


def rows(document: dict[str, object]) -> dict[str, object]:
    return {row["metric"]: row["value"] for row in table_rows(document, chunks=0)}


def test_removed_and_restored_rows_and_summary() -> None:
    document = job_document("demo", "j1", "completed", None, None, COUNTERS)
    assert (rows(document)["removed"], rows(document)["restored"]) == (3, 2)
    assert "| removed | 3 |" in markdown(document, chunks=0)
    context = summary_context(document, chunks=0)
    assert (context["removed"], context["restored"], context["removals_skipped"]) == (3, 2, None)


def test_a_job_that_counted_no_misses_says_why() -> None:
    counters = {**COUNTERS, "items/removed": 0}
    extra = {"removals_skipped": "4 blocked response(s)"}
    document = job_document("demo", "j2", "completed", None, None, counters, extra=extra)
    assert rows(document)["removed"] == "0 (misses not counted: 4 blocked response(s))"
    assert summary_context(document, chunks=0)["removals_skipped"] == "4 blocked response(s)"


def test_documents_of_jobs_before_removals_still_render() -> None:
    document = job_document("demo", "j0", "completed", None, None, {"items/scraped": 1})
    del document["items_removed"], document["items_restored"]
    assert (rows(document)["removed"], rows(document)["restored"]) == (0, 0)
