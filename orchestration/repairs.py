"""Repair suggestions for a gate that failed closed on broken extraction.

``repair_suggestions(site, result)`` is what the structure alert calls with the gate's
result dict. When the result names fields whose extraction failed
(``extraction.failed_fields``), it gathers the sample pages of those page types (the
fixture files the check read, or the live pages fetched again through the site's fetch
stack), asks ``fingerprints.repair.suggestions`` for validated replacement rules, puts the report
in the run's markdown artifact and returns the lines for the Slack alert. Without an
OpenAI-compatible endpoint the core logs one line and nothing is fetched.

Suggestions are a help, never a reason for the alert to fail: any problem here is one
WARNING and no suggestion lines.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prefect.artifacts import create_markdown_artifact
from prefect.context import FlowRunContext, TaskRunContext

from core.config import PlatformSettings, get_settings
from fingerprints.baselines.store import SITES_DIR, FingerprintConfig, site_dir
from fingerprints.repair.suggestions import RepairReport, chat_client, suggest_repairs
from fingerprints.sampling.fetch import fetch_sample
from orchestration.alerts import render, run_logger

logger = logging.getLogger(__name__)

Pages = dict[str, list[tuple[str, str]]]
# Values of a kept repair shown in Slack (the artifact has them all).
SLACK_EXAMPLES = 2
SAMPLE_TIMEOUT = 300.0


@dataclass(frozen=True)
class RepairOutcome:
    report: RepairReport
    markdown: str  # the artifact's text
    slack_text: str  # lines for the structure alert ("" when there is nothing to say)


def failed_fields(result: Mapping[str, Any]) -> dict[str, list[str]]:
    """Page type -> fields whose extraction failed, from the gate's result dict."""
    extraction = result.get("extraction") or {}
    failed = extraction.get("failed_fields") if isinstance(extraction, Mapping) else None
    if not isinstance(failed, Mapping):
        return {}
    return {str(pt): [str(f) for f in fields] for pt, fields in failed.items() if fields}


def current_rules(site: str) -> dict[str, dict[str, str]]:
    """The selectors the site profile's ``[fingerprint]`` table names, per page type (named
    like item fields where they are; shown as the "old rule")."""
    config = FingerprintConfig.for_site(site)
    return {name: dict(page_type.selectors) for name, page_type in config.page_types.items()}


def sample_pages(
    site: str,
    result: Mapping[str, Any],
    page_types: Sequence[str],
    *,
    sites_dir: Path = SITES_DIR,
    timeout: float = SAMPLE_TIMEOUT,
) -> Pages:
    """The pages the gate judged, for ``page_types``: fixture files (``mode`` fixtures)
    or the live pages fetched again (the gate's result carries their URLs, not bodies)."""
    urls = {
        name: [str(page["url"]) for page in (detail.get("pages") or [])]
        for name, detail in (result.get("page_types") or {}).items()
        if name in page_types
    }
    if result.get("mode") == "fixtures":
        root = site_dir(site, sites_dir)
        return {
            name: [(path, (root / path).read_text(errors="replace")) for path in paths]
            for name, paths in urls.items()
            if paths
        }
    pages: Pages = {}
    by_base: dict[str, dict[str, list[str]]] = {}
    for name, page_urls in urls.items():
        for url in page_urls:
            parts = urlsplit(url)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            base = f"{parts.scheme}://{parts.netloc}"
            by_base.setdefault(base, {}).setdefault(name, []).append(path or "/")
    for base, plan in by_base.items():
        for page in fetch_sample(site, plan, base_url=base, timeout=timeout):
            if page.error is None and page.status == 200 and page.body:
                html = page.body.decode("utf-8", errors="replace")
                pages.setdefault(page.page_type, []).append((page.url, html))
    return pages


def slack_text(report: RepairReport) -> str:
    """The alert's lines (``repair_suggestions`` template); "" when nothing was asked."""
    if report.skipped or (not report.kept and not report.discarded and not report.errors):
        return ""
    kept = [
        {
            **repair.to_dict(),
            "example": "; ".join(f"`{value}`" for _, value in repair.values[:SLACK_EXAMPLES]),
        }
        for repair in report.kept
    ]
    return render(
        "repair_suggestions",
        model=report.model,
        kept=kept,
        discarded=len(report.discarded),
        errors=len(report.errors),
    )


def artifact_key(site: str) -> str:
    """Prefect artifact keys are lowercase letters, digits and dashes."""
    return "repair-suggestions-" + "".join(c if c.isalnum() else "-" for c in site.lower())


def repair_suggestions(
    site: str,
    result: Mapping[str, Any],
    *,
    settings: PlatformSettings | None = None,
    pages: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    sites_dir: Path = SITES_DIR,
) -> RepairOutcome | None:
    """Suggestions for the gate result's failed fields (None when it names none); the
    markdown artifact is created inside a Prefect run. Never raises."""
    fields = failed_fields(result)
    if not fields:
        return None
    settings = settings or get_settings()
    try:
        client = chat_client(settings)
        if client is not None and pages is None:
            pages = sample_pages(site, result, list(fields), sites_dir=sites_dir)
        report = suggest_repairs(
            site,
            fields,
            pages or {},
            client=client,
            model=settings.chat_model,
            current_rules=current_rules(site),
        )
    except Exception as exc:  # a help for the alert, never its failure
        run_logger().warning(
            "repair suggestions for %s failed: %s: %s", site, type(exc).__name__, exc
        )
        return None
    outcome = RepairOutcome(report, report.markdown(), slack_text(report))
    if FlowRunContext.get() is not None or TaskRunContext.get() is not None:
        create_markdown_artifact(
            outcome.markdown,
            key=artifact_key(site),
            description=f"Repair suggestions for {site}'s failing fields",
        )
    return outcome


def alert_lines(site: str, result: Mapping[str, Any]) -> str:
    """What ``alert_structure_change`` adds to the structure alert (``repairs=``)."""
    outcome = repair_suggestions(site, result)
    return outcome.slack_text if outcome is not None else ""
