"""Rotating proxies on loopback: one dead, one the site bans, one good (with credentials)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from harness.base import free_port
from harness.demo_site import DemoSite
from harness.loopback_proxy import LoopbackProxy
from tests.crawlers.fetch.support import (
    assert_no_secret,
    expected_products,
    mismatches,
    run_crawl,
)

SECRET = "pr0xy-s3cret"


def test_crawl_completes_through_the_good_proxy_and_marks_the_bad_ones(
    start_site: Callable[..., DemoSite],
    start_proxy: Callable[..., LoopbackProxy],
    tmp_path: Path,
) -> None:
    site = start_site(products=60)
    banned = start_proxy("banned")
    good = start_proxy("good", auth=f"crawler:{SECRET}")
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    # The shop answers everything the banned proxy relays with a DataDome CAPTCHA.
    site.control(client="banned", captcha={"rate": 1.0, "attempts": None})

    result = run_crawl(
        tmp_path,
        base_url=site.url,
        proxies=[dead, banned.url, good.url],
        settings={"RETRY_BACKOFF_BASE": 0.05},
    )
    assert result.returncode == 0, result.log[-3000:]

    # Every page: each product exactly once, as the catalog has it.
    expected = expected_products(site.catalog(), site.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    assert mismatches(result.items, expected) == {}

    # The bad proxies are marked, the good one carried the crawl.
    dead_id, banned_id, good_id = (
        f"127.0.0.1:{p}" for p in (dead.rsplit(":")[-1], banned.port, good.port)
    )
    stats = result.stats
    assert stats["proxies/total"] == 3
    assert stats[f"proxies/bans/{dead_id}"] >= 1
    assert stats[f"proxies/bans/{banned_id}"] >= 1
    assert f"proxies/bans/{good_id}" not in stats
    assert stats["proxies/marked_dead"] >= 2
    assert stats["bans/error/scrapy.exceptions.DownloadConnectionRefusedError"] >= 1

    # The block rate is what the shop served, counted once per response.
    log = site.access_log()
    served = Counter(entry["client"] for entry in log)
    captchas = sum(1 for entry in log if entry["behaviour"] == "captcha")
    assert captchas == served["banned"] >= 1
    assert stats["blocks/total"] == stats["blocks/captcha"] == captchas
    assert stats["responses/classified"] == len(log)
    assert stats["blocks/rate"] == round(captchas / len(log), 4)
    assert stats[f"proxies/ok/{good_id}"] == served["good"]
    assert good.stats()["auth_failures"] == 0
    assert result.log_lines("fetch summary: ")

    # Credentials never reach a log line, a stat name or value, or the site.
    assert_no_secret(SECRET, result.log, result.stats, result.items)
