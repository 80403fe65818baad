"""The scrape flow's steps as Prefect tasks (``orchestration.flows.scrape_site`` composes
them). Each is thin: it calls a plain module, records its artifacts and alerts through
its ``on_failure`` hook (``orchestration/hooks.py``).

The gate, producer and drain tasks are cached on their inputs and the flow run with
persisted results, so Prefect's "Retry" of a run resumes at the failed step.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import INPUTS, RUN_ID, TASK_SOURCE, Inputs
from prefect.runtime import flow_run

from core.config import get_settings
from core.dedup.detector import job_changes
from core.jobs.index import job_counters, job_document, job_started_at, write_job_document
from core.recrawl.history import job_change_counts
from core.recrawl.removals import apply_job
from core.store import spill_size
from crawlers import addon
from crawlers.cli.producer import produce
from crawlers.fetch.refusal import presented
from crawlers.profiles import SiteProfile
from crawlers.runtime.site_language import site_language
from fingerprints.baselines.proposed import save_proposed_baseline
from fingerprints.baselines.store import dumps
from fingerprints.gate import verify_site
from indexing.embedders import default_embedder
from indexing.process import process_job
from orchestration import alert_context, approval, health
from orchestration.alerts import notify
from orchestration.clients import crawl_settings, es_client, redis_client
from orchestration.coverage import alert_coverage_drop, job_coverage
from orchestration.hooks import alert_failed_step, send_job_summary
from orchestration.outcome import judge
from orchestration.progress import DrainWatcher, LlmWatcher
from orchestration.repairs import alert_lines
from orchestration.report import markdown, summary_context, table_rows
from orchestration.steps import LocalWorkers, StepError, job_id_for, preflight, wait_for_drain
from orchestration.wiring import worker_env

# Cached per task, inputs and flow run: a retry of the same run (same run id) skips the
# steps that completed; a new run never reuses an old run's results.
RESUMABLE = TASK_SOURCE + INPUTS + RUN_ID
# The same, ignoring the gate report passed in: a run resumed after an approval re-runs the
# gate (the flow starts again from the top), but the decision applies to what was shown.
HELD_PER_RUN = TASK_SOURCE + Inputs(exclude=["result"]) + RUN_ID


class StructureGateFailed(StepError):
    """The fingerprint gate did not pass; ``result`` is the gate's report (a dict)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result.get("reason") or result.get("status") or "gate failed")
        self.result = result


def artifact_prefix(site: str) -> str:
    """``scrape-<site>`` as an artifact key (lowercase letters, digits and dashes)."""
    return f"scrape-{site.replace('_', '-')}"


def default_job_id(site: str) -> str:
    """Stable for a flow run, so a retry of the run continues the same job."""
    run_id = flow_run.get_id() or dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return job_id_for(site, run_id)


def run_url() -> str | None:
    return flow_run.get_flow_run_ui_url() if flow_run.get_id() else None


def alert_structure_change(
    site: str,
    result: dict[str, Any],
    *,
    waiting_until: str | None = None,
    flow: str = alert_context.SCRAPE,
    base_url: str | None = None,
) -> None:
    """``waiting_until``: the run is suspended for an operator's accept/reject until then.
    ``base_url``: the run's, for the fix's ``--from-url`` (default: the profile's)."""
    if flow == alert_context.SCRAPE and base_url is None:
        base_url = str(SiteProfile.load(site).base_url).rstrip("/")
    notify(
        "structure_change",
        **alert_context.structure_change_context(
            site,
            result,
            flow=flow,
            waiting_until=waiting_until,
            run_url=run_url(),
            repairs=alert_lines(site, result),  # validated rule suggestions for failed fields
            base_url=base_url,
        ),
    )


def warn_structure_drift(site: str, result: dict[str, Any], *, scrape: bool) -> None:
    """The Slack warning for a drifted gate: what changed, and the proposed baseline."""
    flow = alert_context.SCRAPE if scrape else alert_context.CHECK_SITE_VERSIONS
    notify(
        "structure_drift",
        **alert_context.structure_drift_context(site, result, flow=flow, run_url=run_url()),
    )


# -- tasks --------------------------------------------------------------------------------
@task(name="preflight", on_failure=[alert_failed_step])
def preflight_task(site: str, require_consumers: bool) -> dict[str, Any]:
    report = preflight(
        site, server=redis_client(), es=es_client(), require_consumers=require_consumers
    )
    return {"site": site, "consumers": report.consumers}


@task(name="verify-structure", cache_policy=RESUMABLE, persist_result=True)
def verify_structure_task(site: str, job_id: str, base_url: str | None) -> dict[str, Any]:
    result = verify_site(site, base_url=base_url, sites_dir=approval.sites_dir())
    logger = get_run_logger()
    logger.info(result.summary())
    if not result.passed:
        # Raising (not returning) keeps a failed gate out of the cache: a retry re-checks.
        raise StructureGateFailed(result.to_dict() | {"summary": result.summary()})
    report = result.to_dict()
    if result.verdict == "drifted" and result.proposed_baseline is not None:
        # Never over baseline.json: a new file to review, and the run's artifact. Inside
        # the cached task, so a retry of the run does not propose (and warn) twice.
        path = save_proposed_baseline(
            site, result.proposed_baseline, sites_dir=approval.sites_dir()
        )
        logger.warning("structure drifted; proposed baseline written to %s", path)
        create_markdown_artifact(
            f"## Proposed baseline for {site}\n\n{result.reason}\n\nWritten to `{path}`.\n\n"
            f"```json\n{dumps(result.proposed_baseline)}```",
            key=f"{site.replace('_', '-')}-proposed-baseline",
            description=f"{site}: the structure the drifted sample shows",
        )
        report["proposed_baseline_path"] = str(path)
    return report


@task(name="approval-request", cache_policy=HELD_PER_RUN, persist_result=True)
def approval_request_task(
    site: str, job_id: str, result: dict[str, Any], timeout: int = 0
) -> dict[str, Any]:
    """The gate report an operator is asked to decide on, alerted once: cached for the run,
    so the resumed run gets this report (and sends no second alert). The alert says until
    when the run waits (``timeout`` seconds from now, as the form's description does)."""
    until = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=timeout)
    alert_structure_change(site, result, waiting_until=until.strftime("%Y-%m-%d %H:%M UTC"))
    return result


@task(name="accept-baseline", on_failure=[alert_failed_step])
def accept_baseline_task(site: str, result: dict[str, Any], note: str) -> str:
    by = f"Prefect flow run {flow_run.get_name()} ({flow_run.get_id()})"
    path = approval.accept(site, result, note=note, by=by)
    get_run_logger().info("accepted the proposed baseline of %s: %s", site, path)
    return str(path)


@task(
    name="producer",
    cache_policy=RESUMABLE,
    persist_result=True,
    on_failure=[alert_failed_step],
)
def produce_task(site: str, job_id: str, base_url: str | None) -> dict[str, Any]:
    job = produce(redis_client(), site, job_id=job_id, base_url=base_url)
    get_run_logger().info("enqueued %d start entries for %s", job.entries, job_id)
    create_table_artifact(
        [{"metric": "start entries enqueued", "value": job.entries}],
        key=f"{artifact_prefix(site)}-producer",
        description=f"producer: start entries of {job_id}",
    )
    return {"site": site, "job_id": job_id, "entries": job.entries}


def launch_workers(site: str, job_id: str, count: int, base_url: str | None) -> LocalWorkers:
    """The job's local ``scrapy crawl <site>`` workers (not started): settings on their
    command line, secrets in their environment, each site's only to its own workers, as
    compose's ``worker-<site>`` (``orchestration.wiring.worker_env``)."""
    return LocalWorkers(
        site,
        job_id,
        count,
        run_dir=get_settings().platform_run_dir / "jobs" / job_id,
        env=worker_env(SiteProfile.load(site), os.environ),
        settings=crawl_settings(),
        base_url=base_url,
    )


@task(
    name="wait-for-drain",
    cache_policy=RESUMABLE,
    persist_result=True,
    on_failure=[alert_failed_step],
)
def drain_task(
    site: str, job_id: str, local_workers: int, base_url: str | None, timeout: float
) -> dict[str, Any]:
    logger = get_run_logger()
    server = redis_client()
    window = addon.drain_window()
    workers: LocalWorkers | None = None
    if local_workers:
        workers = launch_workers(site, job_id, local_workers, base_url)
        workers.start(server)
        logger.info(
            "launched %d local %s workers (logs in %s)",
            local_workers,
            site,
            workers.log_path(1).parent,
        )
    watcher = DrainWatcher(
        f"{artifact_prefix(site)}-crawl",
        logger,
        log_interval=get_settings().progress_log_interval,
    )
    try:
        state = wait_for_drain(
            server,
            site,
            job_id,
            stable_window=window,
            timeout=timeout,
            on_poll=watcher.poll,
            check=workers.check_alive if workers else None,
            pending_store=lambda: spill_size(server, site),
        )
    finally:
        if workers is not None:
            codes = workers.stop()
            logger.info("local workers stopped: exit codes %s", codes)
    watcher.finish(state)
    logger.info(state.describe())
    return {"queued": state.queued, "leased": state.leased, "counters": state.counters}


@task(name="mark-removed", on_failure=[alert_failed_step])
def mark_removed_task(site: str, job_id: str, removed_after_jobs: int) -> dict[str, Any]:
    """Items not seen in K complete jobs -> removed; removed items seen again -> restored
    (``core.recrawl.removals``; idempotent per job). Runs only after the drain: the job finished."""
    report = apply_job(
        redis_client(), es_client(), site, job_id, removed_after_jobs=removed_after_jobs
    )
    get_run_logger().info("mark-removed: %s", report.describe())
    return report.as_dict()


@task(name="llm-process", on_failure=[alert_failed_step])
def llm_process_task(site: str, job_id: str) -> dict[str, Any]:
    watcher = LlmWatcher(
        f"{artifact_prefix(site)}-llm",
        get_run_logger(),
        log_interval=get_settings().progress_log_interval,
    )
    report = process_job(
        es_client(),
        redis_client(),
        site,
        job_id,
        default_embedder(),
        on_batch=watcher.batch,
        language=site_language(site),  # the text analyzer of a new chunks index
    )
    watcher.finish(report)
    get_run_logger().info("llm-process: %s", report.as_dict())
    if report.errors:
        raise StepError(f"llm-process: {len(report.errors)} errors, e.g. {report.errors[0]}")
    return report.as_dict()


@task(name="report", on_failure=[alert_failed_step], on_completion=[send_job_summary])
def report_task(
    site: str,
    job_id: str,
    llm: dict[str, Any],
    removals: dict[str, Any] | None = None,
    drift: str | None = None,
) -> dict[str, Any]:
    """The job document, the run's artifacts and its outcome (``orchestration.outcome``:
    what the data came to, judged on the job's figures, its field coverage and ``drift``,
    the drifted gate's reason). Returns the job summary's template context (sent to Slack
    by the ``on_completion`` hook), its ``outcome`` the flow's final state."""
    server, es = redis_client(), es_client()
    counters = job_counters(server, site, job_id)
    skipped = (removals or {}).get("skipped")  # why the job counted no misses, if it did not
    started, finished = job_started_at(server, site, job_id), dt.datetime.now(dt.UTC)
    figures: dict[str, Any] = {
        "spill_remaining": spill_size(server, site),
        "extra": {"removals_skipped": skipped} if skipped else None,
        "presented": presented(addon.site_settings(site)),
    }
    coverage_report = job_coverage(es, site, job_id, sites_dir=approval.sites_dir())
    get_run_logger().info(coverage_report.summary())
    coverage = coverage_report.to_dict()
    # Judged before the document is written: its status is the run's final word.
    outcome = judge(
        job_document(site, job_id, "completed", started, finished, counters, **figures),
        coverage=coverage,
        drift=drift,
        errors_per_1000_pages=get_settings().job_errors_warn_per_1000_pages,
    )
    document = write_job_document(
        es, site, job_id, outcome.status, started, finished, counters, refresh=True, **figures
    )
    log = get_run_logger().error if outcome.failed else get_run_logger().warning
    for line in [outcome.reason] if outcome.reason else [*outcome.losses, *outcome.warnings]:
        log("%s", line)
    chunks = int(llm.get("chunks_written", 0))
    changes = job_change_counts(es, site, job_id)
    create_markdown_artifact(
        markdown(
            document,
            chunks=chunks,
            outcome=outcome,
            changes=changes,
            kibana_url=get_settings().kibana_public_url,
            coverage=coverage,
        ),
        key=f"{artifact_prefix(site)}-report",
    )
    create_table_artifact(
        table_rows(document, chunks=chunks, changes=changes, coverage=coverage),
        key=f"{artifact_prefix(site)}-stats",
    )
    # Inside the task: a retried report step alerts again only if it runs again.
    alert_coverage_drop(coverage, job_id=job_id, run_url=run_url())
    new_names = health.item_names(es, site, sorted(job_changes(server, site, job_id).new)[:10])
    summary = summary_context(
        document,
        chunks=chunks,
        outcome=outcome,
        new_items=new_names,
        run_url=run_url(),
        changes=changes,
        coverage=coverage,
    )
    return summary | {"outcome": outcome.as_dict()}
