"""Site profiles: parsed from TOML, validated, applied to Scrapy settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from crawlers.profiles import (
    PROFILES_DIR,
    ProfileError,
    SiteProfile,
    generic_callback,
    load_profiles,
    profile_sites,
)
from crawlers.spiders.demo import DemoSpider
from tests.crawlers.support import REPO_ROOT, crawl_env

# The two keys a profile must have; the tests add what they are about.
SHOP = 'item_type = "p"\nbase_url = "https://shop.example"\n'


def test_every_profile_file_loads() -> None:
    sites = sorted(path.stem for path in PROFILES_DIR.glob("*.toml"))
    assert "demo" in sites
    for site in sites:
        assert SiteProfile.load(site).site == site


def test_profile_politeness_becomes_scrapy_settings(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(
        'item_type = "product"\nbase_url = "https://shop.example"\n'
        "[politeness]\nobey_robots = false\ndownload_delay = 1.5\n"
        "concurrency_per_domain = 2\n[timeouts]\nproducer = 7200\n"
    )
    profile = SiteProfile.load("shop", tmp_path)
    settings = profile.scrapy_settings()
    assert settings["ROBOTSTXT_OBEY"] is False
    assert settings["DOWNLOAD_DELAY"] == 1.5
    assert settings["CONCURRENT_REQUESTS_PER_DOMAIN"] == 2
    assert profile.timeouts.producer == 7200


def test_profile_fetch_table_becomes_the_identity_and_session_settings(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(
        SHOP + '[fetch]\nidentity = "browser"\naccept_language = "es-ES,es;q=0.9"\n'
        "sessions = true\nsession_pool = 3\nsession_rate = 0.5\nchallenges = false\n"
    )
    settings = SiteProfile.load("shop", tmp_path).scrapy_settings()
    assert {k: settings[k] for k in settings if k.startswith(("SESSION", "FETCH", "BROWSER"))} == {
        "FETCH_IDENTITY": "browser",
        "BROWSER_ACCEPT_LANGUAGE": "es-ES,es;q=0.9",
        "SESSIONS_ENABLED": True,
        "SESSION_POOL_SIZE": 3,
        "SESSION_MAX_RATE": 0.5,
        "SESSION_PASS_CHALLENGES": False,
    }
    # Unset keys leave the platform's defaults alone.
    (tmp_path / "plain.toml").write_text(SHOP)
    assert not any(
        k.startswith("SESSION") for k in SiteProfile.load("plain", tmp_path).scrapy_settings()
    )
    # Defended production sites go out as sessions; facebook's login is the account's.
    assert SiteProfile.load("idealista").scrapy_settings()["SESSIONS_ENABLED"] is True
    assert SiteProfile.load("facebook_marketplace").scrapy_settings()["SESSIONS_ENABLED"] is False


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("[timeouts]\nproducer = 9000\n", "timeouts.producer: expected a value <= 7200, got 9000"),
        (
            'render = "sometimes"\n',
            'render: expected one of "never", "always", "per_request" or "auto", got "sometimes"',
        ),
        (
            "unknown_key = 1\n",
            "unknown_key: unknown key (known keys: site, item_type, base_url, start_paths,"
            " sitemaps, render, needs_proxies, needs_session, secrets, schedule, description,"
            " politeness, fetch, timeouts, budget, recrawl, settings, fingerprint, pages,"
            " start_page, market, item_fields)",
        ),
        ('site = "other"\n', 'site: expected "shop" (the file\'s name), got "other"'),
        (
            'schedule = "61 3 * * *"\n',
            "schedule: expected a 5-field cron (minute hour day month weekday),"
            ' got "61 3 * * *" (bad minute)',
        ),
        (
            'schedule = "0 3 * *"\n',
            "schedule: expected a 5-field cron (minute hour day month weekday),"
            ' got "0 3 * *" (needs 5 fields)',
        ),
        (
            'schedule = "@daily"\n',
            "schedule: expected a 5-field cron (minute hour day month weekday),"
            ' got "@daily" (needs 5 fields)',
        ),
        (
            "needs_session = true\n",
            "secrets: expected the variable holding the session (needs_session = true), got []",
        ),
        (
            'secrets = ["acme-cookies"]\n',
            "secrets[0]: expected an environment variable name of A-Z, 0-9 and _"
            ' (e.g. ACME_SESSION_COOKIES), got "acme-cookies"',
        ),
        ("schedule = 3\n", "schedule: expected a string, got 3"),
        ("description = 3\n", "description: expected a string, got 3"),
    ],
)
def test_invalid_profiles_fail_clearly(tmp_path: Path, body: str, problem: str) -> None:
    (tmp_path / "shop.toml").write_text(SHOP + body)
    with pytest.raises(ProfileError) as info:
        SiteProfile.load("shop", tmp_path)
    assert str(info.value) == f"{tmp_path / 'shop.toml'}: {problem}"


def test_schedule_and_description_are_the_deployment_facts(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(SHOP + 'schedule = "0 4 * * 1"\ndescription = "Shop"\n')
    (tmp_path / "manual.toml").write_text(SHOP)
    assert profile_sites(tmp_path) == ["manual", "shop"]
    manual, shop = load_profiles(tmp_path)
    assert (shop.schedule, shop.deployment_description) == ("0 4 * * 1", "Shop")
    assert (manual.schedule, manual.deployment_description) == (None, "Scrape manual")


def test_missing_profile_names_the_expected_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        SiteProfile.load("nowhere", tmp_path)
    assert str(info.value) == f"no profile for site 'nowhere': expected {tmp_path / 'nowhere.toml'}"


def test_spider_settings_come_from_its_profile() -> None:
    crawler = get_crawler(DemoSpider)
    profile = SiteProfile.load("demo")
    assert crawler.settings.getbool("ROBOTSTXT_OBEY") is profile.politeness.obey_robots
    assert (
        crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        == profile.politeness.concurrency_per_domain
    )
    assert crawler.settings.getbool("AUTOTHROTTLE_ENABLED") is profile.politeness.autothrottle


def test_generic_callbacks_are_spider_method_names() -> None:
    assert generic_callback("listing") == "parse_listing"
    assert generic_callback("product-page") == "parse_product_page"


def test_site_profiles_dir_moves_every_profile(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(SHOP)
    code = "from crawlers.profiles import *; print(PROFILES_DIR, profile_sites())"
    env = {**crawl_env(), "SITE_PROFILES_DIR": f" {tmp_path} "}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"{tmp_path.resolve()} ['shop']"


@pytest.mark.parametrize("site", ["Acme-Shop", "_shop", "shop.de"])
def test_a_site_name_that_cannot_name_its_services_is_refused(tmp_path: Path, site: str) -> None:
    """The file name is the site's name, which also names its worker service, Redis keys
    and indices: one rule for it (crawlers.profile_schema.SITE_NAME), here, in the
    scaffold and in orchestration.wiring."""
    (tmp_path / f"{site}.toml").write_text(SHOP)
    with pytest.raises(ProfileError) as info:
        SiteProfile.load(site, tmp_path)
    assert str(info.value) == (
        f"{tmp_path / (site + '.toml')}: site: expected a site name of a-z, 0-9 and _ "
        f'(e.g. acme_shop), got "{site}"'
    )
