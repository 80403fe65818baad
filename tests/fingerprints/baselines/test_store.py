"""Baseline files, profile configuration and the fixture check (no services)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fingerprints.baselines.fixtures import fixture_name, score_fixtures
from fingerprints.baselines.store import (
    SITES_DIR,
    BaselineError,
    FingerprintConfig,
    PageTypeConfig,
    SiteBaseline,
    compute_baseline,
    list_sites,
    load_baseline,
    restrict,
    save_baseline,
)
from fingerprints.gate import check_all, check_site
from fingerprints.structure.fingerprint import FINGERPRINT_VERSION
from standins.demo_site import pages
from standins.demo_site.catalog import build_catalog

BASE = "http://127.0.0.1:8000"


def make_site(sites: Path, name: str = "shop", layout: str = "v1") -> Path:
    """A new site is a directory of fixture pages: no code, no profile needed."""
    catalog = build_catalog(n_products=200)
    root = sites / name / "fixtures"
    (root / "listing").mkdir(parents=True)
    (root / "product").mkdir(parents=True)
    for slug in ("kitchen", "audio"):
        html = pages.listing(catalog, slug, 1, layout, BASE) or ""
        (root / "listing" / f"{slug}.html").write_text(html)
    for product in catalog.products[:3]:
        html = pages.product_page(catalog, product.sku, layout, BASE) or ""
        (root / "product" / f"{product.sku}.html").write_text(html)
    return sites / name


def test_new_site_directory_is_checked_without_code_changes(tmp_path: Path) -> None:
    make_site(tmp_path)
    assert list_sites(tmp_path) == ["shop"]
    result = check_site("shop", sites_dir=tmp_path)
    assert (result.passed, result.status) == (False, "no_baseline")

    path = save_baseline(compute_baseline("shop", sites_dir=tmp_path), tmp_path)
    assert path == tmp_path / "shop" / "baseline.json"
    results = check_all(sites_dir=tmp_path)
    assert [(r.site, r.passed) for r in results] == [("shop", True)]


def test_baseline_file_is_reviewable_and_round_trips(tmp_path: Path) -> None:
    make_site(tmp_path)
    baseline = compute_baseline("shop", sites_dir=tmp_path, threshold=0.9)
    save_baseline(baseline, tmp_path)
    text = (tmp_path / "shop" / "baseline.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["fingerprint_version"] == FINGERPRINT_VERSION
    assert data["threshold"] == 0.9
    assert sorted(data["page_types"]["product"]["fixtures"]) == [
        "fixtures/product/DM-00001.html",
        "fixtures/product/DM-00002.html",
        "fixtures/product/DM-00003.html",
    ]
    assert data["page_types"]["product"]["schema"]["jsonld:Product"] == 1.0
    assert load_baseline("shop", tmp_path) == baseline
    # One token per line: a review diff shows exactly which path or type changed.
    assert '\n        "jsonld:Product": 1.0,\n' in text


def test_fixture_check_catches_a_changed_fixture_and_notes_edits(tmp_path: Path) -> None:
    make_site(tmp_path)
    save_baseline(compute_baseline("shop", sites_dir=tmp_path), tmp_path)
    catalog = build_catalog(n_products=200)
    fixture = tmp_path / "shop" / "fixtures" / "product" / "DM-00001.html"

    # A new fixture saved from the live site (content only changed): still passes, noted.
    other = catalog.products[50]
    new = fixture.with_name("DM-00051.html")
    new.write_text(pages.product_page(catalog, other.sku, "v1", BASE) or "")
    result = check_site("shop", sites_dir=tmp_path)
    assert result.passed, result.summary()
    assert "new fixtures/product/DM-00051.html" in result.reason

    # A fixture in the new layout fails the check and names its page type.
    fixture.write_text(pages.product_page(catalog, "DM-00001", "v2", BASE) or "")
    result = check_site("shop", sites_dir=tmp_path)
    assert (result.passed, result.status) == (False, "structure_changed")
    assert result.changed_page_types == ["product"]


def without_optional_blocks(html: str) -> str:
    """A product page with no rating and no reviews section (both optional on real sites)."""
    html = re.sub(r'<div class="product-rating".*?</div>', "", html, flags=re.S)
    return re.sub(r'<section class="reviews-section">.*?</section>', "", html, flags=re.S)


def make_site_with_outlier(sites: Path, name: str = "shop", products: int = 4) -> Path:
    site = make_site(sites, name)
    catalog = build_catalog(n_products=200)
    directory = site / "fixtures" / "product"
    for product in catalog.products[3:products]:
        html = pages.product_page(catalog, product.sku, "v1", BASE) or ""
        (directory / f"{product.sku}.html").write_text(html)
    first = directory / "DM-00001.html"
    first.write_text(without_optional_blocks(first.read_text()))
    return site


def test_fixture_scores_agree_with_the_fixture_check(tmp_path: Path) -> None:
    """One fixture lacking an optional block: its score against the baseline computed from
    it is the one the fixture check finds, on both sides of the threshold."""
    make_site_with_outlier(tmp_path)
    for threshold, outliers in ((0.85, []), (0.9, ["fixtures/product/DM-00001.html"])):
        baseline = compute_baseline("shop", sites_dir=tmp_path, threshold=threshold)
        scores = score_fixtures(baseline, sites_dir=tmp_path)
        assert [s.path for s in scores if not s.passed] == outliers
        worst = scores[0]
        assert worst.path == "fixtures/product/DM-00001.html"
        assert "microdata:AggregateRating" in worst.lacks["schema"]
        assert any("product-rating" in token for token in worst.lacks["skeleton"])
        assert worst.to_dict()["lacks"]["schema"] == list(worst.lacks["schema"])

        save_baseline(baseline, tmp_path)
        result = check_site("shop", sites_dir=tmp_path)
        assert result.passed == (not outliers), result.summary()
        product = result.page_types["product"]
        assert product.similarity == pytest.approx(worst.similarity)
        failing = [p.url for r in result.page_types.values() for p in r.pages if p.outcome != "ok"]
        assert failing == outliers


def test_a_subset_is_judged_alone(tmp_path: Path) -> None:
    make_site(tmp_path)
    save_baseline(compute_baseline("shop", sites_dir=tmp_path), tmp_path)
    baseline = load_baseline("shop", tmp_path)
    config = FingerprintConfig.from_mapping(
        {"page_types": {"listing": {"sample_paths": ["/l"]}, "product": {"sample_paths": ["/p"]}}}
    )
    part, part_config = restrict(baseline, config, ["product"])
    assert set(part.page_types) == set(part.fixtures) == {"product"}
    assert part_config.sample() == {"product": ("/p",)}
    assert part.stale_reasons(part_config) == []
    assert restrict(baseline, config, None) == (baseline, config)
    with pytest.raises(
        BaselineError, match=r"no page type\(s\) prodcut \(it has listing, product\)"
    ):
        restrict(baseline, config, ["prodcut"])

    # The fixture check of one page type: only its pages, no word about the others.
    catalog = build_catalog(n_products=200)
    listing = tmp_path / "shop" / "fixtures" / "listing" / "kitchen.html"
    listing.write_text(pages.listing(catalog, "kitchen", 1, "v2", BASE) or "")
    assert check_site("shop", sites_dir=tmp_path).status == "structure_changed"
    result = check_site("shop", sites_dir=tmp_path, page_types=["product"])
    assert (result.passed, result.status) == (True, "passed"), result.summary()
    assert list(result.page_types) == ["product"]
    assert "edited" not in result.reason  # the edited listing fixture is not this check's
    result = check_all(sites_dir=tmp_path, page_types=["listing"])[0]
    assert (result.passed, result.status) == (False, "structure_changed")
    result = check_site("shop", sites_dir=tmp_path, page_types=["reviews"])
    assert (result.passed, result.status) == (False, "no_baseline")
    assert "no page type(s) reviews" in result.reason


def test_block_pages_are_refused_as_fixtures(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    (site / "fixtures" / "product" / "blocked.html").write_text(
        "<html><head><title>Access Denied</title></head><body>Reference #18</body></html>"
        + " " * 300
    )
    with pytest.raises(BaselineError, match=r"not a real page .*blocked"):
        compute_baseline("shop", sites_dir=tmp_path)


def test_stale_and_malformed_baselines(tmp_path: Path) -> None:
    make_site(tmp_path)
    baseline = compute_baseline("shop", sites_dir=tmp_path)
    data = baseline.to_dict()
    data["fingerprint_version"] = FINGERPRINT_VERSION - 1
    (tmp_path / "shop" / "baseline.json").write_text(json.dumps(data))
    result = check_site("shop", sites_dir=tmp_path)
    assert (result.passed, result.status) == (False, "no_baseline")
    assert "fingerprint version" in result.reason

    (tmp_path / "shop" / "baseline.json").write_text('{"site": "shop"}')
    result = check_site("shop", sites_dir=tmp_path)
    assert (result.passed, result.status) == (False, "no_baseline")
    assert "malformed" in result.reason


def test_profile_section_validation() -> None:
    config = FingerprintConfig.from_mapping(
        {
            "threshold": 0.8,
            "page_types": {
                "listing": {"sample_paths": ["/a", "/b"], "selectors": {"x": "a.x"}},
                "detail": {"sample_paths": ["/d"], "threshold": 0.7},
            },
        }
    )
    assert config.sample() == {"listing": ("/a", "/b"), "detail": ("/d",)}
    assert config.page_types["listing"] == PageTypeConfig(("/a", "/b"), {"x": "a.x"}, None)
    for bad, message in [
        ({"threshold": 1.5}, "threshold"),
        ({"page_types": {"Bad Name": {}}}, "page type name"),
        ({"page_types": {"x": {"sample_paths": ["no-slash"]}}}, "sample_paths"),
        ({"page_types": {"x": {"selectors": {"a": ""}}}}, "selectors"),
        ({"page_types": {"x": {"sampel_paths": []}}}, "unknown key"),
        ({"treshold": 0.9}, "unknown key"),
    ]:
        with pytest.raises(BaselineError, match=message):
            FingerprintConfig.from_mapping(bad)


def test_a_bad_table_is_the_profile_s_one_line() -> None:
    """A mapping handed to the gate is validated by the profile's own schema, once."""
    with pytest.raises(BaselineError) as bad:
        FingerprintConfig.from_mapping(
            {"page_types": {"x": {"sample_paths": ["no-slash"]}}}, source="shop [fingerprint]"
        )
    assert str(bad.value) == (
        "shop [fingerprint]: page_types.x.sample_paths[0]: expected a path starting with /,"
        ' got "no-slash"'
    )


def test_thresholds_profile_first_then_baseline() -> None:
    baseline = SiteBaseline("s", 0.85, {}, {})
    assert baseline.threshold_for("listing") == 0.85
    profile = FingerprintConfig.from_mapping(
        {"threshold": 0.8, "page_types": {"detail": {"threshold": 0.7}}}
    )
    assert baseline.threshold_for("listing", profile) == 0.8
    assert baseline.threshold_for("detail", profile) == 0.7


def test_demo_profile_and_committed_baseline_agree() -> None:
    config = FingerprintConfig.for_site("demo")
    baseline = load_baseline("demo")
    assert baseline.stale_reasons(config) == []
    assert set(config.page_types) == set(baseline.page_types) == {"home", "listing", "product"}
    listing = baseline.page_types["listing"]
    assert listing.selectors["product_links"].required
    assert not listing.selectors["next_page"].required  # absent on the last page fixture
    assert (SITES_DIR / "demo" / "fixtures" / "listing" / "category-garden-page-5.html").exists()


@pytest.mark.parametrize(
    ("path", "name"),
    [("/", "index.html"), ("/category/x?page=2", "category-x-page-2.html")],
)
def test_fixture_names(path: str, name: str) -> None:
    assert fixture_name(path) == name
