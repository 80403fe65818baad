"""The run report's removed/restored rows and the Slack summary's context (pure)."""

from __future__ import annotations

from core.jobs.index import job_document
from orchestration.alerts import render
from orchestration.report import coverage_text, markdown, summary_context, table_rows

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


DROP = {"field": "price", "expected": 1.0, "actual": 0.4, "tolerance": 0.1}
VANISHED = {"field": "brand", "expected": 0.5, "actual": 0.0, "tolerance": 0.1}


def coverage(**overrides: object) -> dict[str, object]:
    judged = {"site": "demo", "items": 50, "rates": {"name": 1.0, "price": 0.4}}
    return judged | {"drops": [], "new_fields": [], "problems": [], "expected": {}} | overrides


def test_the_coverage_line_names_each_dropped_field() -> None:
    text = coverage_text(coverage(drops=[DROP, VANISHED], expected={"price": 1.0, "brand": 0.5}))
    assert text == (
        "2 field(s) dropped (50 items): price: 40.0% of items, baseline 100.0% "
        "(tolerance 10.0%); brand: no item (vanished), baseline 50.0% (tolerance 10.0%)"
    )


def test_the_coverage_line_of_a_good_job_a_small_one_and_a_site_without_baseline() -> None:
    expected = {"name": 0.98, "price": 0.45}
    assert coverage_text(coverage(expected=expected)) == (
        "ok: 2 field(s) within tolerance (50 items)"
    )
    assert coverage_text(coverage(expected=expected, new_fields=["gtin"])) == (
        "ok: 2 field(s) within tolerance (50 items); filled, not in the baseline: gtin"
    )
    few = coverage(items=3, problems=["only 3 item(s), fewer than the 20 needed"])
    assert coverage_text(few) == "not judged: only 3 item(s), fewer than the 20 needed"
    assert coverage_text(coverage(expected=None)) == (
        "no baseline (coverage.json); measured on 50 items: name 100%, price 40%"
    )
    assert coverage_text(None) is None


def test_the_summary_has_a_coverage_line_only_when_measured() -> None:
    document = job_document("demo", "j1", "completed", None, None, COUNTERS)
    assert "field coverage" not in render("job_summary", **summary_context(document, chunks=0))
    assert "field coverage" not in rows(document)
    dropped = coverage(drops=[DROP], expected={"price": 1.0})
    text = render("job_summary", **summary_context(document, chunks=0, coverage=dropped))
    assert "• :warning: field coverage: 1 field(s) dropped (50 items): price: 40.0%" in text
    good = render("job_summary", **summary_context(document, chunks=0, coverage=coverage()))
    assert "• field coverage: ok: 0 field(s) within tolerance (50 items)\n" in good
