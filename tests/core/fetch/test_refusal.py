"""The refusal verdict (core.fetch.refusal): one line when a site refused every page."""

from __future__ import annotations

import re

from core.fetch.refusal import Presented, refusal


def test_a_crawl_with_good_pages_is_not_refused() -> None:
    figures = {"pages/requests": 10, "pages/refused": 3, "blocks/blocked": 3}
    assert refusal(figures) is None
    assert refusal({"pages/requests": 0, "pages/refused": 0}) is None


def test_every_page_blocked_names_the_kind_the_rule_and_the_clients_own_identity() -> None:
    figures = {
        "pages/requests": 8,
        "pages/refused": 8,
        "blocks/blocked": 32,
        "blocks/reason/cloudflare_block": 32,
    }
    bot = Presented(fetch_identity="crawler", user_agent="scraping-platform/0.1")
    line = refusal(figures, bot)
    assert line is not None and "\n" not in line
    assert line.startswith("every page was refused: 8 of 8 requests were blocks [blocked 32]")
    assert "(cloudflare block 32)" in line
    assert "'scraping-platform/0.1'" in line and "FETCH_IDENTITY=browser" in line
    browser = refusal(figures, Presented(fetch_identity="browser", proxies=0, sessions=True))
    assert browser is not None and "PROXY_LIST" in browser and "FETCH_IDENTITY" not in browser


def test_challenges_captchas_and_throttling_get_their_own_advice() -> None:
    challenged = {"pages/requests": 5, "pages/refused": 5, "blocks/challenge": 5}
    assert "SESSIONS_ENABLED=true" in str(refusal(challenged, Presented(sessions=False)))
    assert "did not get past" in str(refusal(challenged, Presented(sessions=True)))
    captcha = {"pages/requests": 5, "pages/refused": 5, "blocks/captcha": 9, "blocks/challenge": 5}
    assert "CAPTCHA that needs a person" in str(refusal(captcha))
    throttled = {"pages/requests": 2, "pages/refused": 2, "blocks/throttled": 6}
    assert "SESSION_MAX_RATE" in str(refusal(throttled))


def test_a_crawls_own_stats_serve_without_a_ledger() -> None:
    stats = {"responses/classified": 8, "blocks/total": 8, "blocks/blocked": 8}
    assert str(refusal(stats)).startswith("every page was refused: 8 of 8")
    assert refusal({"responses/classified": 8, "blocks/total": 7}) is None


def test_a_captcha_at_once_for_a_self_announcing_client_names_its_user_agent() -> None:
    """DataDome answers a bot's User-Agent with its CAPTCHA from the first request: the
    client is the cause, not its rate."""
    figures = {"pages/requests": 6, "pages/refused": 6, "blocks/captcha": 24}
    bot = Presented(fetch_identity="crawler", user_agent="scraping-platform/0.1 (+bot)")
    line = str(refusal(figures, bot))
    assert "announce a program (User-Agent 'scraping-platform/0.1 (+bot)')" in line
    assert "FETCH_IDENTITY=browser" in line and "SESSION_MAX_RATE" not in line
    throttled = {"pages/requests": 2, "pages/refused": 2, "blocks/throttled": 6}
    assert "User-Agent 'scraping-platform/0.1 (+bot)'" in str(refusal(throttled, bot))


def test_the_challenge_line_says_what_the_browser_did_with_counters_it_has() -> None:
    base = {"pages/requests": 5, "pages/refused": 5, "blocks/challenge": 10}
    tried = {
        **base,
        "sessions/challenge_failed": 3,
        "sessions/challenge_failed/challenge": 2,
        "sessions/challenge_failed/captcha": 1,
    }
    line = str(refusal(tried, Presented(sessions=True)))
    assert "Chromium tried it 3 time(s) and never got past it" in line
    assert "2 ended on still a challenge when SESSION_CHALLENGE_TIMEOUT ran out" in line
    assert "1 ended on a CAPTCHA" in line
    for name in re.findall(r"\((sessions/[a-z_/]+)\)", line):
        assert name in tried, name  # every counter named is one the figures have
    passed = {**base, "sessions/challenges_passed": 2}
    assert "passed it 2 time(s) (sessions/challenges_passed)" in str(
        refusal(passed, Presented(sessions=True))
    )
    off = str(refusal(base, Presented(sessions=True, pass_challenges=False)))
    assert "SESSION_PASS_CHALLENGES is off" in off
    assert "sessions/challenge_failed" not in str(refusal(base, Presented(sessions=True)))
