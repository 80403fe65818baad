"""Rendering with real Chromium (Debian's) through loopback proxies, and crash recovery."""

from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError
from scrapy.settings import Settings
from scrapy_playwright import handler as playwright_handler
from scrapy_playwright import provider as playwright_provider
from scrapy_playwright.handler import Config, ScrapyPlaywrightDownloadHandler

from crawlers.fetch import browser, browser_pool, rendering
from crawlers.fetch.browser import LazyBrowserProvider, ResourceBlocker
from crawlers.fetch.rendering import ResilientPlaywrightHandler
from harness.demo_site import DemoSite
from harness.loopback_proxy import LoopbackProxy
from tests.crawlers.fetch.support import (
    REPO_ROOT,
    assert_no_secret,
    browser_pids,
    expected_products,
    mismatches,
    run_crawl,
    start_crawl,
)

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

SPIDER = REPO_ROOT / "tests" / "crawlers" / "fetch" / "render_spider.py"
SECRET = "br0wser-s3cret"
RENDERING = {"RENDER_MODE": "per_request", "RETRY_BACKOFF_BASE": 0.05, "RETRY_BACKOFF_MAX": 0.5}


def product_hits(site: DemoSite) -> int:
    return sum(1 for entry in site.access_log() if entry["path"].startswith("/product/"))


def test_js_only_reviews_are_rendered_through_rotating_proxies(
    start_site: Callable[..., DemoSite],
    start_proxy: Callable[..., LoopbackProxy],
    tmp_path: Path,
) -> None:
    site = start_site(products=24)
    banned = start_proxy("banned")
    goods = [start_proxy("good-a", auth=f"crawler:{SECRET}"), start_proxy("good-b")]
    goods.append(start_proxy("good-c"))
    # Product pages (the rendered ones) through the banned proxy get a CAPTCHA.
    site.control(client="banned", captcha={"rate": 1.0, "attempts": None, "paths": ["/product/"]})

    result = run_crawl(
        tmp_path,
        spider_file=SPIDER,
        base_url=site.url,
        proxies=[banned.url, *(p.url for p in goods)],
        # Four proxies, a context each, two contexts at most: idle ones are closed.
        settings={**RENDERING, "PLAYWRIGHT_MAX_CONTEXTS": 2},
    )
    assert result.returncode == 0, result.log[-3000:]

    # Reviews exist only in the rendered DOM: each product has exactly the catalog's.
    expected = expected_products(site.catalog(), site.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    assert mismatches(result.items, expected) == {}
    assert sum(len(item["reviews"]) for item in result.items) > 24

    stats = result.stats
    assert stats["demo/rendered_products"] == 24
    assert (
        stats["render/ok"] == 24 + stats["blocks/captcha"]
    )  # a rendered CAPTCHA is ok to the browser
    assert stats["playwright/context_count/max_concurrent"] <= 2
    assert stats["render/contexts_evicted"] >= 1
    assert stats["playwright/request_count/aborted"] >= 24  # product images
    # Every page (and the reviews API call its script makes) went through a proxy.
    log = site.access_log()
    by_client = Counter(entry["client"] for entry in log)
    assert None not in by_client
    assert by_client["good-a"] and by_client["good-b"] and by_client["good-c"]
    # The CAPTCHAs Chromium got through the banned proxy were classified and banned it.
    captchas = sum(1 for entry in log if entry["behaviour"] == "captcha")
    assert captchas >= 1 and stats["blocks/captcha"] == captchas
    assert stats[f"proxies/bans/127.0.0.1:{banned.port}"] >= 1
    # Chromium authenticated with the context's credentials; none leaked.
    assert goods[0].stats()["requests"] > 0
    assert_no_secret(SECRET, result.log, result.stats, result.items)


def test_a_hung_page_ends_at_the_hard_limit_and_is_rendered_elsewhere(
    start_site: Callable[..., DemoSite],
    start_proxy: Callable[..., LoopbackProxy],
    tmp_path: Path,
) -> None:
    site = start_site(products=12)
    stuck, good = start_proxy("stuck"), start_proxy("good")
    # Through the "stuck" proxy, product pages answer after 2 minutes; navigation's own
    # timeout is set longer still, so only the hard limit can end them.
    site.control(client="stuck", slow={"ms": 120_000, "paths": ["/product/"]})
    started = time.monotonic()
    result = run_crawl(
        tmp_path,
        spider_file=SPIDER,
        base_url=site.url,
        proxies=[stuck.url, good.url],
        settings={
            **RENDERING,
            # 10 s: well under the stuck answer's 2 minutes, and above a good page's
            # render on a loaded 2-core machine (4 s lost good pages under parallel tests).
            "RENDER_HARD_TIMEOUT": 10,
            "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": 900_000,
        },
        timeout=180,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(site.catalog(), site.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    assert mismatches(result.items, expected) == {}
    stats = result.stats
    assert stats["render/hard_timeouts"] >= 1
    assert stats[f"proxies/bans/127.0.0.1:{stuck.port}"] >= 1
    assert stats["retry/reason_count/crawlers.fetch.rendering.RenderTimeout"] >= 1
    assert elapsed < 110  # far from the 2-minute answers a navigation timeout would wait for
    site.kill()  # its abandoned slow answers would hold a graceful stop for minutes


def test_chromium_killed_twice_mid_crawl_the_crawl_finishes_every_page_rendered(
    start_site: Callable[..., DemoSite],
    start_proxy: Callable[..., LoopbackProxy],
    tmp_path: Path,
) -> None:
    products = 60
    site = start_site(products=products)
    proxy = start_proxy("good")
    hard_limit = 20
    crawl = start_crawl(
        tmp_path,
        spider_file=SPIDER,
        base_url=site.url,
        proxies=[proxy.url],
        settings={**RENDERING, "RENDER_HARD_TIMEOUT": hard_limit},
    )
    killed: list[int] = []
    for progress in (products // 4, products // 2):
        deadline = time.monotonic() + 60
        while True:
            assert crawl.process.poll() is None, crawl.log_tail()
            assert time.monotonic() < deadline, f"no progress to {progress}:\n{crawl.log_tail()}"
            browsers = [pid for pid in browser_pids(crawl.pid) if pid not in killed]
            if browsers and product_hits(site) >= progress:
                break
            time.sleep(0.05)
        for pid in browsers:  # kill -9 of Chromium's browser process, mid-crawl
            os.kill(pid, signal.SIGKILL)
        killed += browsers
    # Two crashes can cost a request at most two hard limits plus its retries' backoff.
    result = crawl.wait(timeout=6 * hard_limit)
    assert result.returncode == 0, result.log[-3000:]
    assert len(killed) == 2

    expected = expected_products(site.catalog(), site.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    assert mismatches(result.items, expected) == {}
    stats = result.stats
    assert stats["demo/rendered_products"] == products
    assert stats["render/browser_crashes"] == 2
    assert stats["playwright/browser_count"] == 3  # the first, and one relaunch per kill
    # The requests inside the dead browser failed at once and were retried, rather than
    # waiting for anything (scrapy-playwright alone left some hanging forever).
    assert stats["render/cancelled_by_crash"] >= 1
    assert stats.get("render/hard_timeouts", 0) == 0
    assert len(result.log_lines("browser disconnected: relaunching")) == 2


# -- public extension points only (no browser needed) -------------------------------------


def test_the_handler_overrides_no_private_scrapy_playwright_method() -> None:
    """Everything is done around the public download_request/close: a scrapy-playwright
    upgrade that renames its internals cannot silently bypass the handler."""
    overridden = [
        name
        for name in vars(ResilientPlaywrightHandler)
        if name.startswith("_")
        and not name.startswith("__")
        and name != "_abc_impl"  # abc's bookkeeping of every ABC subclass
        and hasattr(ScrapyPlaywrightDownloadHandler, name)
    ]
    assert overridden == []
    assert [
        name
        for name in vars(LazyBrowserProvider)
        if name.startswith("_")
        and not name.startswith("__")
        and hasattr(playwright_provider.PlaywrightBrowserProvider, name)
    ] == []


def test_rendering_imports_only_public_scrapy_playwright_names() -> None:
    public = {
        "scrapy_playwright.handler": set(playwright_handler.__all__),
        "scrapy_playwright.provider": set(playwright_provider.__all__),
        "scrapy_playwright.page": {"PageMethod"},
    }
    for module in (rendering, browser, browser_pool):
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "scrapy_playwright"
            ):
                names = {alias.name for alias in node.names}
                assert names <= public.get(node.module or "", set()), (module, node.module)


def test_the_provider_starts_nothing_until_a_browser_is_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lazy start: engine start awaits start(); the Playwright driver (and Chromium) start
    with the first browser asked for, once."""
    calls: list[str] = []

    async def start(self: object) -> None:
        calls.append("start")

    async def launch_browser(self: object) -> Any:
        calls.append("launch")
        return object()

    parent = playwright_provider.PlaywrightBrowserProvider
    monkeypatch.setattr(parent, "start", start)
    monkeypatch.setattr(parent, "launch_browser", launch_browser)
    provider = LazyBrowserProvider(Config.from_settings(Settings({"CONCURRENT_REQUESTS": 4})))

    async def crawl() -> None:
        await provider.start()  # what the handler does at engine start
        assert calls == []
        await provider.launch_browser()
        await provider.launch_browser()  # a relaunch after a crash starts no second driver

    asyncio.run(crawl())
    assert calls == ["start", "launch", "launch"]


def test_resource_types_are_aborted_per_page() -> None:
    blocker = ResourceBlocker()
    blocker.frameless = frozenset({"image"})

    class FakePage:  # weakly referenced, like Playwright's pages
        pass

    lean: Any = FakePage()
    keeping: Any = FakePage()
    blocker.assign(lean, frozenset({"image", "font"}))
    blocker.assign(keeping, frozenset())  # meta["render_keep_resources"]

    def request(page: object, resource_type: str) -> Any:
        return SimpleNamespace(frame=SimpleNamespace(page=page), resource_type=resource_type)

    class ServiceWorkerRequest:
        resource_type = "image"

        @property
        def frame(self) -> object:
            raise PlaywrightError("Service Worker requests do not have an associated frame.")

    assert blocker(request(lean, "image")) and blocker(request(lean, "font"))
    assert not blocker(request(lean, "script"))
    assert not blocker(request(keeping, "image"))
    assert not blocker(request(FakePage(), "image"))  # a page of another handler
    assert blocker(ServiceWorkerRequest())  # type: ignore[arg-type]


def test_scrapy_playwright_debug_listeners_stay_off_unless_the_crawl_logs_at_debug() -> None:
    # scrapy-playwright attaches per-request logging listeners (each a driver round trip)
    # when its logger lets DEBUG through; Scrapy's LOG_LEVEL does not set logger levels.
    log = logging.getLogger(rendering.PLAYWRIGHT_LOGGER)
    original = log.level
    try:
        log.setLevel(logging.NOTSET)
        rendering.quiet_playwright_logger("DEBUG")
        assert log.level == logging.NOTSET
        rendering.quiet_playwright_logger("INFO")
        assert log.level == logging.INFO and not log.isEnabledFor(logging.DEBUG)
        log.setLevel(logging.DEBUG)  # an operator's explicit choice is kept
        rendering.quiet_playwright_logger("WARNING")
        assert log.level == logging.DEBUG
    finally:
        log.setLevel(original)
