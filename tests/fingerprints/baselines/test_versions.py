"""Versioned baselines: accepting a proposal keeps the replaced baseline (no services)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fingerprints.baselines.store import (
    SITES_DIR,
    BaselineError,
    FingerprintConfig,
    compute_baseline,
    dumps,
    load_baseline,
)
from fingerprints.baselines.versions import BaselineVersion, accept_baseline, baseline_history
from fingerprints.gate import check_site
from standins.demo_site import pages
from standins.demo_site.catalog import build_catalog

BASE = "http://127.0.0.1:8000"
NOW = dt.datetime(2026, 12, 1, 12, 30, 5, tzinfo=dt.UTC)


def proposal(tmp_path: Path, layout: str) -> dict[str, Any]:
    """A baseline of demo pages in ``layout``, as the gate proposes it (SiteBaseline JSON)."""
    catalog = build_catalog(n_products=200)
    root = tmp_path / f"sample-{layout}" / "demo" / "fixtures"
    for page_type in ("home", "listing", "product"):
        (root / page_type).mkdir(parents=True)
    (root / "home" / "index.html").write_text(pages.home(catalog, layout, BASE))
    for slug in ("kitchen", "audio"):
        html = pages.listing(catalog, slug, 1, layout, BASE) or ""
        (root / "listing" / f"{slug}.html").write_text(html)
    for product in catalog.products[:3]:
        html = pages.product_page(catalog, product.sku, layout, BASE) or ""
        (root / "product" / f"{product.sku}.html").write_text(html)
    config = FingerprintConfig.for_site("demo")  # the profile's page types and selectors
    baseline = compute_baseline("demo", sites_dir=root.parent.parent, config=config)
    return dict(json.loads(dumps(baseline.to_dict())))  # JSON, as it crosses the flow


@pytest.fixture
def sites(tmp_path: Path) -> Path:
    """A copy of the repository's demo site directory: the tests never write the real one."""
    target = tmp_path / "sites"
    shutil.copytree(SITES_DIR / "demo", target / "demo")
    return target


def test_accept_writes_the_proposal_and_archives_the_previous_baseline(
    sites: Path, tmp_path: Path
) -> None:
    before = (sites / "demo" / "baseline.json").read_text()
    proposed = proposal(tmp_path, "v2")

    path = accept_baseline(
        "demo", proposed, sites_dir=sites, note="v2 redesign", by="flow run x", now=NOW
    )

    assert path == sites / "demo" / "baseline.json"
    # Same format as `python -m fingerprints baseline` writes, and loadable by the gate.
    assert path.read_text() == dumps(proposed)
    assert load_baseline("demo", sites).page_types.keys() == proposed["page_types"].keys()
    archived = sites / "demo" / "history" / "baseline-20261201T123005Z.json"
    assert archived.read_text() == before
    (version,) = baseline_history("demo", sites_dir=sites)
    assert version.previous == "history/baseline-20261201T123005Z.json"
    assert (version.by, version.note) == ("flow run x", "v2 redesign")
    assert version.accepted_at == "2026-12-01T12:30:05+00:00"
    assert len(version.sha256) == 64
    assert not list((sites / "demo").rglob("*.tmp"))  # atomic writes leave nothing behind
    # The repository's own baseline is untouched.
    assert (SITES_DIR / "demo" / "baseline.json").read_text() == before


def test_history_is_newest_first_and_each_replaced_version_is_kept(
    sites: Path, tmp_path: Path
) -> None:
    original = (sites / "demo" / "baseline.json").read_text()
    v2 = proposal(tmp_path, "v2")
    v1 = proposal(tmp_path, "v1")
    accept_baseline("demo", v2, sites_dir=sites, note="first", now=NOW)
    accept_baseline("demo", v1, sites_dir=sites, note="second", now=NOW)  # same second

    history = baseline_history("demo", sites_dir=sites)
    assert [v.note for v in history] == ["second", "first"]
    assert [v.previous for v in history] == [
        "history/baseline-20261201T123005Z-2.json",
        "history/baseline-20261201T123005Z.json",
    ]
    assert (sites / "demo" / history[1].previous).read_text() == original
    assert json.loads((sites / "demo" / history[0].previous).read_text()) == v2
    assert json.loads((sites / "demo" / "baseline.json").read_text()) == v1


def test_accepting_the_current_baseline_again_writes_nothing(sites: Path, tmp_path: Path) -> None:
    proposed = proposal(tmp_path, "v2")
    accept_baseline("demo", proposed, sites_dir=sites, now=NOW)
    accept_baseline("demo", proposed, sites_dir=sites, now=NOW + dt.timedelta(minutes=5))
    assert len(baseline_history("demo", sites_dir=sites)) == 1
    assert len(list((sites / "demo" / "history").glob("baseline-*.json"))) == 1


def test_a_first_baseline_has_no_previous_version(tmp_path: Path) -> None:
    sites = tmp_path / "empty"
    accept_baseline("demo", proposal(tmp_path, "v1"), sites_dir=sites, now=NOW)
    (version,) = baseline_history("demo", sites_dir=sites)
    assert version.previous is None
    assert load_baseline("demo", sites).site == "demo"


def test_a_proposal_that_is_no_baseline_of_the_site_is_refused(sites: Path, tmp_path: Path) -> None:
    before = (sites / "demo" / "baseline.json").read_text()
    with pytest.raises(BaselineError, match="malformed baseline"):
        accept_baseline("demo", {"site": "demo"}, sites_dir=sites)
    other = proposal(tmp_path, "v2") | {"site": "shop"}
    with pytest.raises(BaselineError, match="for site 'shop', not 'demo'"):
        accept_baseline("demo", other, sites_dir=sites)
    assert (sites / "demo" / "baseline.json").read_text() == before
    assert baseline_history("demo", sites_dir=sites) == []


def test_an_accepted_live_structure_passes_the_gate_it_failed(sites: Path, tmp_path: Path) -> None:
    """What approval is for: the proposal, accepted, is what the next check compares to.
    Extraction is judged on every run: v2's product pages carry no product data, so its
    structure matches once accepted and the gate still stops (extraction_broken)."""
    for layout, verdict in (("v3", "passed"), ("v2", "extraction_broken")):
        proposed = proposal(tmp_path, layout)
        fixtures = tmp_path / f"sample-{layout}" / "demo"
        assert check_site("demo", sites_dir=fixtures.parent).status == "no_baseline"
        accept_baseline("demo", proposed, sites_dir=fixtures.parent, now=NOW)
        result = check_site("demo", sites_dir=fixtures.parent)
        assert (result.status, result.verdict) == ("passed", verdict), result.summary()
    assert "product" in result.reason and "yielded nothing" in result.reason


def test_history_entries_round_trip() -> None:
    version = BaselineVersion("2026-12-01T12:30:05+00:00", "me", "why", "0" * 64, None)
    assert BaselineVersion(**version.to_dict()) == version
