"""A rendered page that meets a JavaScript challenge waits it out in the browser
(crawlers.fetch.challenge): every page rendered (no fetch sessions) behind the
bot-defense stand-in in each vendor's style, with a real Chromium."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.bot_defense import BotDefense
from harness.demo_site import DemoSite
from tests.crawlers.fetch.support import REPO_ROOT, expected_products, mismatches, run_crawl

# Whole rendered crawls behind the stand-in: `make test-e2e`.
pytestmark = pytest.mark.e2e

SPIDER = REPO_ROOT / "tests" / "crawlers" / "fetch" / "auto_render_spider.py"
PRODUCTS = 12
PAGES = ("/", "/category/", "/product/")  # what the crawl asks for (not the page's own
# requests: its script's API call, Chromium's favicon)


@pytest.mark.parametrize("style", ["cloudflare", "aws", "datadome"])
def test_every_rendered_page_gets_past_the_challenge_by_itself(
    start_site: Callable[..., DemoSite], tmp_path: Path, style: str
) -> None:
    """Each page is a challenge until the browser's context holds the clearance: the
    browser runs it, the answer is the page it ended on (reviews read from its DOM), and
    the challenges it met are counted as the stand-in served them."""
    site = start_site(products=PRODUCTS)
    with BotDefense(upstream=site.url, level=3, style=style, run_dir=tmp_path / "d") as defense:
        result = run_crawl(
            tmp_path,
            spider_file=SPIDER,
            base_url=defense.url,
            settings={"RENDER_MODE": "always", "CONCURRENT_REQUESTS": 4},
            timeout=300,
        )
        records = [r for r in defense.log_records() if r["path"].startswith(PAGES)]
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(site.catalog(), defense.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    assert mismatches(result.items, expected) == {}
    stats = result.stats
    served = Counter(r["decision"] for r in records)
    assert served["challenge"] >= 1
    assert stats["blocks/challenge"] == served["challenge"]
    assert stats["render/challenges"] == stats["render/challenges_passed"] >= 1
    assert stats["render/challenges_passed_unsessioned"] == stats["render/challenges_passed"]
    assert stats.get("fetch/retry/challenge", 0) == 0  # none was taken as a refusal
    assert "Traceback" not in result.log
