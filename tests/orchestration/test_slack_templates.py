"""Every Slack template rendered with contexts built by the code that sends it (job
documents from ``core.jobs.index``, gate reports from ``fingerprints.gate``, the health
report, the coverage drop lines), and read as an operator would: one bullet per line,
no Python reprs, the title of the flow that sent it, the fix for the cause."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from core.jobs.index import job_document
from fingerprints.gate import GateResult, PageCheck, PageTypeResult, failure
from orchestration import alert_context
from orchestration.alerts import TEMPLATES, render
from orchestration.health import HealthReport, SiteHealth
from orchestration.report import drop_text, summary_context

NOW = dt.datetime(2026, 12, 2, 4, 0, tzinfo=dt.UTC)
COUNTERS = {
    "items/scraped": 1200,
    "items/stored": 1200,
    "items/new": 24,
    "items/changed": 60,
    "items/unchanged": 1116,
    "pages/total": 2480,
    "responses/total": 2480,
    "blocks/captcha": 31,
    "log_count/ERROR": 0,
}


# Every item found dropped by validation: the job stored nothing.
NOTHING_STORED = {
    "items/scraped": 0,
    "items/stored": 0,
    "items/new": 0,
    "items/changed": 0,
    "items/unchanged": 0,
    "items/invalid": 20,
    "validation/invalid/demo_product/name/missing": 20,
}


def document(**counters: int) -> dict[str, Any]:
    return job_document(
        "demo", "demo-1", "completed", NOW - dt.timedelta(minutes=2), NOW, COUNTERS | counters
    )


def summary(**counters: int) -> dict[str, Any]:
    doc = document(**counters)
    return summary_context(
        doc,
        chunks=2400,
        new_items=["Nova Dog Bed", "Fjord Lamp"],
        run_url="http://prefect.invalid/runs/flow-run/1",
    )


def changed_gate() -> GateResult:
    compared = PageTypeResult(
        "product",
        0.85,
        (PageCheck("https://shop.invalid/p/1", "product", "changed", "skeleton", 0.41),),
    )
    return GateResult(
        passed=False,
        status="structure_changed",
        site="demo",
        reason="structure changed: product (similarity 0.41 < 0.85)",
        page_types={"product": compared},
    )


def fetch_failed_gate() -> GateResult:
    dns = "DNSLookupError: shop.invalid"
    unfetched = PageTypeResult(
        "product", 0.85, (PageCheck("https://shop.invalid/p/1", "product", "fetch_failed", dns),)
    )
    return GateResult(
        passed=False,
        status="fetch_failed",
        site="demo",
        reason="no sample page could be fetched",
        page_types={"product": unfetched},
    )


def health_report() -> HealthReport:
    sites = [
        SiteHealth("demo", dt.timedelta(days=1), NOW, "completed", 1200, [0.012, 0.01]),
        SiteHealth("trustpilot", dt.timedelta(days=1), None, "failed", 0, []),
    ]
    problems = [problem for site in sites for problem in site.problems(NOW)]
    return HealthReport(sites, problems)


def contexts() -> dict[str, list[dict[str, Any]]]:
    """Every template with the contexts its senders build."""
    drop = {"field": "price", "actual": 0.4, "expected": 1.0, "tolerance": 0.1}
    return {
        "job_summary": [
            summary(),
            summary(**{"demo/product_unparsed": 111}),
            summary(**{"budget/reached/pages": 1}),
            summary(**NOTHING_STORED),
        ],
        "structure_change": [
            alert_context.structure_change_context("demo", changed_gate().to_dict()),
            alert_context.structure_change_context(
                "demo", changed_gate().to_dict() | {"proposed_baseline": {"page_types": {}}}
            ),
            alert_context.structure_change_context(
                "demo", changed_gate().to_dict(), waiting_until="2026-12-02 14:00 UTC"
            ),
            alert_context.structure_change_context(
                "demo", changed_gate().to_dict(), flow=alert_context.CHECK_SITE_VERSIONS
            ),
            alert_context.structure_change_context("demo", fetch_failed_gate().to_dict()),
            alert_context.structure_change_context(
                "demo", failure("demo", "blocked", "every sample page was a block page").to_dict()
            ),
            alert_context.structure_change_context(
                "demo", failure("demo", "no_baseline", "no baseline.json").to_dict()
            ),
        ],
        "structure_drift": [
            alert_context.structure_drift_context(
                "demo", changed_gate().to_dict() | {"verdict": "drifted"}
            )
        ],
        "health": [health_report().template_context()],
        "coverage_drop": [
            {"site": "demo", "job_id": "demo-1", "items": 1200, "drops": [drop_text(drop)]}
            | {"run_url": None}
        ],
        "error": [
            {
                "flow": "scrape-demo",
                "step": "drain",
                "site": "demo",
                "job_id": "demo-1",
                "error": "StepError: the frontier did not drain in 600 s",
                "log_lines": ["INFO producer: 1 start URL", "WARNING drain: 12 left"],
                "run_url": None,
            }
        ],
        "repair_suggestions": [
            {
                "model": "gpt-4o-mini",
                "kept": [
                    {
                        "page_type": "product",
                        "field": "price",
                        "new_rule": ".price::text",
                        "old_rule": None,
                        "example": "19.99",
                    }
                ],
                "discarded": 1,
                "errors": 0,
            }
        ],
    }


def test_every_template_has_a_rendering_case() -> None:
    assert {path.stem for path in TEMPLATES.glob("*.j2")} == set(contexts())


@pytest.mark.parametrize(
    ("template", "index"),
    [(name, i) for name, cases in contexts().items() for i in range(len(cases))],
)
def test_a_rendered_message_reads_right(template: str, index: int) -> None:
    text = render(template, **contexts()[template][index])
    assert not re.search(r"[^\n]•", text), text  # every bullet on its own line
    assert "\n\n\n" not in text and not text.startswith("\n")
    for python in ("None", "<built-in", " object at 0x", "{{", "{%", "[]", "{}"):
        assert python not in text, (python, text)


def test_job_summary_lines_and_warnings() -> None:
    text = render("job_summary", **summary())
    lines = text.splitlines()
    assert lines[0] == ":white_check_mark: *scrape-demo* completed — job `demo-1`"
    assert "• errors (ERROR log lines): 0" in lines
    assert any(line.startswith("• duration: 2m 0s") for line in lines)
    assert "• new: Nova Dog Bed, Fjord Lamp and 22 more" in lines
    # The report's block rate text, over the pages the report counts.
    assert "• block rate: 1.25% (31 of 2480 pages fetched): CAPTCHA 31" in lines
    assert "• items scraped: *1200* (new 24, changed 60, unchanged 1116), stored 1200" in lines

    lost = render("job_summary", **summary(**{"demo/product_unparsed": 111})).splitlines()
    assert lost[0] == ":x: *scrape-demo* incomplete: data lost — job `demo-1`"
    assert lost[1].startswith("• :x: 111 page(s) could not be parsed (demo/product_unparsed")

    warned = render("job_summary", **summary(**{"budget/reached/pages": 1})).splitlines()
    assert warned[0] == ":warning: *scrape-demo* completed with 1 warning(s) — job `demo-1`"
    assert warned[1] == "• :warning: crawl budget reached, the crawl was cut short: pages"


def test_a_job_that_stored_nothing_leads_with_why() -> None:
    lines = render("job_summary", **summary(**NOTHING_STORED)).splitlines()
    assert lines[:2] == [
        ":x: *scrape-demo* stored nothing — job `demo-1`",
        "• :no_entry: 0 of 20 items stored: all dropped by validation (name missing)",
    ]
    assert not [line for line in lines if line.startswith("• :x:")]  # the reason says it


def test_structure_alerts_are_titled_by_flow_and_advise_by_cause() -> None:
    cases = contexts()["structure_change"]
    skipped, approvable, waiting, fixtures, dns, blocked, no_baseline = (
        render("structure_change", **c) for c in cases
    )
    assert skipped.splitlines()[0] == (
        ":warning: *scrape-demo skipped (fail-closed)*: structure changed"
    )
    assert "• *product*: similarity 0.41 (threshold 0.85)" in skipped.splitlines()
    # The fixes that work: the spider updated, then fixtures and baseline from live pages
    # (the site's URL as the gate sampled it); no rebuild from the old fixtures.
    fix = "`python -m fingerprints baseline demo --from-url https://shop.invalid`"
    assert fix in skipped and "`python -m fingerprints baseline demo`" not in skipped
    assert "Resume form" not in skipped  # nothing to accept without a proposal
    # With a proposed baseline, the approval path in the Prefect UI comes first.
    accept, update = [line for line in approvable.splitlines() if line.startswith("• ")][-2:]
    assert 'make prefect-flow PROFILE=demo PARAMS="approval_timeout=3600"' in accept
    assert "Resume form with accept" in accept and fix in update
    assert waiting.splitlines()[0].startswith(":double_vertical_bar: *scrape-demo waits for")
    assert "until 2026-12-02 14:00 UTC" in waiting and "fail-closed" not in waiting
    assert fixtures.splitlines()[0] == (
        ":warning: *check-site-versions: demo fixtures structure changed*"
    )
    assert "scrape-demo" not in fixtures and "Nothing was crawled" not in fixtures
    assert "rebuild the baseline from them: `python -m fingerprints baseline demo`" in fixtures
    # A fetch failure is not the baseline's fault: no advice to rebuild it.
    assert "fingerprints baseline" not in dns and "the baseline is not at fault" in dns
    assert "not compared: 1 fetch failed (DNSLookupError: shop.invalid)" in dns
    assert "similarity" not in dns
    assert "fingerprints baseline" not in blocked and "docs/fetching.md" in blocked
    assert "python -m fingerprints baseline demo" in no_baseline


def test_health_rows_name_their_figures() -> None:
    text = render("health", **health_report().template_context())
    assert text.splitlines()[0] == ":red_circle: *daily-health-check*: 2 problem(s)"
    assert "• demo: last success 2026-12-02T04:00:00+00:00, items 1200, block rate 1.2%" in text
    assert "• trustpilot: last success never, items 0, block rate n/a" in text


def test_error_alert_keeps_its_log_lines_apart() -> None:
    text = render("error", **contexts()["error"][0])
    assert text.splitlines()[0] == (
        ":rotating_light: *scrape-demo* failed at step *drain* (site demo, job `demo-1`)"
    )
    assert "Last log lines:\n```INFO producer: 1 start URL\nWARNING drain: 12 left```" in text
