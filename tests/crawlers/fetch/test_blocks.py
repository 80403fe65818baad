"""Block pages at a set rate, and bad input: every response classified and counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from harness.demo_site import DemoSite
from standins.demo_site.behaviours import selected
from tests.crawlers.fetch.support import expected_products, mismatches, run_crawl

BLOCK_SEED = 7  # the demo site's default: its seed
FAST_RETRIES = {"RETRY_BACKOFF_BASE": 0.05, "RETRY_BACKOFF_MAX": 0.5}


def picked(site: DemoSite, behaviour: str, rate: float) -> set[str]:
    """The SKUs whose product page the site's rate rule selects for ``behaviour``."""
    skus = (product.sku for product in site.catalog().products)
    return {sku for sku in skus if selected(BLOCK_SEED, behaviour, f"/product/{sku}", rate)}


def test_no_item_from_a_block_page_and_the_block_rate_is_what_was_served(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    site = start_site(products=60)
    site.control(
        # Served once per selected page, then the page: retries get them all.
        captcha={"rate": 0.2},
        throttle={"rate": 0.1, "retry_after": 0},
        # Some product pages are refused for good: dropped after the retries, no item.
        forbidden={"rate": 0.1, "attempts": None, "paths": ["/product/"]},
    )
    refused = picked(site, "forbidden", 0.1)
    assert 0 < len(refused) < 20

    result = run_crawl(tmp_path, base_url=site.url, settings=FAST_RETRIES)
    assert result.returncode == 0, result.log[-3000:]

    keep = {p.sku for p in site.catalog().products} - refused
    expected = expected_products(site.catalog(), site.url, keep)
    assert sorted(item["sku"] for item in result.items) == sorted(keep)
    assert mismatches(result.items, expected) == {}  # nothing came from a block page

    log = site.access_log()
    served = Counter(entry["behaviour"] for entry in log)
    stats = result.stats
    assert served["captcha"] > 0 and served["throttle"] > 0 and served["forbidden"] > 0
    assert stats["blocks/captcha"] == served["captcha"]
    assert stats["blocks/throttled"] == served["throttle"]
    assert stats["blocks/blocked"] == served["forbidden"]
    blocks = served["captcha"] + served["throttle"] + served["forbidden"]
    assert stats["blocks/total"] == blocks
    assert stats["responses/classified"] == len(log)
    assert stats["blocks/rate"] == round(blocks / len(log), 4)
    assert stats["blocks/reason/datadome_captcha"] == served["captcha"]
    assert stats["blocks/reason/http_429"] == served["throttle"]
    # Refused pages: tried 1 + BLOCK_RETRY_TIMES (3) times, then dropped with a reason.
    assert stats["fetch/gave_up/blocked"] == len(refused)
    assert served["forbidden"] == 4 * len(refused)
    assert stats["fetch/backoff_ms"] > 0
    summary = result.log_lines("fetch summary: ")
    assert summary and f"block rate {100 * blocks / len(log):.2f}%" in summary[0]


def test_bad_input_is_classified_counted_and_loses_nothing_that_could_be_had(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    site = start_site(products=60)
    product_pages = {"paths": ["/product/"]}
    site.control(
        error_burst={"count": 6, **product_pages},
        redirect_loop={"rate": 0.05, **product_pages},
        malformed_html={"rate": 0.3, **product_pages},
        bad_encoding={"rate": 0.3, **product_pages},
        huge_page={"rate": 0.06, "mb": 12, **product_pages},
    )
    loops = picked(site, "redirect_loop", 0.05)
    misencoded = picked(site, "bad_encoding", 0.3) - loops
    huge = picked(site, "huge_page", 0.06) - loops
    assert loops and misencoded and huge and picked(site, "malformed_html", 0.3) - loops

    result = run_crawl(tmp_path, base_url=site.url, settings=FAST_RETRIES)
    assert result.returncode == 0, result.log[-3000:]

    # Every product that can be had, exactly as the catalog has it: malformed markup,
    # cp1252 bytes labelled UTF-8 (accents intact) and 12 MB pages included.
    keep = {p.sku for p in site.catalog().products} - loops
    assert sorted(item["sku"] for item in result.items) == sorted(keep)
    assert mismatches(result.items, expected_products(site.catalog(), site.url, keep)) == {}

    stats = result.stats
    log = site.access_log()
    assert stats["responses/classified"] == sum(1 for e in log if e["status"] != 302)
    assert stats["responses/error_status/503"] == 6 == stats["fetch/retry/error"]
    assert stats["fetch/redirect_loop"] == len(loops)
    assert stats["responses/encoding_repaired"] == len(misencoded)
    assert "blocks/total" not in stats  # broken pages are not block pages
    assert stats["responses/ok"] == stats["responses/classified"] - 6
    # The only errors logged are the redirect loops' requests, each named: the first
    # three in a line each, the rest in one line with their URLs (crawlers.limits.log_repeats).
    errors = result.log_lines(" ERROR: ")
    assert stats["log_count/ERROR"] == len(loops)
    assert len(errors) == min(len(loops), 3) + (len(loops) > 3)
    named = {sku for sku in loops if any(f"/product/{sku}" in line for line in errors)}
    assert named == loops
