"""``python -m fingerprints``: what an operator onboarding a site runs (no services).

The commands run in-process through ``main(argv)``, as ``python -m fingerprints`` would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fingerprints.baselines.store import load_baseline
from fingerprints.cli import main
from standins.demo_site import pages
from standins.demo_site.catalog import build_catalog
from tests.fingerprints.baselines.test_store import BASE, make_site, make_site_with_outlier

OUTLIER = "fixtures/product/DM-00001.html"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_profile(directory: Path, site: str, fingerprint: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{site}.toml"
    path.write_text(
        f'site = "{site}"\nitem_type = "demo_product"\nbase_url = "http://127.0.0.1:9"\n'
        + fingerprint
    )
    return path


def test_baseline_shows_outliers_and_refuses_what_check_would_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reproduces the onboarding report: one fixture without the optional rating and
    reviews blocks, a baseline computed at 0.9, then `check` failing on that fixture."""
    sites = str(tmp_path)
    make_site_with_outlier(tmp_path)

    code, out, err = run(capsys, "baseline", "shop", "--sites-dir", sites, "--threshold", "0.9")
    assert code == 1
    assert not (tmp_path / "shop" / "baseline.json").exists()
    # Every fixture with its similarity, worst first; the outlier flagged with what it lacks.
    lines = out.splitlines()
    assert lines[1].split()[1:3] == [OUTLIER, "(BELOW"]
    assert "lacks schema: microdata:AggregateRating" in out
    assert "lacks skeleton:" in out and "div.product-rating" in out
    assert sum("(ok, threshold 0.90)" in line for line in lines) == 5
    # One line on stderr: the problem, what was not done, the fixes.
    assert len(err.strip().splitlines()) == 1
    assert "1 fixture(s) fall below the threshold" in err and OUTLIER in err
    assert "--threshold to 0.86 or less" in err and "--accept-outliers" in err

    # Accepted explicitly: written, exit 0, and `check` agrees it fails on that fixture.
    argv = ("baseline", "shop", "--sites-dir", sites, "--threshold", "0.9", "--accept-outliers")
    code, out, err = run(capsys, *argv)
    assert code == 0 and "wrote" in out and "accepted 1 outlier(s)" in err
    code, out, _ = run(capsys, "check", "shop", "--sites-dir", sites, "--json")
    assert code == 1
    (result,) = json.loads(out)
    assert result["status"] == "structure_changed"
    failing = [p["url"] for p in result["page_types"]["product"]["pages"] if p["outcome"] != "ok"]
    assert failing == [OUTLIER]

    # At a threshold its fixtures pass, both commands pass.
    code, out, err = run(capsys, "--sites-dir", sites, "baseline", "shop", "--threshold", "0.85")
    assert (code, err) == (0, "")
    assert "BELOW" not in out
    assert run(capsys, "check", "shop", "--sites-dir", sites)[0] == 0


def test_check_judges_only_the_page_types_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sites = str(tmp_path)
    make_site(tmp_path)
    assert run(capsys, "baseline", "shop", "--sites-dir", sites)[0] == 0
    catalog = build_catalog(n_products=200)
    (tmp_path / "shop" / "fixtures" / "listing" / "kitchen.html").write_text(
        pages.listing(catalog, "kitchen", 1, "v2", BASE) or ""
    )
    assert run(capsys, "check", "shop", "--sites-dir", sites)[0] == 1

    code, out, _ = run(
        capsys, "check", "shop", "--sites-dir", sites, "--page-type", "product", "--json"
    )
    assert code == 0, out
    (result,) = json.loads(out)
    assert (result["status"], list(result["page_types"])) == ("passed", ["product"])

    code, out, _ = run(capsys, "check", "--sites-dir", sites, "--page-type", "listing", "--json")
    assert code == 1
    (result,) = json.loads(out)
    assert (result["status"], list(result["page_types"])) == ("structure_changed", ["listing"])


def test_outside_profiles_and_sites_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A site kept outside the repository: its profile and its fixtures elsewhere, given
    before or after the command name."""
    sites, profiles = tmp_path / "sites", tmp_path / "profiles"
    make_site(sites, "outside_shop")
    write_profile(
        profiles,
        "outside_shop",
        "[fingerprint]\nthreshold = 0.9\n"
        '[fingerprint.page_types.listing]\nsample_paths = ["/category/kitchen"]\n'
        '[fingerprint.page_types.listing.selectors]\nproduct_links = "a.product-link"\n'
        '[fingerprint.page_types.product]\nsample_paths = ["/product/DM-00001"]\n',
    )
    dirs = ("--sites-dir", str(sites), "--profiles-dir", str(profiles))
    code, out, err = run(capsys, "baseline", "outside_shop", *dirs)
    assert (code, err) == (0, ""), out
    baseline = load_baseline("outside_shop", sites)
    # The outside profile's selectors are in the baseline: it was read, not the repo's.
    assert baseline.page_types["listing"].selector_queries == {"product_links": "a.product-link"}

    code, out, _ = run(capsys, *dirs, "check", "outside_shop")
    assert code == 0, out
    # Without the profile, the check reads none and its selectors are not checked; with
    # a profile in another directory that declares other selectors, the baseline is stale.
    other = tmp_path / "other-profiles"
    write_profile(
        other,
        "outside_shop",
        '[fingerprint.page_types.listing.selectors]\nproduct_links = "a.card"\n'
        "[fingerprint.page_types.product]\n",
    )
    code, out, _ = run(
        capsys, "check", "outside_shop", "--sites-dir", str(sites), "--profiles-dir", str(other)
    )
    assert code == 1 and "stale" in out and "selectors for 'listing' differ" in out


def test_operator_mistakes_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sites = str(tmp_path)
    make_site(tmp_path)
    assert run(capsys, "baseline", "shop", "--sites-dir", sites)[0] == 0
    for argv, message in [
        (("verify", "shop", "--path", "/product/X"), "--path needs exactly one --page-type"),
        (
            ("verify", "shop", "--page-type", "product", "--page-type", "listing", "--path", "/p"),
            "--path needs exactly one --page-type",
        ),
        (("verify", "shop", "--page-type", "prodcut"), "no page type(s) prodcut"),
        (("baseline", "nosuchsite"), "no fixture pages"),
        (("baseline", "nosuchsite"), "baseline nosuchsite --from-url <base_url>"),
        (("baseline", "nosuchsite"), "python -m crawlers.scaffold nosuchsite <url>"),
    ]:
        code, out, err = run(capsys, *argv, "--sites-dir", sites)
        assert (code, out) == (2, ""), argv
        assert len(err.strip().splitlines()) == 1 and message in err, err


def test_the_module_runs_as_documented(tmp_path: Path) -> None:
    make_site(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "fingerprints", "baseline", "shop", "--sites-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "fixtures against the new baseline" in done.stdout


def test_the_directories_default_to_the_environment_the_flow_reads(tmp_path: Path) -> None:
    """FINGERPRINT_SITES_DIR / SITE_PROFILES_DIR are the commands' defaults, as for the
    scrape flow's gate; an empty sites directory is one line naming how to make a site."""
    sites, profiles = tmp_path / "sites", tmp_path / "profiles"
    sites.mkdir()
    profiles.mkdir()
    env = {**os.environ, "FINGERPRINT_SITES_DIR": str(sites), "SITE_PROFILES_DIR": str(profiles)}

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fingerprints", "check"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )

    empty = check()
    assert empty.returncode == 2 and empty.stdout == ""
    assert len(empty.stderr.strip().splitlines()) == 1
    assert f"no site directories under {sites}" in empty.stderr
    assert "python -m crawlers.scaffold <site> <url>" in empty.stderr
    make_site(sites)
    (profiles / "shop.toml").write_text('item_type = "product"\nbase_url = "http://shop.test"\n')
    done = subprocess.run(
        [sys.executable, "-m", "fingerprints", "baseline", "shop"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert (sites / "shop" / "baseline.json").is_file()
    passed = check()
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("shop: fixture check passed")


def test_a_profile_only_sites_outlier_hint_names_the_pages_threshold_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``[pages]`` profile refuses ``[fingerprint.page_types]``: the hint names the key
    that works, ``[pages.<type>] threshold``, and setting it there is accepted."""
    sites, profiles = tmp_path / "sites", tmp_path / "profiles"
    make_site_with_outlier(sites)
    pages = (
        'start_page = "product"\n[fingerprint]\nthreshold = 0.95\n'
        "[pages.product]\nurl_patterns = ['^/product/']\n"
        'sample_paths = ["/product/DM-00001"]\n'
        '[pages.product.fields]\nname = {css = "h1"}\n'
    )
    write_profile(profiles, "shop", pages)
    dirs = ("--sites-dir", str(sites), "--profiles-dir", str(profiles))
    code, _, err = run(capsys, "baseline", "shop", *dirs)
    assert code == 1
    assert "[pages.<type>] threshold" in err and "fingerprint.page_types" not in err
    lowest = re.search(r"to (\d\.\d+) or less", err)[1]  # type: ignore[index]
    write_profile(
        profiles,
        "shop",
        pages.replace("[pages.product.fields]", f"threshold = {lowest}\n[pages.product.fields]"),
    )
    code, _, err = run(capsys, "baseline", "shop", *dirs)
    assert code == 0, err
    assert load_baseline("shop", sites).page_types["product"].threshold == float(lowest)


def test_a_page_type_without_fixtures_names_the_recipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page type added to the profile has no fixtures yet: the one line says that its
    sample_paths are fetched with --from-url."""
    make_site(tmp_path / "sites")
    profiles = tmp_path / "profiles"
    write_profile(
        profiles,
        "shop",
        "[fingerprint.page_types.listing]\n[fingerprint.page_types.product]\n"
        '[fingerprint.page_types.brand]\nsample_paths = ["/brand/acme"]\n',
    )
    code, out, err = run(
        capsys, "baseline", "shop", "--sites-dir", str(tmp_path / "sites"),
        "--profiles-dir", str(profiles),
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert "no fixtures for page types ['brand']: give each its sample_paths" in err
    assert "`python -m fingerprints baseline shop --from-url <base_url>`" in err
    assert len(err.strip().splitlines()) == 1
