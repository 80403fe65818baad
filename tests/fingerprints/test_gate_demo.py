"""The live structure gate against the real demo site, through the real fetch stack.

Every ``verify_site`` call runs the sampler subprocess (``python -m fingerprints.sampling.fetch``:
Scrapy with the project settings and the demo spider's profile), so these tests cover
robots.txt, retries and the block classifier exactly as a scheduled run would.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from fingerprints.baselines.store import SITES_DIR, FingerprintConfig
from fingerprints.gate import GateResult, check_all, check_site, verify_site
from harness.base import free_port
from harness.demo_site import DemoSite
from standins.demo_site.catalog import build_catalog

# In-process, but seconds of CPU (every site's fixtures checked): the integration tier keeps
# `make test-fast` within its budget.
pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
# Block pages and refused connections still go through every retry, without the
# production backoff's seconds of waiting between them.
QUICK_RETRIES = {"RETRY_BACKOFF_BASE": 0.05, "RETRY_BACKOFF_MAX": 0.2}


@pytest.fixture
def site(demo_site: DemoSite) -> DemoSite:
    return demo_site  # the session's demo shop, reset for each test


def tree_digest(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def profile_sample() -> dict[str, tuple[str, ...]]:
    return FingerprintConfig.for_site("demo").sample()


def test_fifty_plus_pages_of_the_same_layout_pass(
    site: DemoSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other products, other categories, other page numbers and last partial pages: no
    false alarm. REDIS_URL points at nothing: the sampler must not need the frontier."""
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    catalog = site.catalog()
    listing = [
        f"/category/{c.slug}" + ("" if page == 1 else f"?page={page}")
        for c in catalog.categories
        for page in (1, 3, 5)  # 5 is the last page: 4 products instead of 24
    ]
    products = [p.url for p in catalog.products[7::61]]
    sample = {"home": ["/"], "listing": listing, "product": products}
    assert sum(len(paths) for paths in sample.values()) >= 50

    result = verify_site("demo", base_url=site.url, sample=sample, timeout=120)

    assert result.passed, result.summary()
    assert result.status == "passed"
    assert set(result.page_types) == {"home", "listing", "product"}
    similarities = [s for r in result.page_types.values() for s in r.similarities]
    assert len(similarities) == sum(len(paths) for paths in sample.values())
    print(
        f"\nv1 vs baseline over {len(similarities)} pages: min {min(similarities):.3f}, "
        f"median {statistics.median(similarities):.3f}"
    )
    for page_type, page_result in result.page_types.items():
        assert page_result.passed, (page_type, page_result.details())
        assert page_result.similarity is not None and page_result.similarity >= 0.95
    # Only robots.txt, the sample and the parts completing its items (each product's
    # reviews API: the items are judged on every run) were fetched: no crawl, no link
    # following.
    assert result.verdict == "passed" and result.extraction is not None
    reviews = {f"/api/products/{p.rsplit('/', 1)[-1]}/reviews" for p in products}
    paths = {entry["path"] for entry in site.access_log()}
    assert paths == {"/robots.txt", *(p for paths in sample.values() for p in paths), *reviews}


def test_layout_v2_fails_naming_page_types_and_features(site: DemoSite) -> None:
    before = tree_digest(SITES_DIR)
    site.control(layout="v2")

    result = verify_site("demo", base_url=site.url, timeout=120)

    assert not result.passed
    assert result.status == "structure_changed", result.summary()
    assert {"listing", "product"} <= set(result.changed_page_types)
    product = result.page_types["product"]
    assert {"skeleton", "schema", "state", "selectors"} <= set(product.changed_features)
    listing = result.page_types["listing"]
    assert {"skeleton", "selectors"} <= set(listing.changed_features)
    summary = result.summary()
    assert "structure_changed" in summary
    assert "product_links ('a.product-link')" in summary
    assert "jsonld:Product" in summary
    assert "state:__STATE__" in summary
    assert "listing (similarity" in result.reason and "product (similarity" in result.reason
    # Judged by the data too: the demo spider gets nothing out of a v2 product page.
    assert result.verdict == "structure_changed"
    assert "extraction failed" in result.reason
    assert result.extraction is not None and not result.extraction["complete"]
    assert {"name", "price", "brand"} <= set(result.extraction["failed_fields"]["product"])
    assert result.proposed_baseline is not None
    # Fail-closed and side-effect free: nothing under fingerprints/ changed, and the
    # site saw only robots.txt and the sample, never the start of a crawl.
    assert tree_digest(SITES_DIR) == before
    sample_paths = {p for paths in profile_sample().values() for p in paths}
    assert {e["path"] for e in site.access_log()} == {"/robots.txt", *sample_paths}
    print(
        "\nv2 similarities:", {k: round(v.similarity or 0, 3) for k, v in result.page_types.items()}
    )


def test_layout_v3_drifts_the_data_still_complete(site: DemoSite) -> None:
    """New class names and wrappers, structured data intact: the run may go on."""
    before = tree_digest(SITES_DIR)
    site.control(layout="v3")

    result = verify_site("demo", base_url=site.url, timeout=120)

    assert (result.verdict, result.passed, result.status) == (
        "drifted",
        True,
        "structure_changed",
    ), result.summary()
    assert {"listing", "product"} <= set(result.changed_page_types)
    assert "DRIFTED" in result.summary() and "extraction complete" in result.reason
    assert result.extraction is not None
    product = result.extraction["page_types"]["product"]
    sample = profile_sample()
    assert product["items"] == len(sample["product"]) and product["invalid_items"] == 0
    assert result.extraction["failed_fields"] == {}
    assert result.extraction["page_types"]["listing"]["requests"] > 0
    # The proposed baseline describes v3: the same sample passes against it.
    assert result.proposed_baseline is not None
    assert set(result.proposed_baseline["page_types"]) == {"home", "listing", "product"}
    # Nothing written; the site saw robots.txt, the sample and the products' reviews API
    # (the part the product callback asks for), never a crawl.
    assert tree_digest(SITES_DIR) == before
    reviews = {f"/api/products/{path.rsplit('/', 1)[1]}/reviews" for path in sample["product"]}
    sample_paths = {p for paths in sample.values() for p in paths}
    assert {e["path"] for e in site.access_log()} == {"/robots.txt", *sample_paths, *reviews}


def test_layout_v3_crawl_yields_every_item(tmp_path: Path) -> None:
    """The drifted layout really scrapes: a crawl of a v3 shop, item by item."""
    catalog = build_catalog(n_products=150)
    out = tmp_path / "items.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    with DemoSite(products=150, layout="v3", run_dir=tmp_path) as shop:
        command = [sys.executable, "-m", "scrapy", "crawl", "demo", "-O", str(out)]
        run = subprocess.run(
            [*command, "-a", f"base_url={shop.url}"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        items = {item["sku"]: item for item in map(json.loads, out.read_text().splitlines())}
        assert set(items) == {p.sku for p in catalog.products}
        wrong = {}
        for product in catalog.products:
            expected = product.to_dict(shop.url)
            got = items[product.sku]
            diff = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
            if diff:
                wrong[product.sku] = diff
        assert wrong == {}, list(wrong.items())[:2]
    assert "layout changed? fell back" in run.stderr  # the spider noticed, and coped


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ({"captcha": {"rate": 1.0, "attempts": None}}, "captcha: datadome captcha"),
        ({"forbidden": {"rate": 1.0, "attempts": None}}, "blocked: access denied"),
        ({"throttle": {"rate": 1.0, "attempts": None, "retry_after": 0}}, "throttled: HTTP 429"),
    ],
)
def test_block_pages_fail_as_blocked(
    site: DemoSite, behaviour: dict[str, dict[str, object]], expected: str
) -> None:
    site.control(**behaviour)  # type: ignore[arg-type]
    result = verify_site("demo", base_url=site.url, timeout=120, settings=QUICK_RETRIES)
    assert not result.passed
    assert result.status == "blocked", result.summary()
    assert expected in result.reason
    assert not result.changed_page_types  # never misreported as a structure change


def test_a_partly_blocked_sample_still_fails_as_blocked(site: DemoSite) -> None:
    site.control(captcha={"rate": 1.0, "attempts": None, "paths": ["/product/"]})
    result = verify_site("demo", base_url=site.url, timeout=120, settings=QUICK_RETRIES)
    assert (result.passed, result.status) == (False, "blocked")
    assert result.page_types["listing"].passed
    assert not result.page_types["product"].passed


def test_unreachable_site_and_missing_pages_fail_as_fetch_failed(site: DemoSite) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    result = verify_site("demo", base_url=dead, timeout=120, settings=QUICK_RETRIES)
    assert (result.passed, result.status) == (False, "fetch_failed")
    assert "ConnectionRefusedError" in result.reason
    sample = {**profile_sample(), "product": ("/product/NOPE-1",)}
    result = verify_site(
        "demo", base_url=site.url, sample=sample, timeout=120, settings=QUICK_RETRIES
    )
    assert (result.passed, result.status) == (False, "fetch_failed")
    assert "HTTP 404" in result.reason


def test_settings_reach_the_samplers_crawl(site: DemoSite) -> None:
    result = verify_site("demo", base_url=site.url, timeout=120, settings={"ROBOTSTXT_OBEY": False})
    assert result.passed, result.summary()
    paths = {entry["path"] for entry in site.access_log()}
    assert "/robots.txt" not in paths and paths  # the sample, without asking robots.txt


def test_missing_baseline_empty_sample_and_crashes_fail_closed(
    site: DemoSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = verify_site("demo", base_url=site.url, sites_dir=tmp_path)
    assert (result.passed, result.status) == (False, "no_baseline")
    assert "python -m fingerprints baseline demo" in result.reason

    result = verify_site("demo", base_url=site.url, sample={"listing": []})
    assert (result.passed, result.status) == (False, "fetch_failed")
    assert "empty sample" in result.reason

    # A sample without one of the baseline's page types leaves that type unchecked.
    result = verify_site("demo", base_url=site.url, sample={"home": ["/"]})
    assert (result.passed, result.status) == (False, "fetch_failed")
    assert "no sample pages for page type(s) listing, product" in result.reason

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("fingerprints.gate.fetch_sample", explode)
    result = verify_site("demo", base_url=site.url)
    assert (result.passed, result.status) == (False, "error")
    assert "RuntimeError: boom" in result.reason


def test_stale_baseline_fails_closed(tmp_path: Path) -> None:
    sites = tmp_path / "sites"
    shutil.copytree(SITES_DIR / "demo", sites / "demo")
    data = json.loads((sites / "demo" / "baseline.json").read_text())
    data["page_types"]["listing"]["selectors"].pop("pagination")
    (sites / "demo" / "baseline.json").write_text(json.dumps(data))
    result = check_site("demo", sites_dir=sites)
    assert (result.passed, result.status) == (False, "no_baseline")
    assert "selectors for 'listing' differ" in result.reason


def test_fixture_check_passes_for_every_site() -> None:
    results = check_all()
    assert [r.site for r in results] == sorted(r.site for r in results)
    assert "demo" in [r.site for r in results]
    for result in results:
        assert isinstance(result, GateResult)
        assert result.passed, result.summary()
        assert result.mode == "fixtures"


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fingerprints", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_baseline_from_url_check_and_verify(site: DemoSite, tmp_path: Path) -> None:
    """Adding a site = adding its directory: a fresh sites dir, no code edits."""
    sites = tmp_path / "sites"
    made = run_cli("--sites-dir", str(sites), "baseline", "demo", "--from-url", site.url)
    assert made.returncode == 0, made.stderr[-2000:]
    fixtures = sorted(p.relative_to(sites).as_posix() for p in sites.rglob("*.html"))
    assert "demo/fixtures/listing/category-garden-page-5.html" in fixtures
    assert len(fixtures) == sum(len(p) for p in profile_sample().values())
    baseline_text = (sites / "demo" / "baseline.json").read_text()
    assert baseline_text == json.dumps(json.loads(baseline_text), indent=2, sort_keys=True) + "\n"

    checked = run_cli("--sites-dir", str(sites), "check", "--json")
    assert checked.returncode == 0, checked.stdout[-2000:]
    assert json.loads(checked.stdout)[0]["status"] == "passed"

    verified = run_cli("--sites-dir", str(sites), "verify", "demo", "--base-url", site.url)
    assert verified.returncode == 0, verified.stdout + verified.stderr[-2000:]
    assert "demo: live structure check passed" in verified.stdout

    site.control(layout="v2")
    failed = run_cli("--sites-dir", str(sites), "verify", "demo", "--base-url", site.url)
    assert failed.returncode == 1
    assert "FAILED (structure_changed)" in failed.stdout

    # Block pages are never stored as fixtures.
    site.control(layout="v1", captcha={"rate": 1.0, "attempts": None})
    quick = [arg for name, value in QUICK_RETRIES.items() for arg in ("-s", f"{name}={value}")]
    refused = run_cli("--sites-dir", str(sites), "baseline", "demo", "--from-url", site.url, *quick)
    assert refused.returncode == 2
    assert "refusing to store these as fixtures" in refused.stderr
    assert "captcha" in refused.stderr
