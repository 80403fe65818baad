"""Every site's block rules (generic markers + its profile's ``BLOCK_MARKERS``, built as the
fetch middleware builds them) against every saved real page and every committed fixture.

Block pages must be the right kind for every site (a vendor's challenge is a challenge
whoever serves it); content pages must be ok for every site, including those that carry
bot-detection tags (g2's DataDome ``tags.js``, booking.com's silent AWS WAF
``challenge.js``, contact-form CAPTCHAs).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from scrapy.settings import Settings

from core.fetch.blocks import BlockRules, Verdict, classify
from crawlers.fetch.classify import reason_slug, rules_from_settings
from crawlers.profiles import SiteProfile
from tests.sites.support import REAL_PAGES, SITES, SITES_DIR

# In-process, but seconds of CPU (every committed page classified): the integration tier keeps
# `make test-fast` within its budget.
pytestmark = pytest.mark.integration

HTML = {"Content-Type": "text/html; charset=utf-8"}
# Saved block pages: (kind, reason slug, the status the site answered with).
BLOCK_PAGES = {
    "booking_com/awswaf_block_page.html": ("challenge", "aws_waf_challenge", 202),
    "idealista/datadome_block_page.html": ("captcha", "datadome_captcha", 403),
}


def _real_pages() -> list[object]:
    if not REAL_PAGES.is_dir():
        reason = f"saved real pages not found at {REAL_PAGES} (not part of the repository)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-real-pages")]
    return [
        pytest.param(path.relative_to(REAL_PAGES).as_posix(), id=path.name)
        for path in sorted(REAL_PAGES.glob("*/*.html"))
    ]


@cache
def rules(site: str) -> BlockRules:
    return rules_from_settings(Settings(SiteProfile.load(site).scrapy_settings()))


def verdicts(body: bytes, status: int) -> dict[str, Verdict]:
    return {site: classify(status, HTML, body, rules=rules(site)) for site in SITES}


def test_every_saved_block_page_is_listed() -> None:
    if not REAL_PAGES.is_dir():
        pytest.skip(f"saved real pages not found at {REAL_PAGES}")
    named = {p.relative_to(REAL_PAGES).as_posix() for p in REAL_PAGES.glob("*/*block*.html")}
    assert named == set(BLOCK_PAGES)


@pytest.mark.parametrize("name", _real_pages())
def test_real_page_is_a_block_or_content_for_every_site(name: str) -> None:
    body = (REAL_PAGES / name).read_bytes()
    if name in BLOCK_PAGES:
        kind, slug, status = BLOCK_PAGES[name]
        for answered in (status, 200):  # proxies and CDNs may turn the status into a 200
            found = verdicts(body, answered)
            assert {site: v.kind for site, v in found.items()} == dict.fromkeys(SITES, kind)
            assert {reason_slug(v) for v in found.values()} == {slug}
    else:
        found = verdicts(body, 200)
        assert {site: str(v) for site, v in found.items() if not v.ok} == {}


def test_booking_waf_page_without_the_integration_calls_is_still_a_challenge() -> None:
    """The site marker alone: booking.com's own /__challenge_ script path."""
    path = REAL_PAGES / "booking_com" / "awswaf_block_page.html"
    if not path.is_file():
        pytest.skip(f"saved real page {path} not found")
    body = path.read_bytes().replace(b"AwsWafIntegration", b"Integration")
    assert str(classify(202, HTML, body, rules=rules("booking_com"))) == (
        "challenge: booking waf challenge on a thin page"
    )
    assert classify(202, HTML, body, rules=rules("trustpilot")).ok  # without the site marker


@pytest.mark.parametrize("site", SITES)
def test_committed_fixtures_block_pages_block_and_content_pages_pass(site: str) -> None:
    root: Path = SITES_DIR / site
    blocked = sorted(root.glob("blocked/*.html"))
    content = sorted(root.glob("fixtures/**/*.html"))
    assert content
    for path in blocked:
        verdict = classify(200, HTML, path.read_bytes(), rules=rules(site))
        assert verdict.is_block, f"{path.relative_to(root)}: {verdict}"
    for path in content:
        for other in SITES:
            verdict = classify(200, HTML, path.read_bytes(), rules=rules(other))
            assert verdict.ok, f"{path.relative_to(root)} with {other}'s rules: {verdict}"
