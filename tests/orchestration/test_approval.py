"""The approval step's plain logic (no services): settings, the form, accepting."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from core.config import PlatformSettings
from fingerprints.baselines.store import SITES_DIR
from fingerprints.baselines.versions import baseline_history
from orchestration import approval
from orchestration.approval import BaselineDecision

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def gate_report(proposed: dict[str, Any] | None) -> dict[str, Any]:
    """A failed-closed gate's report as the scrape flow gets it (GateResult.to_dict() plus
    the summary ``verify_structure_task`` adds)."""
    return {
        "passed": False,
        "verdict": "structure_changed",
        "status": "structure_changed",
        "site": "demo",
        "mode": "live",
        "reason": "1 page type(s) changed: product",
        "page_types": {"product": {"passed": False, "similarity": 0.41, "threshold": 0.85}},
        "proposed_baseline": proposed,
        "extraction": {"failed_fields": {"product": ["price"]}},
        "summary": "demo: live structure check FAILED (structure_changed)\n- product: FAILED",
    }


def demo_baseline() -> dict[str, Any]:
    return dict(json.loads((SITES_DIR / "demo" / "baseline.json").read_text()))


def test_settings_default_to_no_approval_step_and_the_repository_baselines() -> None:
    settings = PlatformSettings.model_validate({})
    assert approval.timeout_seconds(settings=settings) == 0
    assert approval.sites_dir(settings) == SITES_DIR


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GATE_APPROVAL_TIMEOUT", "3600")
    monkeypatch.setenv("FINGERPRINT_SITES_DIR", str(tmp_path))
    settings = PlatformSettings()
    assert approval.timeout_seconds(settings=settings) == 3600
    assert approval.timeout_seconds(60, settings=settings) == 60  # the run's parameter wins
    assert approval.timeout_seconds(0, settings=settings) == 0
    assert approval.sites_dir(settings) == tmp_path
    monkeypatch.setenv("GATE_APPROVAL_TIMEOUT", "-1")
    with pytest.raises(ValidationError, match="gate_approval_timeout"):
        PlatformSettings()
    with pytest.raises(ValueError, match="approval_timeout must be 0"):
        approval.timeout_seconds(-5, settings=settings)


def test_an_operator_is_asked_only_with_a_proposal_and_time_to_answer() -> None:
    assert approval.can_approve(gate_report(demo_baseline()), 600)
    assert not approval.can_approve(gate_report(demo_baseline()), 0)  # the setting's "off"
    assert not approval.can_approve(gate_report(None), 600)  # blocked, fetch_failed, ...
    assert not approval.can_approve({"status": "error", "reason": "x", "page_types": {}}, 600)


def test_the_form_asks_for_a_decision_the_server_can_validate() -> None:
    schema = BaselineDecision.model_json_schema()
    assert schema["required"] == ["decision"]  # resuming without an answer is refused
    assert schema["properties"]["decision"]["enum"] == ["accept", "reject"]
    assert BaselineDecision(decision="accept").note == ""
    with pytest.raises(ValidationError):
        BaselineDecision(decision="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        BaselineDecision(decision="accept", approve=True)  # type: ignore[call-arg]


def test_the_form_describes_the_failure_what_accepting_does_and_the_deadline() -> None:
    text = approval.describe("demo", gate_report(demo_baseline()), 3600, now=NOW)
    assert text.startswith("**scrape-demo: the structure gate failed closed (structure_changed)")
    assert "- product: FAILED" in text
    assert "(home, listing, product) becomes the baseline of 'demo'" in text
    assert "**reject**: this run ends Failed" in text
    assert "Without an answer by 2026-12-01 13:00 UTC the run fails." in text
    long = gate_report(demo_baseline()) | {"summary": "\n".join(f"l{i}" for i in range(100))}
    shown = approval.describe("demo", long, 60, now=NOW)
    assert "l29" in shown and "l30" not in shown and "..." in shown


def test_accept_writes_the_proposal_where_the_gate_reads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sites = tmp_path / "sites"
    shutil.copytree(SITES_DIR / "demo", sites / "demo")
    before = (sites / "demo" / "baseline.json").read_text()
    proposed = demo_baseline() | {"threshold": 0.8}
    monkeypatch.setenv("FINGERPRINT_SITES_DIR", str(sites))

    path = approval.accept(
        "demo", gate_report(proposed), note="redesign", by="run x", settings=PlatformSettings()
    )

    assert path == sites / "demo" / "baseline.json"
    assert json.loads(path.read_text())["threshold"] == 0.8
    (version,) = baseline_history("demo", sites_dir=sites)
    assert (version.note, version.by) == ("redesign", "run x")
    assert version.previous is not None
    assert (sites / "demo" / version.previous).read_text() == before
    assert (SITES_DIR / "demo" / "baseline.json").read_text() == before


def test_rejection_message_names_the_site_and_the_note() -> None:
    assert approval.rejection("demo", BaselineDecision(decision="reject", note="broken")) == (
        "structure gate: the proposed baseline of demo was rejected in the Prefect UI: broken"
    )
    assert approval.rejection("demo", BaselineDecision(decision="reject")).endswith("Prefect UI")
