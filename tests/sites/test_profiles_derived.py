"""Every site profile gets these checks, derived from the profiles (nothing listed by hand):
a new ``crawlers/profiles/<site>.toml`` is tested as soon as it exists.

- the profile loads, its item type is declared, its spider loads (a custom spider or the
  generic one) and every page type of its gate (``[pages]`` or ``[fingerprint]``) has
  sample paths and a callback the spider has;
- its fixtures match its baseline (what ``python -m fingerprints check <site>`` runs);
- its spider's callbacks extract valid items from its detail fixtures (the page types
  whose callback yields items, or asks for the parts that complete them).

A site without fixtures yet fails the last two with one line saying how to make them.
No services: fixtures on disk, callbacks in process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.project import get_project_settings

import crawlers.settings
from core.config import get_settings
from crawlers.items import schema_by_type
from crawlers.profiles import SiteProfile, profile_sites
from fingerprints.baselines.store import FIXTURES_DIR, FingerprintConfig, fixture_pages
from fingerprints.baselines.store import SITES_DIR as DEFAULT_SITES_DIR
from fingerprints.extraction.callbacks import PageOutput, run_callbacks, site_spider
from fingerprints.gate import Page, check_site
from harness.replay_site import MANIFEST, ReplayManifest

# In-process, but seconds of CPU (every site's fixtures against its baseline):
# the integration tier keeps `make test-fast` within its budget.
pytestmark = pytest.mark.integration

PROFILE_SITES = profile_sites()
# A callback's request for a part of its item (a reviews API) cannot be fetched here.
NOT_FETCHED = "follow-up request not fetched"


def sites_dir() -> Path:
    """Where the gate reads fixtures and baselines (``FINGERPRINT_SITES_DIR``, if set)."""
    return get_settings().fingerprint_sites_dir or DEFAULT_SITES_DIR


def site_fixtures(site: str, directory: Path | None = None) -> dict[str, list[Path]]:
    """The site's fixture pages by page type; a site without any fails with one line
    naming the commands that make them (docs/sites.md "Fixtures, replay and tests")."""
    directory = directory or sites_dir()
    pages = fixture_pages(site, directory)
    if not pages:
        pytest.fail(
            f"{site}: no fixture pages under {directory / site / FIXTURES_DIR}/<page_type>/: "
            f"make them with `python -m fingerprints baseline {site} --from-url <base_url>` "
            f"(or onboard the site with `python -m crawlers.scaffold {site} <url>`)",
            pytrace=False,
        )
    return pages


def replay_session(site: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spider that refuses to start without a session (facebook_marketplace) gets the
    replay's test session, from the site's ``replay.json`` ``crawl_settings``."""
    if not (sites_dir() / site / MANIFEST).is_file():
        return
    for name, value in ReplayManifest.load(site, sites_dir()).crawl_settings.items():
        monkeypatch.setattr(crawlers.settings, name, value, raising=False)


@pytest.mark.parametrize("site", PROFILE_SITES)
def test_the_profile_loads_and_its_page_types_have_samples(site: str) -> None:
    profile = SiteProfile.load(site)
    schema_by_type(profile.item_type)  # a declared item type
    try:
        # The project's loader (SPIDER_LOADER_CLASS): profile-only sites get the generic spider.
        spider = get_spider_loader(get_project_settings()).load(site)
    except KeyError:
        pytest.fail(
            f"{site}: no spider: give the profile [pages] (the generic spider) or write "
            f"crawlers/spiders/{site}.py",
            pytrace=False,
        )
    assert spider.name == site
    config = FingerprintConfig.for_site(site)
    assert config.page_types, f"{site}: the profile declares no page types ([pages])"
    for name, page_type in config.page_types.items():
        assert page_type.sample_paths, f"{site}: page type {name!r} has no sample_paths"
        assert page_type.callback, f"{site}: page type {name!r} names no callback"
        assert callable(getattr(spider, page_type.callback, None)), (
            f"{site}: the spider has no callback {page_type.callback!r} for {name!r}"
        )


@pytest.mark.parametrize("site", PROFILE_SITES)
def test_the_fixtures_match_the_baseline(site: str) -> None:
    site_fixtures(site)
    result = check_site(site, sites_dir=sites_dir())
    assert result.passed, result.summary()


def extraction(site: str) -> list[PageOutput]:
    """Every fixture page through its page type's callback (no network)."""
    config = FingerprintConfig.for_site(site)
    root = sites_dir() / site
    pages = [
        Page(path.relative_to(root).as_posix(), page_type, 200, {}, path.read_bytes())
        for page_type, paths in site_fixtures(site).items()
        if page_type in config.page_types
        for path in paths
    ]
    callbacks = {name: page_type.callback for name, page_type in config.page_types.items()}
    return run_callbacks(site_spider(site), pages, callbacks)


@pytest.mark.parametrize("site", PROFILE_SITES)
def test_the_callbacks_extract_valid_items_from_the_detail_fixtures(
    site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay_session(site, monkeypatch)
    outputs = extraction(site)
    raised = [error for output in outputs for error in output.errors if " raised " in error]
    assert raised == [], raised
    waiting = {o.url for o in outputs if any(NOT_FETCHED in error for error in o.unfetched)}
    detail = {o.page_type for o in outputs if o.items or o.url in waiting}
    assert detail, f"{site}: no fixture page of any page type yields an item"
    schema = schema_by_type(SiteProfile.load(site).item_type)
    for page_type in sorted(detail):
        pages = [o for o in outputs if o.page_type == page_type]
        for output in pages:
            # Each detail page gives its item(s), or asks for the parts that complete
            # them (fetched in a crawl, not here).
            assert output.items or output.url in waiting, f"{output.url}: no item"
            for item in output.items:
                assert schema.validate(item).ok, (output.url, schema.validate(item).errors)
        print(
            f"{site}/{page_type}: {sum(len(o.items) for o in pages)} valid item(s) from "
            f"{len(pages)} page(s); {sum(o.url in waiting for o in pages)} waiting for parts"
        )


def test_a_site_without_fixtures_fails_with_one_line_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        site_fixtures("newshop", tmp_path)
    message = str(failed.value)
    assert len(message.splitlines()) == 1
    assert "newshop: no fixture pages under " in message
    assert "`python -m fingerprints baseline newshop --from-url <base_url>`" in message
    assert "`python -m crawlers.scaffold newshop <url>`" in message
