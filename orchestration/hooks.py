"""Prefect state hooks: the flows' Slack alerts, declared on the flows and their tasks.

A step task's ``on_failure`` alerts the failed step (error, last log lines) before the
failure reaches the flow; the flows' ``on_failure`` / ``on_crashed`` alert what no step
did; one error alert per failed run attempt, also recorded as the artifact
``scrape-<site-with-dashes>-failure``. The report task's ``on_completion`` sends the job
summary. Once a failed run's alert is out the flow emits ``ALERTED_EVENT`` (the server's
automation alerts runs that never do). An alert Slack does not take never changes a run's
state: it is logged and recorded for the daily health check.

Reads: ``SLACK_WEBHOOK_URL`` (through ``notify``). Details: docs/orchestration.md "Alerts".
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch
from prefect import Flow, Task
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import ArtifactCreate
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    LogFilter,
    LogFilterFlowRunId,
    LogFilterTaskRunId,
)
from prefect.client.schemas.objects import FlowRun, StateType, TaskRun
from prefect.client.schemas.sorting import LogSort
from prefect.context import FlowRunContext
from prefect.events import Event, emit_event
from prefect.logging.handlers import APILogHandler
from prefect.states import State
from prefect.utilities.urls import url_for

from core.config import get_settings
from core.jobs.index import add_failed_alert
from orchestration.alerts import Delivery, notify, run_logger
from orchestration.outcome import LOSING_STATES
from orchestration.report import failure_markdown
from orchestration.steps import job_id_for

logger = logging.getLogger(__name__)

LOG_LINES = 8
LOG_LINE_CHARS = 200
ERROR_CHARS = 1500
# Prefect's own lines about the failure repeat the alert's error, cut to its first line.
ENGINE_FAILURE_LINES = (
    "Running hook",  # the hook's own
    "Task run failed with ",
    "Encountered exception during execution",
    "Finished in state ",
    "Crash detected!",
)
# Failed states whose flow sent its own alert (structure change, health report, the job
# summary of a run that lost data).
SELF_ALERTED = frozenset({"FailedClosed", "StructureChanged", "Unhealthy", *LOSING_STATES})
# Emitted once a failed or crashed run's own alert is out (or was not needed): the
# server-side automation (orchestration/automations.py) alerts the runs without one.
ALERTED_EVENT = "platform.flow-run.alerted"
UNFINISHED = (StateType.RUNNING, StateType.FAILED, StateType.CRASHED)

# Run attempts (flow run id, run count) whose failed step alerted. Process memory on
# purpose: task states reach the API asynchronously (as events), so when the flow's hook
# runs, in the same process, the API may not show the failed step yet.
_step_alerted: set[tuple[UUID, int]] = set()


def alert_failed_step(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> None:
    """``on_failure`` of a step task: the error alert naming the step."""
    context = FlowRunContext.get()
    flow_run = context.flow_run if context else None
    if flow_run is not None:
        _step_alerted.add((flow_run.id, flow_run.run_count))
    send_error_alert(
        context.flow.name if context and context.flow else task.name,
        flow_run,
        step=task.name,
        error=error_text(state),
        log_lines=last_log_lines(task_run.flow_run_id, task_run.id),
    )


def alert_failed_run(flow: Flow[..., Any], flow_run: FlowRun, state: State[Any]) -> None:
    """``on_failure`` / ``on_crashed`` of a flow: the error alert no step sent. Either
    way, the run is then marked alerted (``mark_alerted``)."""
    try:
        if state.name in SELF_ALERTED:
            return
        attempt = (flow_run.id, flow_run.run_count)
        if attempt in _step_alerted:
            _step_alerted.discard(attempt)
            return
        step_run = running_step(flow_run) if state.is_crashed() else None
        send_error_alert(
            flow.name,
            flow_run,
            step=step_name(step_run) if step_run else "flow",
            error=error_text(state),
            log_lines=last_log_lines(flow_run.id, step_run.id if step_run else None),
        )
    finally:
        mark_alerted(flow.name, flow_run, state)


def mark_alerted(flow_name: str, flow_run: FlowRun, state: State[Any]) -> None:
    """Emit the run's ``ALERTED_EVENT``: its own alert is out, the automation stays quiet.
    Best effort: Prefect logs an event it cannot send, and the automation then alerts a
    second time rather than never."""
    event = alerted_event(flow_name, flow_run, state)
    emit_event(
        event.event,
        resource=dict(event.resource),
        related=[dict(resource) for resource in event.related],
        follows=alerted_after(flow_run, state),
    )


def alerted_event(flow_name: str, flow_run: FlowRun, state: State[Any]) -> Event:
    """The ``ALERTED_EVENT`` of a run: the run as its resource, its flow as related (what
    the automation's trigger matches, as on the run's state events)."""
    return Event(
        event=ALERTED_EVENT,
        resource={
            "prefect.resource.id": f"prefect.flow-run.{flow_run.id}",
            "prefect.resource.name": flow_run.name,
            "prefect.state-name": state.name or "",
        },
        related=[
            {
                "prefect.resource.id": f"prefect.flow.{flow_run.flow_id}",
                "prefect.resource.role": "flow",
                "prefect.resource.name": flow_name,
            }
        ],
    )


def alerted_after(flow_run: FlowRun, state: State[Any]) -> Event | None:
    """The run's state event as the server names it (the state's id): the alerted event
    follows it, so the server never takes it for earlier."""
    if state.id is None or state.timestamp is None:
        return None
    return Event(
        id=state.id,
        occurred=state.timestamp,
        event=f"prefect.flow-run.{state.name}",
        resource={"prefect.resource.id": f"prefect.flow-run.{flow_run.id}"},
    )


def send_job_summary(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> None:
    """``on_completion`` of the report task: its result is the job_summary context."""
    summary = state.result()
    if notify("job_summary", **summary) is Delivery.FAILED:
        count_failed_alert(summary["site"], summary["job_id"], "job_summary")


def count_failed_alert(site: str, job_id: str, template: str) -> None:
    """Count an undelivered alert in the job's document; best effort (logged)."""
    try:
        with Elasticsearch(
            **get_settings().elasticsearch_client_kwargs(),
            request_timeout=10,
            max_retries=2,
        ) as es:
            add_failed_alert(es, site, job_id, template)
    except (TransportError, ApiError) as exc:
        run_logger().warning(
            "undelivered %s alert not counted in the jobs document of %s (%s)",
            template,
            job_id,
            type(exc).__name__,
        )


def send_error_alert(
    flow_name: str,
    flow_run: FlowRun | None,
    *,
    step: str,
    error: str,
    log_lines: list[str],
) -> None:
    parameters = flow_run.parameters if flow_run else {}
    site = parameters.get("site")
    job_id = parameters.get("job_id") or (
        job_id_for(site, flow_run.id) if flow_run and site else None
    )
    flow = f"scrape-{site}" if site else flow_name
    if flow_run is not None:
        record_failure(flow_run.id, flow, step=step, error=error, log_lines=log_lines)
    notify(
        "error",
        flow=flow,
        step=step,
        site=site,
        job_id=job_id,
        error=error,
        log_lines=log_lines,
        run_url=url_for("flow-run", obj_id=flow_run.id) if flow_run else None,
    )


def record_failure(
    flow_run_id: UUID, flow: str, *, step: str, error: str, log_lines: list[str]
) -> None:
    """The failed step, its error and last log lines as a markdown artifact of the run
    (``<flow>-failure``), next to the report a complete run has. Best effort: the alert
    goes out whether or not Prefect takes the artifact."""
    artifact = ArtifactCreate(
        key=f"{flow.replace('_', '-')}-failure",
        type="markdown",
        description=f"{flow} failed in step {step}",
        data=failure_markdown(flow, step, error, log_lines),
        flow_run_id=flow_run_id,
    )
    try:
        with get_client(sync_client=True) as client:
            client.create_artifact(artifact)
    except Exception as exc:
        logger.warning("could not record the failure artifact of %s: %s", flow_run_id, exc)


def error_text(state: State[Any]) -> str:
    """The exception as ``Type: message`` when the state holds it, else the state message."""
    exc = None
    if state.data is not None:  # a crash recorded by the runner holds no result
        try:
            exc = state.result(raise_on_failure=False)
        except Exception as lookup_error:  # the state message still says what failed
            logger.warning("could not read the failed state's exception: %s", lookup_error)
    if isinstance(exc, BaseException):
        return f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
    return (state.message or state.name or "failed")[:ERROR_CHARS]


def step_name(task_run: TaskRun) -> str:
    """The task's name: Prefect names its runs ``<task name>-<suffix>``."""
    return task_run.name.rsplit("-", 1)[0]


def running_step(flow_run: FlowRun) -> TaskRun | None:
    """The task run of this attempt that was last running or failing (for a crash)."""
    try:
        with get_client(sync_client=True) as client:
            task_runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))
            )
    except Exception as exc:  # context for the alert only: never block the alert
        logger.warning("could not read the task runs of %s: %s", flow_run.id, exc)
        return None
    candidates = [
        run
        for run in task_runs
        if run.flow_run_run_count == flow_run.run_count and run.state_type in UNFINISHED
    ]
    return max(candidates, key=_started, default=None)


def _started(run: TaskRun) -> datetime:
    """When a task run started (or was created, before it starts); the server sets both."""
    return run.start_time or run.created or datetime.min.replace(tzinfo=UTC)


def last_log_lines(flow_run_id: UUID | None, task_run_id: UUID | None = None) -> list[str]:
    """The last lines Prefect recorded for a task run (or the whole flow run), oldest
    first, one line per record; none when the API cannot be read."""
    if flow_run_id is None:
        return []
    try:
        APILogHandler().flush()  # this process's queued lines reach the API first
        log_filter = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
        if task_run_id is not None:
            log_filter.task_run_id = LogFilterTaskRunId(any_=[task_run_id])
        with get_client(sync_client=True) as client:
            logs = client.read_logs(
                log_filter=log_filter, limit=LOG_LINES * 3, sort=LogSort.TIMESTAMP_DESC
            )
    except Exception as exc:  # context for the alert only: never block the alert
        logger.warning("could not read the logs of %s: %s", flow_run_id, exc)
        return []
    lines = [
        f"{logging.getLevelName(log.level)} {log.message.splitlines()[0][:LOG_LINE_CHARS]}"
        for log in reversed(logs)
        if log.message and not log.message.startswith(ENGINE_FAILURE_LINES)
    ]
    return lines[-LOG_LINES:]
