"""coverage.json derived from the fixtures: committed files match, a lost field is refused."""

from __future__ import annotations

import pytest

import crawlers.settings
from crawlers.items import schema_by_type
from crawlers.profiles import SiteProfile
from fingerprints.baselines.coverage import load_coverage_baseline
from fingerprints.baselines.store import BaselineError, FingerprintConfig
from fingerprints.evaluation.fixture_coverage import coverage_from_fixtures, derive_coverage
from fingerprints.extraction.callbacks import PageOutput

# In-process, but seconds of CPU (every site's fixtures extracted): the integration tier keeps
# `make test-fast` within its budget.
pytestmark = pytest.mark.integration

SITES = ("booking_com", "trustpilot", "g2", "hermes", "idealista", "facebook_marketplace")
HARNESS = {"job_id", "incomplete"}  # set by middlewares and failed parts, not extraction


@pytest.fixture(autouse=True)
def facebook_session(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Facebook spider refuses to start without a session (a made-up one: no fetch).
    monkeypatch.setattr(
        crawlers.settings, "FACEBOOK_SESSION_COOKIES", "c_user=1; xs=test", raising=False
    )


@pytest.mark.parametrize("site", SITES)
def test_committed_coverage_is_what_the_builder_derives(site: str) -> None:
    assert coverage_from_fixtures(site).to_dict() == load_coverage_baseline(site).to_dict()


def test_booking_page_fields_are_carried_into_the_baseline() -> None:
    rates = {n: e.rate for n, e in load_coverage_baseline("booking_com").fields.items()}
    assert rates["amenities"] > 0 and rates["description"] > 0 and rates["currency"] > 0


def test_a_zero_rate_for_a_carried_field_is_refused() -> None:
    url = "https://x.invalid/p"
    # The page alone fills "description"; the crawl's item lost it: the builder's error.
    alone = [PageOutput(url, "detail", "parse", ({"name": "A", "description": "D"},))]
    crawl = [PageOutput(url, "detail", "parse", ({"name": "A", "description": None},))]
    with pytest.raises(BaselineError, match="carry description"):
        derive_coverage("x", alone, crawl)
    # A card's field counts as carried too.
    carded = [PageOutput(url, "search", "parse", (), cards=({"price": 3},))]
    with pytest.raises(BaselineError, match="carry price"):
        derive_coverage("x", carded, [PageOutput(url, "d", "p", ({"price": None},))])
    # A field no fixture fills may stay at 0.0.
    ok = derive_coverage("x", crawl, crawl)
    assert ok.fields["description"].rate == 0.0


@pytest.mark.parametrize("site", SITES)
def test_every_field_the_spider_fills_has_a_rate_from_a_fixture_showing_it(site: str) -> None:
    """No holes: each field of the site's item type has a rate > 0 in coverage.json, unless
    the profile declares it unread ([fingerprint] not_read); an unread one has none. A field
    with no fixture showing it would never be judged by the gate (a rental's category)."""
    coverage = load_coverage_baseline(site)
    not_read = set(FingerprintConfig.for_site(site).not_read)
    fields = schema_by_type(SiteProfile.load(site).item_type).field_names
    rates = {
        name: coverage.fields[name].rate if name in coverage.fields else 0.0 for name in fields
    }
    holes = sorted(n for n, r in rates.items() if r == 0.0 and n not in not_read | HARNESS)
    assert holes == [], f"{site}: no fixture shows {', '.join(holes)}"
    assert sorted(n for n in not_read if rates.get(n, 0.0) > 0) == []


def test_a_hole_is_refused_naming_the_field() -> None:
    url = "https://x.invalid/p"
    crawl = [PageOutput(url, "detail", "parse", ({"name": "A", "category": None},))]
    with pytest.raises(BaselineError, match="no fixture shows category"):
        derive_coverage("x", crawl, crawl, fields=["name", "category"])
    # Declared unread: no hole; filled although declared unread: refused.
    assert derive_coverage("x", crawl, crawl, fields=["name", "category"], not_read=["category"])
    with pytest.raises(BaselineError, match="not_read names name"):
        derive_coverage(
            "x", crawl, crawl, fields=["name", "category"], not_read=["name", "category"]
        )
