"""Fetch sessions against the bot-defense stand-in (harness.bot_defense): a JavaScript
challenge passed once per session in Chromium, its cookie reused by plain requests, a
CAPTCHA retiring its session, and sessions shared by two workers through Redis."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.figures.stats import JobStats
from core.frontier.drain import drain_state
from core.keys import SiteKeys
from crawlers.cli.producer import produce
from harness.bot_defense import BotDefense
from harness.demo_site import DemoSite
from harness.redis_server import RedisServer
from tests.crawlers.fetch.support import run_crawl
from tests.crawlers.support import (
    kill_holding_leases,
    log_excerpt,
    start_worker,
    start_workers,
    sunk_items,
    wait_all,
)

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 40
HUMAN = ("challenge", "captcha", "headers", "tls")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    with DemoSite(products=PRODUCTS, run_dir=tmp_path_factory.mktemp("shop")) as site:
        yield site


def defended(shop: DemoSite, tmp_path: Path, level: int, **knobs: Any) -> BotDefense:
    shop.reset()
    return BotDefense(upstream=shop.url, level=level, run_dir=tmp_path / "defense", **knobs)


def skus(items: list[dict[str, Any]]) -> set[str]:
    return {item["sku"] for item in items}


def page_decisions(defense: BotDefense) -> Counter[str]:
    """The stand-in's decisions on what the crawl asked for (Chromium's own favicon
    request is the browser's, not the crawl's)."""
    return Counter(r["decision"] for r in defense.log_records() if r["path"] != "/favicon.ico")


def test_a_challenge_is_passed_once_per_session_and_its_cookie_serves_plain_requests(
    shop: DemoSite, tmp_path: Path
) -> None:
    with defended(shop, tmp_path, 3) as defense:
        result = run_crawl(
            tmp_path,
            base_url=defense.url,
            settings={"SESSIONS_ENABLED": True, "SESSION_POOL_SIZE": 3},
        )
        decisions = page_decisions(defense)
        stats = defense.stats()
    assert result.returncode == 0, result.log[-3000:]
    assert skus(result.items) == {p.sku for p in shop.catalog().products}
    created = result.stat("sessions/created")
    assert 1 <= created <= 3
    # Sessions engaged at the site's first answer (the start page's challenge, to a
    # request without a session). Each session was then challenged once on a plain
    # request and once in the browser (whose script then verified and reloaded);
    # everything else passed as plain HTTP.
    assert result.stat("sessions/blocks_before") == result.stat("sessions/engaged") == 1
    assert result.stat("sessions/challenges_passed") == created == stats["sessions_issued"]
    assert decisions["verified"] == created
    assert result.stat("blocks/challenge") == decisions["challenge"] == 2 * created + 1
    assert result.stat("render/requests") == created  # a render per session, no more
    # The platform's pages said the same browser as Chromium: one TLS fingerprint.
    fingerprints = {r["tls"] for r in defense.log_records()}
    assert len(fingerprints) == 1, fingerprints
    assert "Traceback" not in result.log


def test_an_open_site_crawled_with_sessions_pays_nothing_for_them(
    shop: DemoSite, tmp_path: Path
) -> None:
    """No defense answers: the requests go out as the crawl's own (no session, no rate
    budget), however slow the budget is set; sessions engage only once a block is seen."""
    shop.reset()
    result = run_crawl(
        tmp_path,
        base_url=shop.url,
        settings={"SESSIONS_ENABLED": True, "SESSION_POOL_SIZE": 1, "SESSION_MAX_RATE": 0.2},
    )
    assert result.returncode == 0, result.log[-3000:]
    assert skus(result.items) == {p.sku for p in shop.catalog().products}
    for name in ("sessions/created", "sessions/waits", "sessions/engaged", "blocks/total"):
        assert result.stat(name) == 0, name


def test_a_captcha_retires_its_session_and_the_page_is_fetched_on_another(
    shop: DemoSite, tmp_path: Path
) -> None:
    # The stand-in burns a session after 8 requests in 10 s; the platform's budget lets a
    # session go faster: sessions burn, are retired, and the pages still all arrive.
    with defended(shop, tmp_path, 4, session_rate=8, rate_window=10) as defense:
        result = run_crawl(
            tmp_path,
            base_url=defense.url,
            settings={
                "SESSIONS_ENABLED": True,
                "SESSION_POOL_SIZE": 2,
                "SESSION_MAX_RATE": 50,
                "BLOCK_RETRY_TIMES": 8,
                "RETRY_BACKOFF_BASE": 0.05,
            },
            timeout=300,
        )
        stats = defense.stats()
        records = defense.log_records()
    assert result.returncode == 0, result.log[-3000:]
    assert skus(result.items) == {p.sku for p in shop.catalog().products}
    burnt = stats["sessions_burnt"]
    assert burnt >= 1
    assert result.stat("sessions/retired/captcha") == burnt
    assert result.stat("blocks/captcha") == sum(r["decision"] == "captcha" for r in records)
    # A burnt session is dropped at its first CAPTCHA: only requests already under way
    # (at most the crawl's concurrency per session) met it again.
    captchas = Counter(r["session"] for r in records if r["decision"] == "captcha")
    assert max(captchas.values()) <= 16
    assert "CAPTCHA" not in result.log or "retired" in result.log


def test_a_browser_that_cannot_pass_retires_the_session_and_says_so(
    shop: DemoSite, tmp_path: Path
) -> None:
    """Challenges off: the challenged session is retired, the crawl is refused as a whole
    and the line points at the fix."""
    with defended(shop, tmp_path, 3) as defense:
        result = run_crawl(
            tmp_path,
            base_url=defense.url,
            settings={
                "SESSIONS_ENABLED": True,
                "SESSION_PASS_CHALLENGES": False,
                "RETRY_BACKOFF_BASE": 0.01,
                "REFUSAL_CLOSE_AFTER": 4,
            },
        )
    assert result.returncode == 3, result.log[-3000:]
    assert result.stat("sessions/retired/challenge") >= 1
    assert result.stat("render/requests", 0) == 0
    refusal = str(result.stat("refusal"))
    assert refusal.startswith("every page was refused") and "challenge" in refusal


def test_two_workers_share_sessions_through_redis(
    shop: DemoSite, tmp_path: Path, redis_server: RedisServer
) -> None:
    """One session for the site: the worker that meets the challenge first passes it; the
    other worker's requests go out with that session's cookie, never challenged."""
    client = redis_server.client()
    client.flushdb()
    with defended(shop, tmp_path, 3) as defense:
        job = produce(client, "demo", base_url=defense.url)
        workers, logs = start_workers(
            2,
            tmp_path,
            redis_url=redis_server.url,
            job_id=job.job_id,
            base_url=defense.url,
            sink_key="items",
            settings={
                "SESSIONS_ENABLED": True,
                "SESSION_POOL_SIZE": 1,
                "SESSION_MAX_RATE": 20,
                # Idle while the other passes the challenge of the job's first page.
                "FRONTIER_IDLE_CLOSE_SECONDS": 15,
            },
        )
        codes = wait_all(workers, timeout=300)
        records = defense.log_records()
    texts = [log.read_text(errors="replace") for log in logs]
    assert codes == [0, 0], [text[-2000:] for text in texts]
    items = sunk_items(client, "items")
    assert {item["sku"] for item in items} == {p.sku for p in shop.catalog().products}
    sessions = {r["session"] for r in records if r["decision"] == "pass" and r["session"]}
    assert len(sessions) == 1  # one visitor, however many workers
    assert sum(r["decision"] == "verified" for r in records) == 1  # passed once
    passed = [text.count("'sessions/challenges_passed': 1") for text in texts]
    assert sorted(passed) == [0, 1]
    # Both workers fetched pages with it (each logs its own fetch summary).
    classified = [
        int(line.split("responses classified")[0].rsplit(" ", 2)[-2])
        for text in texts
        for line in text.splitlines()
        if "fetch summary:" in line
    ]
    assert len(classified) == 2 and all(n > 0 for n in classified), classified
    # The clearance is in the shared jar, and in no log line.
    keys = SiteKeys("demo")
    (ours,) = [raw.decode() for raw in client.zrange(keys.sessions, 0, -1)]
    jar = client.hvals(keys.session_prefix + ours + ":cookies")
    values = [json.loads(raw)["value"] for raw in jar]
    assert values and all(len(value) > 20 for value in values)
    assert not any(value in text for value in values for text in texts)
    client.flushdb()


def test_a_worker_sigkilled_at_the_challenge_level_loses_nothing(
    shop: DemoSite, tmp_path: Path, redis_server: RedisServer
) -> None:
    """A worker behind the JavaScript challenge is SIGKILLed holding leases (and perhaps a
    session's probe or challenge): its leases come back, and a second worker gets every
    product, through sessions passed in the browser."""
    client = redis_server.client()
    client.flushdb()
    with defended(shop, tmp_path, 3) as defense:
        # Slow product pages keep requests in flight: the victim dies holding leases.
        shop.control(slow={"rate": 1.0, "ms": 400, "paths": ["/product/"]})
        job = produce(client, "demo", base_url=defense.url)
        common: dict[str, Any] = {
            "redis_url": redis_server.url,
            "job_id": job.job_id,
            "base_url": defense.url,
            "sink_key": "items",
            "settings": {
                "SESSIONS_ENABLED": True,
                "SESSION_POOL_SIZE": 4,
                "SESSION_MAX_RATE": 20,
                "FRONTIER_IDLE_CLOSE_SECONDS": 15,
            },
        }
        # The victim crawls alone until it is killed: started together, the other worker
        # could finish the 40 products before the victim held a lease (CI saw it).
        victim_log, survivor_log = tmp_path / "worker-1.log", tmp_path / "worker-2.log"
        victim = start_worker(log_path=victim_log, **common)

        def mid_crawl() -> bool:
            assert victim.poll() is None, log_excerpt(victim_log)
            assert client.llen("items") < PRODUCTS, "the crawl ended before the kill"
            return client.llen("items") >= 3

        kill_holding_leases(client, "demo", victim, leases=1, also=mid_crawl, timeout=120)
        survivor = start_worker(log_path=survivor_log, **common)
        assert wait_all([survivor], timeout=300) == [0], log_excerpt(survivor_log)
        records = defense.log_records()
    items = sunk_items(client, "items")
    assert {item["sku"] for item in items} == {p.sku for p in shop.catalog().products}
    assert JobStats(client, "demo").get(job.job_id).get("frontier/reclaimed_leases", 0) >= 1
    state = drain_state(client, "demo", job.job_id)
    assert (state.queued, state.leased) == (0, 0)
    # Every product page the survivor fetched went out on a cleared session.
    products = [r for r in records if r["path"].startswith("/product/")]
    assert products and all(r["decision"] in ("pass", "challenge") for r in products)
    assert sum(r["decision"] == "verified" for r in records) >= 1
    # The job's ledger knows every session the pool has: each was written by the same
    # atomic step that made it, so no kill falls between the two.
    assert ledger_events(client, job.job_id) == pool_events(client)
    client.flushdb()


def ledger_events(client: Any, job_id: str) -> Counter[str]:
    """What the job's ledger says became of sessions: created, passed, retired."""
    fields = client.hkeys(SiteKeys("demo").job_sessions(job_id))
    return Counter(field.decode().split(":", 1)[0] for field in fields)


def pool_events(client: Any) -> Counter[str]:
    """The same from the pool's own records (live and retired sessions)."""
    keys = SiteKeys("demo")
    counts: Counter[str] = Counter()
    for key in client.scan_iter(match=keys.session_prefix + "*"):
        if key.decode().endswith(":cookies"):
            continue
        state, generation = client.hmget(key, ["state", "generation"])
        counts["created"] += 1
        counts["passed"] += int(generation or 0)
        counts["retired"] += state == b"retired"
    return +counts
