"""An operator's approval of a new baseline, asked for in the Prefect UI.

When the structure gate fails closed and proposes a baseline (the sampled structure,
``proposed_baseline`` in its report), a scrape run can wait for an operator instead of
failing at once: it *suspends* (``prefect.flow_runs.suspend_flow_run``), which ends the
run's process and frees the work pool's slot, and the Prefect UI shows a "Resume" form
asking for a ``BaselineDecision``:

- ``accept``: the proposal becomes the site's baseline (``fingerprints.baselines.versions``: the
  replaced one is kept under ``<site>/history/``) and the run goes on to crawl;
- ``reject``: the run ends Failed (closed);
- no answer within ``GATE_APPROVAL_TIMEOUT`` seconds: Prefect's server fails the run.

A resumed run starts the flow again from the top (Prefect re-runs a suspended flow's
code; tasks with cached results return them without running). The gate's report the
operator decided on is therefore kept in a task cached for the run (see ``scrape_tasks.py``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal

from prefect.flow_runs import suspend_flow_run
from prefect.input import RunInput
from pydantic import Field

from core.config import PlatformSettings, get_settings
from fingerprints.baselines.store import SITES_DIR
from fingerprints.baselines.versions import accept_baseline

Decision = Literal["accept", "reject"]
DETAIL_LINES = 30  # of the gate's summary shown in the form: it has a size limit


class BaselineDecision(RunInput):
    """The "Resume" form of a run waiting for a baseline approval."""

    decision: Decision = Field(
        description=(
            "accept: the proposed structure becomes the site's baseline and the run goes "
            "on; reject: the run ends Failed"
        )
    )
    note: str = Field(default="", description="why (kept in the site's baseline history)")
    accept_empty: bool = Field(
        default=False,
        description=(
            "accept even though the proposed layout extracts nothing from some page type "
            "(its runs would store nothing from those pages)"
        ),
    )


def extraction_losses(result: dict[str, Any]) -> list[str]:
    """What extraction lost on the gate's sample, one line each, worst first: page types
    whose callback yielded nothing (no item, no link), then fields lost."""
    extraction = result.get("extraction") or {}
    page_types = extraction.get("page_types") or {}
    empty = [
        f"{name}: extraction yielded nothing on {entry.get('pages', 0)} page(s) (no item, no link)"
        for name, entry in sorted(page_types.items())
        if entry.get("pages") and not entry.get("items") and not entry.get("requests")
    ]
    failed = [
        f"{name}: fields lost: {', '.join(fields)}"
        for name, fields in sorted((extraction.get("failed_fields") or {}).items())
        if fields
    ]
    lost = extraction.get("lost_fields") or []
    over_sample = [f"lost over the whole sample: {', '.join(lost)}"] if lost else []
    return empty + failed + over_sample


def extracts_nothing(result: dict[str, Any]) -> list[str]:
    """The page types the proposed layout extracts nothing from (accepting it would store
    nothing from their pages)."""
    page_types = (result.get("extraction") or {}).get("page_types") or {}
    return sorted(
        name
        for name, entry in page_types.items()
        if entry.get("pages") and not entry.get("items") and not entry.get("requests")
    )


def sites_dir(settings: PlatformSettings | None = None) -> Path:
    """Where baselines are read and accepted ones written (``FINGERPRINT_SITES_DIR``)."""
    configured = (settings or get_settings()).fingerprint_sites_dir
    return configured if configured is not None else SITES_DIR


def timeout_seconds(override: int | None = None, settings: PlatformSettings | None = None) -> int:
    """The run's ``approval_timeout`` parameter when given, else ``GATE_APPROVAL_TIMEOUT``."""
    if override is None:
        return (settings or get_settings()).gate_approval_timeout
    if override < 0:
        raise ValueError(f"approval_timeout must be 0 (no approval step) or more, got {override}")
    return override


def can_approve(result: dict[str, Any], timeout: int) -> bool:
    """Ask an operator only when there is something to accept and time to do it."""
    return timeout > 0 and bool(result.get("proposed_baseline"))


def describe(
    site: str, result: dict[str, Any], timeout: int, now: dt.datetime | None = None
) -> str:
    """The form's description (Markdown): what failed, what accepting does, the deadline."""
    deadline = (now or dt.datetime.now(dt.UTC)) + dt.timedelta(seconds=timeout)
    verdict = result.get("verdict") or result.get("status") or "failed"
    summary = str(result.get("summary") or result.get("reason") or "").splitlines()
    shown = summary[:DETAIL_LINES] + (["..."] if len(summary) > DETAIL_LINES else [])
    page_types = ", ".join(sorted((result.get("proposed_baseline") or {}).get("page_types", {})))
    losses = extraction_losses(result)
    empty = extracts_nothing(result)
    lines = [
        f"**scrape-{site}: the structure gate failed closed ({verdict}).**",
        "",
        "**What extraction lost on the sample:**"
        if losses
        else "**Extraction:** complete on the sample.",
        *(f"- {line}" for line in losses),
        "",
    ]
    if empty:
        lines += [
            f"**accept is refused** while the proposed layout extracts nothing from "
            f"{', '.join(empty)}: tick *accept_empty* to accept it anyway.",
            "",
        ]
    lines += [
        "```",
        *shown,
        "```",
        "",
        f"**accept**: the sampled structure ({page_types}) becomes the baseline of {site!r}; "
        "the current one is kept in the site's `history/`, and this run goes on to crawl.",
        "",
        "**reject**: this run ends Failed; nothing is crawled or written.",
        "",
        f"Without an answer by {deadline.strftime('%Y-%m-%d %H:%M UTC')} the run fails.",
    ]
    return "\n".join(lines)


def request_decision(site: str, result: dict[str, Any], timeout: int) -> BaselineDecision:
    """Suspend the current flow run until an operator answers; the answer, on resume.

    The first call ends the run's process (Prefect raises ``Pause`` out of the flow); the
    resumed run calls this again and gets the operator's answer back.
    """
    form = BaselineDecision.with_initial_data(description=describe(site, result, timeout))
    return suspend_flow_run(wait_for_input=form, timeout=timeout)


def accept(
    site: str,
    result: dict[str, Any],
    *,
    note: str,
    by: str,
    settings: PlatformSettings | None = None,
) -> Path:
    """Write the accepted proposal as the site's baseline; returns the baseline's path."""
    return accept_baseline(
        site, result["proposed_baseline"], sites_dir=sites_dir(settings), note=note, by=by
    )


def refusal(site: str, result: dict[str, Any], decision: BaselineDecision) -> str | None:
    """Why an ``accept`` is not taken (None: it is): the proposed layout extracts nothing
    from some page type and the operator did not tick ``accept_empty``."""
    empty = extracts_nothing(result)
    if decision.decision != "accept" or not empty or decision.accept_empty:
        return None
    return (
        f"structure gate: accepting the proposed baseline of {site} was refused: it extracts "
        f"nothing from {', '.join(empty)} (resume with accept_empty to accept it anyway)"
    )


def rejection(site: str, decision: BaselineDecision) -> str:
    note = f": {decision.note}" if decision.note else ""
    return f"structure gate: the proposed baseline of {site} was rejected in the Prefect UI{note}"
