"""A drifted site on the real Prefect server: the run goes on, warns, proposes a baseline.

The same stack as test_scrape_flow (its ``stack`` fixture): demo shop layout v3 renames
every class and wrapper but keeps the structured data, so the gate's verdict is
``drifted``: the scrape completes with every item, Slack gets a drift warning naming
what changed, and the proposed baseline is a new file and an artifact of the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fingerprints.baselines.proposed import proposed_dir
from fingerprints.baselines.store import SITES_DIR, load_baseline
from tests.orchestration.test_scrape_flow import PRODUCTS, Stack, job_id_of, slack_texts, stack

__all__ = ["stack"]  # the module-scoped fixture, shared by import


@pytest.fixture
def proposals() -> Iterator[Path]:
    """The demo's proposed-baseline directory; what a test adds there is removed after."""
    directory = proposed_dir("demo")
    before = set(directory.glob("*.json")) if directory.is_dir() else set()
    yield directory
    for path in set(directory.glob("*.json")) - before if directory.is_dir() else ():
        path.unlink()
    if directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()


def test_a_drifted_layout_completes_warns_and_proposes_a_baseline(
    stack: Stack, proposals: Path
) -> None:
    baseline_before = (SITES_DIR / "demo" / "baseline.json").read_bytes()
    es = stack.es()
    stack.site.control(layout="v3")
    try:
        run_id = stack.trigger("scrape-demo")
        run = stack.wait(run_id, timeout=600)
    finally:
        stack.site.control(layout="v1")
    # Completed, but not plain green: the runs list names the drift.
    assert (run["state"]["type"], run["state"]["name"]) == (
        "COMPLETED",
        "CompletedWithWarnings",
    ), run["state"]
    assert "structure drifted" in run["state"]["message"]
    job_id = job_id_of(run_id)
    job = es.get(index="jobs", id=f"demo:{job_id}")["_source"]
    assert job["status"] == "completed" and job["items_scraped"] == PRODUCTS

    warnings = [text for text in slack_texts(stack) if "drifted, the run continues" in text]
    assert warnings, slack_texts(stack)
    assert "scrape-demo: structure drifted, the run continues" in warnings[-1]
    assert "product_links" in warnings[-1] and "skeleton" in warnings[-1]
    assert "skipped (fail-closed)" not in " ".join(slack_texts(stack)[-3:])
    summary = [text for text in slack_texts(stack) if f"job `{job_id}`" in text]
    assert summary and ":warning: *scrape-demo* completed with" in summary[-1]
    assert "structure drifted (the data still came out)" in summary[-1]

    (written,) = proposals.glob("*.json")
    assert written.name.endswith("Z.json")
    proposed = json.loads(written.read_text())
    assert proposed["site"] == "demo"
    assert set(proposed["page_types"]) == {"home", "listing", "product"}
    assert (SITES_DIR / "demo" / "baseline.json").read_bytes() == baseline_before
    load_baseline("demo")  # still the v1 baseline, untouched
    artifacts = {a["key"]: a for a in stack.artifacts(run_id)}
    assert "demo-proposed-baseline" in artifacts
    assert '"fingerprint_version"' in artifacts["demo-proposed-baseline"]["data"]
