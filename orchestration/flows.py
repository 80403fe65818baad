"""The platform's Prefect flows. Thin: each step is a task calling a plain module.

``scrape-site`` (deployed once per site as ``scrape-<site>``):
    preflight -> verify structure (GATE) -> producer -> wait for drain -> mark-removed
    -> llm-process -> report (job document, field coverage against coverage.json)
``check-site-versions``: the structure check of every site's fixtures against its baseline.
``daily-health-check``: per-site job history, search health, undelivered alerts.

A retry of a failed run keeps its job id and resumes at the failed step (producer and
drain cached on site and job id). The final state is what the data came to
(``orchestration/outcome.py``); alerts are state hooks (``orchestration/hooks.py``).
Details: docs/orchestration.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed, Failed

from core.config import get_settings
from crawlers.profiles import SiteProfile, unknown_site
from fingerprints.gate import check_all
from orchestration import alert_context, approval, health, run_log
from orchestration.alerts import notify
from orchestration.clients import es_client, redis_client
from orchestration.hooks import alert_failed_run
from orchestration.outcome import LOSING_STATES, WARNINGS
from orchestration.scrape_tasks import (
    StructureGateFailed,
    accept_baseline_task,
    alert_structure_change,
    approval_request_task,
    default_job_id,
    drain_task,
    llm_process_task,
    mark_removed_task,
    preflight_task,
    produce_task,
    report_task,
    verify_structure_task,
    warn_structure_drift,
)

# The worker's engine loads this module before it runs a flow: a run that fails by returning
# a Failed state ends its log on that state's line, not on Prefect's traceback of it.
run_log.install()


# -- flows --------------------------------------------------------------------------------
@flow(
    name="scrape-site",
    log_prints=True,
    persist_result=True,
    on_failure=[alert_failed_run],
    on_crashed=[alert_failed_run],
)
def scrape_site(
    site: str,
    job_id: str | None = None,
    local_workers: int = 0,
    base_url: str | None = None,
    approval_timeout: int | None = None,
) -> Any:
    """Scrape one site: gate on structure, crawl through the frontier, embed, report.

    ``local_workers``: 0 when always-on workers serve the frontier (compose); N > 0 to
    launch N ``scrapy crawl`` worker processes for this run (local mode).
    ``approval_timeout``: seconds a failed-closed gate with a proposed baseline waits,
    suspended, for an operator's decision (``orchestration/approval.py``); default
    ``GATE_APPROVAL_TIMEOUT``, 0 fails at once.
    """
    if (unknown := unknown_site(site)) is not None:
        # Before any step: a misspelt site would fail later on a missing baseline.
        return Failed(name="UnknownSite", message=unknown)
    job_id = job_id or default_job_id(site)
    logger = get_run_logger()
    logger.info("scrape-%s job %s (local workers: %d)", site, job_id, local_workers)

    preflight_task(site, require_consumers=local_workers == 0)

    gate = verify_structure_task(site, job_id, base_url, return_state=True)
    if gate.is_failed():
        error = gate.result(raise_on_failure=False)
        result = (
            error.result
            if isinstance(error, StructureGateFailed)
            else {"status": "error", "reason": str(error), "page_types": {}}
        )
        timeout = approval.timeout_seconds(approval_timeout)
        if not approval.can_approve(result, timeout):
            alert_structure_change(site, result, base_url=base_url)
            return Failed(name="FailedClosed", message=f"structure gate: {result.get('reason')}")
        result = approval_request_task(site, job_id, result, timeout)
        # Suspends the run (its process exits); the resumed run gets the operator's answer.
        decision = approval.request_decision(site, result, timeout)
        if decision.decision != "accept":
            return Failed(name="FailedClosed", message=approval.rejection(site, decision))
        if refused := approval.refusal(site, result, decision):
            get_run_logger().error("%s", refused)
            return Failed(name="FailedClosed", message=refused)
        accept_baseline_task(site, result, decision.note)
    drift = None
    if gate.is_completed() and (report := gate.result()).get("verdict") == "drifted":
        warn_structure_drift(site, report, scrape=True)  # the data still comes out: go on
        drift = str(report.get("reason") or "drifted")
    profile = SiteProfile.load(site)  # the gate passed, so the site has a profile

    produce_task.with_options(timeout_seconds=profile.timeouts.producer)(site, job_id, base_url)
    drain_task(site, job_id, local_workers, base_url, float(profile.timeouts.drain))
    removals = mark_removed_task(site, job_id, profile.recrawl.removed_after_jobs)
    llm = llm_process_task(site, job_id)
    summary = report_task(site, job_id, llm, removals, drift)
    result = {"site": site, "job_id": job_id, "items": summary["items"]}
    return final_state(summary["outcome"], result)


def final_state(outcome: dict[str, Any], result: dict[str, Any]) -> Any:
    """The run's state from its outcome (``orchestration.outcome``): Failed named
    ``NothingStored`` or ``Incomplete`` when data was lost (the report is written and the
    job summary sent all the same), Completed named ``CompletedWithWarnings`` when a
    warning lost nothing, else plain Completed."""
    state, message = outcome["state"], outcome["message"]
    if state in LOSING_STATES:
        return Failed(name=state, message=message)
    if state == WARNINGS:
        # Completed, but not plain green: the runs list shows the name and the message.
        return Completed(name=state, message=message, data=result)
    return result


@flow(
    name="check-site-versions",
    log_prints=True,
    on_failure=[alert_failed_run],
    on_crashed=[alert_failed_run],
)
def check_site_versions(sites: list[str] | None = None) -> Any:
    """Every site's fixtures against its baseline (daily, before the first scrape)."""
    unknown = [line for site in sites or () if (line := unknown_site(site)) is not None]
    if unknown:
        return Failed(name="UnknownSite", message="; ".join(unknown))
    results = check_all(sites, sites_dir=approval.sites_dir())
    # verdict: passed | drifted (structure changed, extraction complete) | structure_changed
    # (fail closed) | blocked, fetch_failed, no_baseline, error.
    lines = ["| site | verdict | reason |", "|---|---|---|"]
    for result in results:
        reason = result.reason.replace("|", "\\|")  # a table cell
        lines.append(f"| {result.site} | {result.verdict} | {reason} |")
        if not result.passed:
            alert_structure_change(
                result.site, result.to_dict(), flow=alert_context.CHECK_SITE_VERSIONS
            )
        elif result.verdict == "drifted":
            warn_structure_drift(result.site, result.to_dict(), scrape=False)
    create_markdown_artifact("\n".join(lines), key="check-site-versions")
    failed = [result.site for result in results if not result.passed]
    if failed:
        return Failed(name="StructureChanged", message=f"structure changed: {', '.join(failed)}")
    return {result.site: result.verdict for result in results}


@flow(
    name="daily-health-check",
    log_prints=True,
    on_failure=[alert_failed_run],
    on_crashed=[alert_failed_run],
)
def daily_health_check() -> Any:
    """Per-site job history (last success, items, block-rate trend), search health and
    the alerts not delivered since the last check."""
    server = redis_client() if get_settings().redis_url else None
    report = health.check(es_client(), server=server)
    create_markdown_artifact(report.markdown(), key="daily-health-check")
    if not report.healthy:
        notify("health", **report.template_context())
    if server is not None:
        health.acknowledge(server, report)  # reported: the next check shows only newer ones
    if not report.healthy:
        return Failed(name="Unhealthy", message="; ".join(report.problems))
    return report.template_context()
