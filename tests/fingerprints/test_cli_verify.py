"""``python -m fingerprints verify`` against the live demo shop: subsets and sites kept
outside this repository (their profile and fixtures in other directories).

Each verify runs the sampler subprocess through the real fetch stack, as in
test_gate_demo.py; these tests only add what the CLI options change.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from crawlers.profiles import PROFILES_DIR
from fingerprints.baselines.store import SITES_DIR
from fingerprints.cli import main
from harness.demo_site import DemoSite


@pytest.fixture
def site(demo_site: DemoSite) -> DemoSite:
    return demo_site  # the session's demo shop, reset for each test


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    (result,) = json.loads(capsys.readouterr().out)
    return code, result


def requested(site: DemoSite) -> set[str]:
    return {entry["path"] for entry in site.access_log()}


def outside_site(tmp_path: Path, name: str, profile_edit: dict[str, str]) -> tuple[Path, Path]:
    """The demo site's profile and fixtures copied under ``name`` into two directories."""
    profiles, sites = tmp_path / "profiles", tmp_path / "sites"
    profiles.mkdir()
    text = (PROFILES_DIR / "demo.toml").read_text()
    for old, new in {'site = "demo"': f'site = "{name}"', **profile_edit}.items():
        assert old in text, old
        text = text.replace(old, new)
    (profiles / f"{name}.toml").write_text(text)
    shutil.copytree(SITES_DIR / "demo" / "fixtures", sites / name / "fixtures")
    return profiles, sites


def test_one_page_of_one_page_type_is_judged_alone(
    site: DemoSite, capsys: pytest.CaptureFixture[str]
) -> None:
    """The onboarding report: one product page checked, fetch_failed for home and listing."""
    argv = ("verify", "demo", "--base-url", site.url, "--page-type", "product")
    code, result = run(capsys, *argv, "--path", "/product/DM-00420")
    assert code == 0, result["reason"]
    assert (result["status"], list(result["page_types"])) == ("passed", ["product"])
    assert [p["url"] for p in result["page_types"]["product"]["pages"]] == [
        f"{site.url}/product/DM-00420"
    ]
    # The page's item is judged on every run: its reviews API, the part that completes
    # it, is fetched through the same stack; nothing else.
    assert result["verdict"] == "passed" and result["extraction"]["complete"]
    assert requested(site) == {
        "/robots.txt",
        "/product/DM-00420",
        "/api/products/DM-00420/reviews",
    }

    # Without --path: the profile's sample paths of the types given, and only those.
    site.reset()
    code, result = run(capsys, "verify", "demo", "--base-url", site.url, "--page-type", "home")
    assert code == 0, result["reason"]
    assert list(result["page_types"]) == ["home"]
    assert requested(site) == {"/robots.txt", "/"}

    # A subset still fails closed on what it judges.
    site.reset()
    site.control(layout="v2")
    code, result = run(capsys, *argv, "--path", "/product/DM-00420")
    assert (code, result["status"]) == (1, "structure_changed")
    assert list(result["page_types"]) == ["product"]


def test_a_site_outside_the_repository_with_a_profile_spider(
    site: DemoSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No spider of that name: the sampler's plain spider reads the outside profile (its
    base URL: no --base-url given), the baseline and fixtures come from the outside sites
    directory."""
    profiles, sites = outside_site(
        tmp_path, "outside_shop", {'base_url = "http://127.0.0.1:8000"': f'base_url = "{site.url}"'}
    )
    dirs = ("--profiles-dir", str(profiles), "--sites-dir", str(sites))
    assert main(["baseline", "outside_shop", *dirs]) == 0
    capsys.readouterr()
    assert (sites / "outside_shop" / "baseline.json").exists()

    code, result = run(capsys, "verify", "outside_shop", *dirs, "--page-type", "listing")
    assert code == 0, result["reason"]
    assert (result["site"], list(result["page_types"])) == ("outside_shop", ["listing"])
    listing = {p["url"] for p in result["page_types"]["listing"]["pages"]}
    assert f"{site.url}/category/kitchen" in listing
    assert "/category/kitchen" in requested(site)


def test_the_project_spider_reads_an_outside_profile(
    site: DemoSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spider of that name exists (demo): the sampler runs it with the outside profile's
    settings; that profile does not obey robots.txt, the repository's does."""
    profiles, sites = outside_site(tmp_path, "demo", {"obey_robots = true": "obey_robots = false"})
    shutil.copy(SITES_DIR / "demo" / "baseline.json", sites / "demo" / "baseline.json")
    dirs = ("--profiles-dir", str(profiles), "--sites-dir", str(sites))
    argv = ("verify", "demo", "--base-url", site.url, "--page-type", "home", *dirs)
    code, result = run(capsys, *argv)
    assert code == 0, result["reason"]
    assert requested(site) == {"/"}

    site.reset()
    code, result = run(capsys, "verify", "demo", "--base-url", site.url, "--page-type", "home")
    assert code == 0, result["reason"]
    assert requested(site) == {"/robots.txt", "/"}
