"""Field coverage: a field emptied on part of the items is reported; noise is not."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from crawlers.items import DemoProduct
from fingerprints.baselines.coverage import (
    CoverageBaseline,
    FieldExpectation,
    check_coverage,
    compare_coverage,
    fill_rates,
    is_filled,
    job_end_coverage,
    load_coverage_baseline,
    save_coverage_baseline,
)
from fingerprints.baselines.store import SITES_DIR
from standins.demo_site.catalog import build_catalog

REPO_ROOT = Path(__file__).resolve().parents[3]
BASE = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def items() -> list[dict[str, Any]]:
    """What the demo spider yields for the catalog (its crawl test asserts exactly this)."""
    catalog = build_catalog()
    return [{**p.to_dict(BASE), "job_id": "demo-job"} for p in catalog.products[:600]]


@pytest.fixture(scope="module")
def baseline(items: list[dict[str, Any]]) -> CoverageBaseline:
    return CoverageBaseline.from_items("demo", items)


def emptied(items: list[dict[str, Any]], field: str, share: float, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    chosen = set(rnd.sample(range(len(items)), round(share * len(items))))
    return [{**item, field: None} if i in chosen else item for i, item in enumerate(items)]


def test_is_filled() -> None:
    assert not any(is_filled(v) for v in (None, "", "   ", [], {}, ()))
    assert all(is_filled(v) for v in (0, 0.0, False, "x", [0], {"a": 1}))


def test_dropping_one_field_from_30_percent_of_items_is_reported(
    items: list[dict[str, Any]], baseline: CoverageBaseline
) -> None:
    report = compare_coverage(emptied(items, "brand", 0.30, seed=1), baseline)
    assert not report.ok
    assert report.dropped_fields == ["brand"]
    drop = report.drops[0]
    assert drop.expected == 1.0
    assert drop.actual == pytest.approx(0.70)
    assert "brand: filled on 70.0% of items, baseline 100.0%" in report.summary()


def test_one_to_two_percent_noise_is_not_reported(
    items: list[dict[str, Any]], baseline: CoverageBaseline
) -> None:
    for seed in range(5):
        noisy = items
        for index, field in enumerate(("brand", "rating", "description", "image", "reviews")):
            noisy = emptied(noisy, field, 0.01 + 0.0025 * index, seed=seed * 10 + index)
        report = compare_coverage(noisy, baseline)
        assert report.ok, report.summary()


def test_a_vanished_rare_field_is_reported_and_new_fields_noted() -> None:
    rows = [{"name": "x", "promo": "y" if i % 20 == 0 else None} for i in range(200)]
    baseline = CoverageBaseline.from_items("shop", rows)
    assert baseline.fields["promo"].rate == 0.05
    now = [{"name": "x", "promo": None, "badge": "new"} for _ in range(200)]
    report = compare_coverage(now, baseline)
    assert report.dropped_fields == ["promo"]
    assert "vanished" in report.summary()
    assert report.new_fields == ("badge",)


def test_per_field_tolerance_and_too_few_items() -> None:
    baseline = CoverageBaseline(
        "shop",
        {"a": FieldExpectation(1.0, tolerance=0.5), "b": FieldExpectation(1.0)},
        min_items=20,
    )
    rows = [{"a": None if i < 8 else 1, "b": None if i < 3 else 1} for i in range(20)]
    report = compare_coverage(rows, baseline)
    assert report.dropped_fields == ["b"]  # a: 0.40 drop within its 0.5 tolerance
    few = compare_coverage(rows[:5], baseline)
    assert not few.ok and few.drops == ()
    assert "fewer than the 20 needed" in few.problems[0]


def test_scrapy_items_and_missing_keys() -> None:
    products = [DemoProduct(sku=f"S{i}", url="u", name="n" if i % 2 else None) for i in range(10)]
    total, rates = fill_rates(products)
    assert total == 10
    assert rates["name"] == 0.5 and rates["sku"] == 1.0 and rates["brand"] == 0.0
    total, rates = fill_rates([{"a": 1}, {"b": 2}], fields=["c"])
    assert rates == {"a": 0.5, "b": 0.5, "c": 0.0}
    assert asdict(products[0])["reviews"] is None


def test_demo_coverage_baseline_is_committed_and_matches_a_clean_job(
    items: list[dict[str, Any]],
) -> None:
    committed = load_coverage_baseline("demo")
    assert committed.items >= 1000
    assert check_coverage("demo", items).ok
    report = check_coverage("demo", emptied(items, "price", 0.3, seed=3))
    assert report.dropped_fields == ["price"]
    missing = check_coverage("no-such-site", items)
    assert not missing.ok and "no coverage baseline" in missing.problems[0]
    assert (SITES_DIR / "demo" / "coverage.json").is_file()


def test_cli_coverage(tmp_path: Path, items: list[dict[str, Any]]) -> None:
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(item) + "\n" for item in items))
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        "".join(json.dumps(item) + "\n" for item in emptied(items, "rating", 0.3, seed=4))
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "fingerprints", "--sites-dir", str(tmp_path), *args]
        return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)

    assert cli("coverage", "shop", str(clean), "--update").returncode == 0
    assert (tmp_path / "shop" / "coverage.json").is_file()
    assert cli("coverage", "shop", str(clean)).returncode == 0
    result = cli("coverage", "shop", str(broken), "--json")
    assert result.returncode == 1
    assert [d["field"] for d in json.loads(result.stdout)["drops"]] == ["rating"]


def test_job_end_coverage_judges_against_the_baseline_when_the_site_has_one(
    items: list[dict[str, Any]], baseline: CoverageBaseline, tmp_path: Path
) -> None:
    save_coverage_baseline(baseline, tmp_path)
    report = job_end_coverage("demo", emptied(items, "brand", 0.30, seed=1), sites_dir=tmp_path)
    assert report.dropped_fields == ["brand"] and not report.ok
    assert report.expected == {name: e.rate for name, e in baseline.fields.items()}
    assert report.to_dict()["expected"]["brand"] == 1.0
    assert job_end_coverage("demo", items, sites_dir=tmp_path).ok


def test_job_end_coverage_without_a_baseline_measures_and_never_judges(
    items: list[dict[str, Any]], tmp_path: Path
) -> None:
    # Every item lost its brand: no baseline says it should have one, so no verdict.
    report = job_end_coverage(
        "newshop", emptied(items, "brand", 1.0, seed=1), fields=["gtin"], sites_dir=tmp_path
    )
    assert report.ok and report.expected is None and report.drops == ()
    assert report.items == len(items)
    assert report.rates["brand"] == 0.0 and report.rates["name"] == 1.0
    assert report.rates["gtin"] == 0.0  # a field of the item type no item filled
    assert report.to_dict()["expected"] is None


def test_job_end_coverage_names_a_malformed_baseline(
    items: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "demo" / "coverage.json"
    path.parent.mkdir()
    path.write_text('{"site": "demo"}')
    report = job_end_coverage("demo", items, sites_dir=tmp_path)
    assert not report.ok and "malformed coverage baseline" in report.problems[0]
    assert report.rates["name"] == 1.0 and report.drops == ()
