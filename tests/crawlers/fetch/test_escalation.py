"""The documented layers together (crawlers.fetch.escalation, crawlers.fetch.challenge):
sessions with rendering chosen by evidence behind a JavaScript challenge of each vendor's
style, robots.txt and an API's JSON behind it, and a challenge the browser cannot pass,
against the bot-defense stand-in (harness.bot_defense) and a real Chromium."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawlers.defaults import PLAYWRIGHT_LAUNCH_OPTIONS
from harness.bot_defense import BotDefense
from harness.demo_site import DemoSite
from tests.crawlers.fetch.support import REPO_ROOT, expected_products, mismatches, run_crawl

# Whole crawls in subprocesses behind the stand-in: `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 30
CART_SPIDER = REPO_ROOT / "tests" / "crawlers" / "fetch" / "cart_spider.py"
BROWSER_ONLY = "/favicon.ico"  # Chromium asks for it, the crawl does not


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    with DemoSite(products=PRODUCTS, run_dir=tmp_path_factory.mktemp("shop")) as site:
        yield site


def defended(shop: DemoSite, tmp_path: Path, **knobs: Any) -> BotDefense:
    shop.reset()
    return BotDefense(upstream=shop.url, run_dir=tmp_path / "defense", **knobs)


def retired(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stats.items() if k.startswith("sessions/retired")}


@pytest.mark.parametrize("style", ["cloudflare", "aws", "datadome"])
def test_sessions_with_auto_rendering_get_every_product_behind_a_challenge(
    shop: DemoSite, tmp_path: Path, style: str
) -> None:
    """Under RENDER_MODE=auto the first pages of each page type are rendered: a rendered
    page that meets the challenge waits it out in the browser (its script reloads, or
    writes a cookie and reloads, or goes back to the URL), and the session keeps the
    clearance. No session is retired; every product is stored whole; the blocks and the
    clearances counted are the ones the stand-in served."""
    with defended(shop, tmp_path, level=3, style=style) as defense:
        result = run_crawl(
            tmp_path,
            base_url=defense.url,
            settings={"SESSIONS_ENABLED": True, "RENDER_MODE": "auto", "SESSION_POOL_SIZE": 3},
            timeout=300,
        )
        records = [r for r in defense.log_records() if r["path"] != BROWSER_ONLY]
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(shop.catalog(), defense.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    assert mismatches(result.items, expected) == {}  # reviews included
    stats = result.stats
    assert retired(stats) == {}
    assert stats.get("sessions/challenge_failed", 0) == 0
    # The browser met the challenge on rendered pages and waited it out.
    assert stats["render/challenges"] >= 1
    assert stats["render/challenges_passed"] == stats["render/challenges"]
    # What the stand-in served is what the crawl counted: every challenge, and every
    # clearance (a session's, or a rendered page's before sessions engaged).
    decisions = Counter(r["decision"] for r in records)
    assert stats["blocks/challenge"] == decisions["challenge"]
    passed = stats["sessions/challenges_passed"]
    assert decisions["verified"] == passed + stats.get("render/challenges_passed_unsessioned", 0)
    assert passed >= 1
    assert "Traceback" not in result.log


def test_robots_txt_behind_a_challenge_is_passed_and_its_rules_obeyed(
    shop: DemoSite, tmp_path: Path
) -> None:
    """A defense that challenges robots.txt too: the file is passed like any page (in
    the session's browser, then fetched again with the clearance), so the site's rules
    are read (the cart stays unvisited) and no session is burnt on it."""
    with defended(shop, tmp_path, level=3, challenge_robots=True, style="aws") as defense:
        result = run_crawl(
            tmp_path,
            spider_file=CART_SPIDER,
            base_url=defense.url,
            settings={"SESSIONS_ENABLED": True, "SESSION_POOL_SIZE": 2},
            timeout=300,
        )
        records = [r for r in defense.log_records() if r["path"] != BROWSER_ONLY]
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert retired(stats) == {}
    robots = [(r["decision"], r["status"]) for r in records if r["path"] == "/robots.txt"]
    assert robots[0] == ("challenge", 202) and robots[-1] == ("pass", 200)
    # One robots.txt answer reached Scrapy's middleware: the file, read.
    assert stats["robotstxt/response_status_count/200"] == stats["robotstxt/request_count"] == 1
    assert stats["robotstxt/forbidden"] == 1  # the cart: its rules were obeyed
    assert not [r for r in records if r["path"] == "/cart"]
    assert len(result.items) == PRODUCTS
    # Its blocks counted as the stand-in served them, apart from the pages.
    assert stats["blocks/challenge"] == Counter(r["decision"] for r in records)["challenge"]
    assert stats["responses/robots_txt"] >= 2


def test_an_api_answer_after_the_clearance_expired_passes_the_challenge_again(
    shop: DemoSite, tmp_path: Path
) -> None:
    """The clearance lives a few seconds: the sessions' later requests, the reviews API's
    JSON among them, meet the challenge again. Each is passed again in the browser (the
    JSON judged as JSON, not as the viewer page Chromium wraps it in), never a session
    retired for it, and every product keeps its reviews."""
    with defended(shop, tmp_path, level=3, cookie_ttl=8) as defense:  # > a loaded pass
        result = run_crawl(
            tmp_path,
            base_url=defense.url,
            settings={
                "SESSIONS_ENABLED": True,
                "SESSION_POOL_SIZE": 2,
                "SESSION_MAX_RATE": 4,
                "SESSIONS_ENGAGE": "always",
            },
            timeout=300,
        )
        records = defense.log_records()
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert retired(stats) == {}
    assert stats.get("sessions/challenge_failed", 0) == 0
    expected = expected_products(shop.catalog(), defense.url)
    assert mismatches(result.items, expected) == {}  # every review there
    assert stats.get("demo/reviews_failed", 0) == 0
    # API answers met the challenge (their session's clearance had expired: the jar
    # drops an expired cookie, so the site sees none), and the same URLs passed after.
    expired_api = [
        r["path"] for r in records if r["path"].startswith("/api/") and r["decision"] == "challenge"
    ]
    assert expired_api, "no API request outlived its clearance: make the crawl longer"
    passed = {r["path"] for r in records if r["decision"] == "pass"}
    assert set(expired_api) <= passed
    assert stats["sessions/challenges_passed"] > stats["sessions/created"]  # passed again


def test_a_challenge_the_browser_cannot_pass_is_said_as_the_browser_met_it(
    shop: DemoSite, tmp_path: Path
) -> None:
    """A Chromium that shows it is automated (navigator.webdriver): the challenge's script
    refuses to run, and each session's browser is still on the challenge when
    SESSION_CHALLENGE_TIMEOUT runs out. The session is retired for that, the crawl is
    refused as a whole, and its line says what the browser did, with counters that are
    all in the crawl's stats."""
    launch = dict(PLAYWRIGHT_LAUNCH_OPTIONS)
    launch["args"] = [a for a in launch["args"] if "AutomationControlled" not in a]
    with defended(shop, tmp_path, level=3) as defense:
        result = run_crawl(
            tmp_path,
            base_url=defense.url,
            settings={
                "SESSIONS_ENABLED": True,
                "SESSION_CHALLENGE_TIMEOUT": 2,
                "RETRY_BACKOFF_BASE": 0.01,
                "REFUSAL_CLOSE_AFTER": 4,
                "PLAYWRIGHT_LAUNCH_OPTIONS": json.dumps(launch),
            },
            timeout=300,
        )
    assert result.returncode == 3, result.log[-3000:]
    stats = result.stats
    failed = stats["sessions/challenge_failed"]
    assert failed >= 1 and stats["sessions/challenge_failed/challenge"] == failed
    assert stats["sessions/retired/challenge_challenge"] == failed
    line = str(stats["refusal"])
    assert f"Chromium tried it {failed} time(s) and never got past it" in line
    assert "still a challenge when SESSION_CHALLENGE_TIMEOUT ran out" in line
    named = re.findall(r"\((sessions/[a-z_/]+)\)", line)
    assert named and all(name in stats for name in named), (named, line)
