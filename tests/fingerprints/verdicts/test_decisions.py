"""The gate's verdicts on data: passed, drifted, structure_changed, extraction_broken.

No services: the pure verdict functions over made-up outputs, and the harness on stored
pages (the site's own spider callbacks, in process, no network).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crawlers.items import DemoProduct
from crawlers.profile_schema import FingerprintTable
from fingerprints.baselines.coverage import CoverageBaseline, FieldExpectation, lost_fields
from fingerprints.baselines.proposed import save_proposed_baseline
from fingerprints.baselines.store import (
    SITES_DIR,
    BaselineError,
    FingerprintConfig,
    SiteBaseline,
    load_baseline,
)
from fingerprints.extraction.callbacks import PageOutput, run_callbacks, site_spider
from fingerprints.extraction.fields import ITEMS, FieldPolicy
from fingerprints.extraction.judgement import judge_extraction
from fingerprints.gate import GateResult, Page, check_site, decide, evaluate, failure, judge_sample
from standins.demo_site.catalog import build_catalog
from standins.demo_site.pages import product_page

REPO_ROOT = Path(__file__).resolve().parents[3]
REAL_PAGES = REPO_ROOT.parent / "shared" / "real-pages"
BASE = "http://127.0.0.1:8000"
TWENIX_URL = "https://www.trustpilot.com/review/twenix.es"


def twenix() -> bytes:
    path = REAL_PAGES / "trustpilot" / "twenix.es.html"
    if not path.is_file():
        pytest.skip(f"saved real page not found at {path} (not part of the repository)")
    return path.read_bytes()


def products(n: int = 4) -> list[DemoProduct]:
    catalog = build_catalog()
    return [
        DemoProduct(**{**p.to_dict(BASE), "job_id": "job"}) for p in catalog.products[1 : n + 1]
    ]


COVERAGE = CoverageBaseline(
    "demo",
    {
        "name": FieldExpectation(1.0),
        "brand": FieldExpectation(1.0),
        "reviews": FieldExpectation(0.5),
        "cons": FieldExpectation(0.0),
    },
)
# The product page type's baseline: the rates its fixtures fill the fields at.
BASELINES = {"product": {ITEMS: {"name": 1.0, "brand": 1.0, "reviews": 0.5}}}
POLICY = FieldPolicy(required=frozenset({"name", "price", "currency"}))


# -- the pure judgement ------------------------------------------------------------------------


def test_small_samples_lose_a_field_only_when_chance_cannot_explain_it() -> None:
    items = [{"name": "x", "brand": None, "reviews": None, "cons": None}] * 3
    # brand (always filled) empty on 3 of 3: lost; reviews (half the time) empty on 3: chance.
    assert [d.field for d in lost_fields(items, COVERAGE)] == ["brand"]
    assert lost_fields([], COVERAGE) == ()
    many = [{"name": "x", "brand": "b", "reviews": None, "cons": None}] * 30
    assert [d.field for d in lost_fields(many, COVERAGE)] == ["reviews"]  # 30 empties: lost


def test_complete_extraction_of_valid_items() -> None:
    items = products()
    outputs = [PageOutput(item.url, "product", "parse_product", (item,)) for item in items] + [
        PageOutput(f"{BASE}/", "home", "parse", (), requests=12)
    ]
    report = judge_extraction(outputs, BASELINES, POLICY)
    assert report.complete, report.problems()
    assert report.failed_fields == {} and report.warnings() == []
    data = report.to_dict()
    assert data["page_types"]["product"]["items"] == 4
    assert data["page_types"]["home"]["requests"] == 12


def test_invalid_items_fallen_fields_and_silent_pages_fail_extraction() -> None:
    items = products()
    invalid = dataclasses.replace(items[0], price=None)  # required
    no_brand = [dataclasses.replace(item, brand=None) for item in items[1:]]
    outputs = [PageOutput(invalid.url, "product", "parse_product", (invalid,))] + [
        PageOutput(item.url, "product", "parse_product", (item,)) for item in no_brand
    ]
    report = judge_extraction(outputs, BASELINES, POLICY)
    assert not report.complete and report.failed and not report.broken
    product = report.page_types["product"]
    assert product.invalid[0]["errors"] == ["price: missing"]
    # brand is optional: 1 of 4 (baseline 100%) is a warning with the figure.
    assert report.warnings() == ["product: brand: 1 of 4 items (25.0%), baseline 100.0%"]
    assert report.failed_fields == {"product": ["price"]}

    required = dataclasses.replace(POLICY, required=POLICY.required | {"brand"})
    all_lost = judge_extraction(
        [PageOutput(i.url, "product", "parse_product", (i,)) for i in no_brand],
        BASELINES,
        required,
    )
    assert all_lost.broken and all_lost.failed_fields == {"product": ["brand"]}
    assert all_lost.lost == ("brand",)
    assert "required fields fell: brand: 0 of 3 items (0.0%)" in all_lost.problems()[0]

    silent = judge_extraction([PageOutput(f"{BASE}/p", "product", "parse_product")], BASELINES)
    assert not silent.complete
    assert "the callback yielded nothing" in silent.problems()[0]
    # Nothing came out: every field the baseline fills on at least half the items failed.
    assert silent.failed_fields == {"product": ["brand", "name", "reviews"]}


def _changed(site: str = "demo") -> GateResult:
    return GateResult(False, "structure_changed", site, "structure changed: product (...)")


def test_decide_on_a_changed_structure() -> None:
    complete = judge_extraction(
        [PageOutput(i.url, "product", "parse_product", (i,)) for i in products()], BASELINES
    )
    broken = judge_extraction([PageOutput(f"{BASE}/p", "product", "parse_product")], BASELINES)

    drifted = decide(_changed(), complete)
    assert (drifted.verdict, drifted.passed, drifted.status) == (
        "drifted",
        True,
        "structure_changed",
    )
    assert drifted.reason.startswith("structure drifted:")
    assert drifted.to_dict()["extraction"]["complete"] is True

    failed = decide(_changed(), broken)
    assert (failed.verdict, failed.passed) == ("structure_changed", False)
    assert "extraction failed" in failed.reason
    assert failed.extraction is not None
    assert failed.extraction["failed_fields"] == {"product": ["brand", "name", "reviews"]}

    strict = decide(_changed(), complete, strict=True)
    assert (strict.verdict, strict.passed) == ("structure_changed", False)
    assert "strict" in strict.reason

    unjudged = decide(_changed(), None, note="extraction could not run (KeyError)")
    assert (unjudged.verdict, unjudged.passed) == ("structure_changed", False)

    # Blocks, fetch failures, missing baselines and errors keep their precedence.
    for status in ("blocked", "fetch_failed", "no_baseline", "error"):
        kept = decide(failure("demo", status, "x"), broken)  # type: ignore[arg-type]
        assert (kept.verdict, kept.passed) == (status, False)


def test_decide_on_a_matching_structure_judges_the_items_too() -> None:
    """Extraction is judged on every run: a layout that still matches can lose its data."""
    matched = GateResult(True, "passed", "demo", "3 page(s) match the baseline")
    items = products()
    complete = judge_extraction(
        [PageOutput(i.url, "product", "parse_product", (i,)) for i in items], BASELINES, POLICY
    )
    kept = decide(matched, complete)
    assert (kept.verdict, kept.passed, kept.status) == ("passed", True, "passed")
    assert kept.proposed_baseline is None and kept.extraction is not None

    # A required field below the floor of its baseline: stopped, the field named.
    unnamed = [dataclasses.replace(i, name=None) for i in items]
    broken = judge_extraction(
        [PageOutput(i.url, "product", "parse_product", (i,)) for i in unnamed], BASELINES, POLICY
    )
    stopped = decide(matched, broken)
    assert (stopped.verdict, stopped.passed, stopped.status) == (
        "extraction_broken",
        False,
        "passed",
    )
    assert "name: 0 of 4 items (0.0%), baseline 100.0%" in stopped.reason
    assert stopped.proposed_baseline is None  # a new structure would not bring it back
    # The same on a changed structure: extraction_broken whatever the similarity.
    assert decide(_changed(), broken).verdict == "extraction_broken"

    # An optional field's fall: a warning with the figure, the run goes on.
    brandless = [dataclasses.replace(i, brand=None) for i in items]
    warned = decide(
        matched,
        judge_extraction(
            [PageOutput(i.url, "product", "parse_product", (i,)) for i in brandless],
            BASELINES,
            POLICY,
        ),
    )
    assert (warned.verdict, warned.passed) == ("drifted", True)
    assert "extraction warnings: product: brand: 0 of 4 items (0.0%)" in warned.reason

    # A callback that yields nothing on a matching structure: broken, not a layout change.
    silent = judge_extraction([PageOutput(f"{BASE}/p", "product", "parse_product")], BASELINES)
    assert decide(matched, silent).verdict == "extraction_broken"


# -- the harness on stored pages --------------------------------------------------------------


def test_the_demo_callbacks_on_v3_markup_yield_every_field() -> None:
    catalog = build_catalog()
    product = catalog.products[41]
    page = Page(
        BASE + product.url,
        "product",
        200,
        {"Content-Type": "text/html; charset=utf-8"},
        (product_page(catalog, product.sku, "v3", BASE) or "").encode(),
    )
    spider = site_spider("demo", BASE)
    reviews_url = f"{BASE}/api/products/{product.sku}/reviews"
    reviews = json.dumps({"reviews": [r.to_dict() for r in product.reviews]}).encode()

    def fetch(urls: Any) -> dict[str, Page]:
        assert list(urls) == [reviews_url]  # only the part, never navigation
        headers = {"Content-Type": "application/json"}
        return {reviews_url: Page(reviews_url, "_parts", 200, headers, reviews, path=reviews_url)}

    outputs = run_callbacks(spider, [page], {"product": "parse_product"}, fetch=fetch)
    (item,) = outputs[0].items
    expected = {**product.to_dict(BASE), "job_id": "fingerprint-demo"}
    assert dataclasses.asdict(item) == {**expected, "incomplete": None}

    # The fixture check has no network: the part cannot be fetched (a changed structure
    # fails closed on it; a matching one leaves the page unjudged).
    offline = run_callbacks(spider, [page], {"product": "parse_product"})
    assert offline[0].items == () and offline[0].errors == ()
    assert "follow-up request not fetched" in offline[0].unfetched[0]
    assert judge_extraction(offline).failed
    assert judge_extraction(offline, parts_required=False).page_types["product"].unjudged == 1
    # A page type without a declared callback cannot be judged.
    undeclared = run_callbacks(spider, [page], {})
    assert "no callback declared" in undeclared[0].errors[0]


def test_trustpilot_2024_save_against_the_2025_baseline_drifts() -> None:
    """The issue's case: 0.73 structurally, yet the spider reads every field from it."""
    body = twenix()
    baseline = load_baseline("trustpilot")
    config = FingerprintConfig.for_site("trustpilot")
    pages = [Page(TWENIX_URL, "company_reviews", 200, {"Content-Type": "text/html"}, body)]
    structural = evaluate("trustpilot", pages, baseline, config=config, mode="fixtures")
    assert (structural.status, structural.verdict) == ("structure_changed", "structure_changed")

    result = judge_sample(structural, pages, baseline, config)

    assert (result.verdict, result.passed, result.status) == (
        "drifted",
        True,
        "structure_changed",
    ), result.summary()
    assert result.extraction is not None
    extraction = result.extraction["page_types"]["company_reviews"]
    assert extraction["items"] == 20 and extraction["invalid_items"] == 0
    assert result.extraction["failed_fields"] == {}
    assert "DRIFTED" in result.summary()
    # The proposed baseline is the builder's baseline of the sample: it matches it.
    assert result.proposed_baseline is not None
    proposed = SiteBaseline.from_dict(result.proposed_baseline)
    assert proposed.page_types["company_reviews"].pages == 1
    again = evaluate("trustpilot", pages, proposed, config=config)
    assert again.verdict == "passed", again.summary()

    strict = judge_sample(structural, pages, baseline, dataclasses.replace(config, strict=True))
    assert (strict.verdict, strict.passed) == ("structure_changed", False)


@pytest.fixture
def trustpilot_sites(tmp_path: Path) -> Path:
    """The trustpilot site directory with one fixture replaced by the 2024 save."""
    body = twenix()
    sites = tmp_path / "sites"
    shutil.copytree(SITES_DIR / "trustpilot", sites / "trustpilot")
    (sites / "trustpilot" / "fixtures" / "company_reviews" / "harbourbikes.html").write_bytes(body)
    return sites


def test_check_site_and_the_cli_report_drifted(trustpilot_sites: Path) -> None:
    result = check_site("trustpilot", sites_dir=trustpilot_sites)
    assert (result.verdict, result.passed, result.mode) == ("drifted", True, "fixtures")
    assert result.changed_page_types == ["company_reviews"]

    args = ["--sites-dir", str(trustpilot_sites), "check", "trustpilot", "--json"]
    run = subprocess.run(
        [sys.executable, "-m", "fingerprints", *args],
        cwd=REPO_ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (data,) = json.loads(run.stdout)
    assert (data["verdict"], data["passed"], data["status"]) == (
        "drifted",
        True,
        "structure_changed",
    )
    assert data["proposed_baseline"]["site"] == "trustpilot"
    assert data["extraction"]["complete"] is True


def test_proposed_baselines_are_new_files_never_overwritten(tmp_path: Path) -> None:
    baseline_file = tmp_path / "demo" / "baseline.json"
    baseline_file.parent.mkdir(parents=True)
    baseline_file.write_text("{}")
    moment = dt.datetime(2026, 12, 1, 12, 0, 5, tzinfo=dt.UTC)
    first = save_proposed_baseline("demo", {"site": "demo"}, sites_dir=tmp_path, now=moment)
    second = save_proposed_baseline("demo", {"site": "demo"}, sites_dir=tmp_path, now=moment)
    assert first.name == "20261201T120005Z.json"
    assert second.name == "20261201T120005Z-1.json"
    assert first.parent == tmp_path / "demo" / "proposed"
    assert json.loads(first.read_text()) == {"site": "demo"}
    assert baseline_file.read_text() == "{}"


def test_profile_keys_strict_and_callback() -> None:
    config = FingerprintConfig.from_mapping(
        {"strict": True, "page_types": {"product": {"callback": "parse_product"}}}
    )
    assert config.strict and config.page_types["product"].callback == "parse_product"
    assert not FingerprintConfig.from_mapping({}).strict
    with pytest.raises(BaselineError, match="strict: expected true or false"):
        FingerprintConfig.from_mapping({"strict": "yes"})
    with pytest.raises(BaselineError, match="callback: expected the name of a spider method"):
        FingerprintConfig.from_mapping({"page_types": {"product": {"callback": "parse product"}}})
    table = FingerprintTable.model_validate(
        {"strict": True, "page_types": {"product": {"callback": "parse_product"}}}
    )
    assert table.strict and table.page_types["product"].callback == "parse_product"
    with pytest.raises(ValueError, match="the name of a spider method"):
        FingerprintTable.model_validate({"page_types": {"product": {"callback": "1st"}}})
    # The shipped profiles name the callbacks their spiders really have.
    for site in ("demo", "trustpilot", "g2"):
        spider = site_spider(site)
        for page_type in FingerprintConfig.for_site(site).page_types.values():
            assert page_type.callback and callable(getattr(spider, page_type.callback))
