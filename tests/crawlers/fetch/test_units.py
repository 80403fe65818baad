"""The fetch package's pieces, without a crawl: redaction, backoff, verdicts, middlewares."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import warnings
from pathlib import Path
from typing import Any

import playwright
import pytest
from scrapy import Request, Spider
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadConnectionRefusedError, NotConfigured
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.test import get_crawler

from core.fetch.blocks import classify
from crawlers import defaults
from crawlers.fetch.cache import BlockAwareCachePolicy
from crawlers.fetch.classify import ResponseClassifier, reason_slug
from crawlers.fetch.encoding import EncodingRepairMiddleware, misdeclared_cp1252
from crawlers.fetch.proxies import (
    PROXY_BAN_META,
    BanDetection,
    BlockBanPolicy,
    ProxyConfigError,
    RotatingProxies,
)
from crawlers.fetch.redact import (
    RedactingFilter,
    credential_tag,
    proxy_for_playwright,
    proxy_id,
    redact,
    split_proxy,
)
from crawlers.fetch.render_mode import wants_render
from crawlers.fetch.rendering import BrowserCrashedError, RenderFailedError, RenderTimeout
from crawlers.fetch.retry import (
    PROXY_EXCLUDE_META,
    ROTATED_PROXY_META,
    BlockRetryMiddleware,
    PageBlocked,
    backoff_delay,
)
from crawlers.profiles import SiteProfile
from standins.demo_site.behaviours import _CAPTCHA_PAGE, _FORBIDDEN_PAGE

PROXIES = ["http://alice:s3cret@10.0.0.1:8000", "http://10.0.0.2:8000", "10.0.0.3:9000"]
PRODUCT_PAGE = "<html><head><title>Kettle</title></head><body>" + "<p>Steel kettle.</p>" * 200


def crawler_with(settings: dict[str, Any] | None = None, spidercls: type = Spider) -> Crawler:
    # The platform's add-on, as `scrapy crawl` has it: its defaults (crawlers/defaults.py)
    # and components.
    merged = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}, "RETRY_BACKOFF_BASE": 0}
    crawler = get_crawler(spidercls, {**merged, **(settings or {})})
    crawler.spider = spidercls.from_crawler(crawler, name="unit")
    return crawler


def response(body: str, status: int = 200, url: str = "http://site.test/p/1", **kw: Any) -> Any:
    return HtmlResponse(url, status=status, body=body.encode(), encoding="utf-8", **kw)


# -- credentials -----------------------------------------------------------------------


def test_proxy_urls_split_as_scrapys_proxy_middleware_splits_them() -> None:
    # The last '@' ends the credentials, which stay percent-encoded; no path, no scheme.
    assert split_proxy("http://a:p@ss@h:5") == ("http", "a", "p@ss", "h:5")
    assert split_proxy("https://a:p%40ss@h:4/") == ("https", "a", "p%40ss", "h:4")
    assert split_proxy("http://a@h:3") == ("http", "a", None, "h:3")
    assert split_proxy("http://a:@h:6") == ("http", "a", "", "h:6")
    assert split_proxy(" h:2 ") == ("http", None, None, "h:2")
    assert split_proxy("socks5://u:v@[::1]:7") == ("socks5", "u", "v", "[::1]:7")


def test_proxy_names_never_carry_credentials() -> None:
    assert proxy_id(PROXIES[0]) == "10.0.0.1:8000"
    assert proxy_id("10.0.0.3:9000") == "10.0.0.3:9000"
    assert proxy_id(None) == "direct"
    assert redact("via http://alice:s3cret@10.0.0.1:8000/x and https://b@h") == (
        "via http://***@10.0.0.1:8000/x and https://***@h"
    )
    assert proxy_for_playwright(PROXIES[0]) == {
        "server": "http://10.0.0.1:8000",
        "username": "alice",
        "password": "s3cret",
    }
    assert proxy_for_playwright("10.0.0.3:9000") == {"server": "http://10.0.0.3:9000"}
    tag = credential_tag("alice", "s3cret")
    assert len(tag) == 8 and "s3cret" not in tag and tag != credential_tag("bob", "s3cret")


def test_the_log_filter_scrubs_messages_and_exceptions() -> None:
    record = logging.LogRecord(
        "rotating_proxies.expire",
        logging.DEBUG,
        __file__,
        1,
        "Proxy <%s> is DEAD",
        (PROXIES[0],),
        None,
    )
    assert RedactingFilter().filter(record)
    assert record.getMessage() == "Proxy <http://***@10.0.0.1:8000> is DEAD"
    try:
        raise ValueError(f"cannot reach {PROXIES[0]}")
    except ValueError as exc:
        failed = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "boom", (), (ValueError, exc, None)
        )
    RedactingFilter().filter(failed)
    assert failed.exc_text is not None and "s3cret" not in failed.exc_text


# -- verdicts, backoff ------------------------------------------------------------------


def test_reason_slugs_are_stable_stat_names() -> None:
    rules = ResponseClassifier(crawler_with()).rules
    captcha = classify(200, {}, _CAPTCHA_PAGE, rules=rules)
    forbidden = classify(403, {}, _FORBIDDEN_PAGE, rules=rules)
    throttled = classify(429, {"Retry-After": "3"}, "", rules=rules)
    assert [reason_slug(v) for v in (captcha, forbidden, throttled)] == [
        "datadome_captcha",
        "access_denied",
        "http_429",
    ]


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    rng = random.Random(1)
    delays = [[backoff_delay(n, 0.5, 4.0, rng) for _ in range(200)] for n in (1, 2, 3, 4, 5)]
    for n, series in enumerate(delays, start=1):
        ceiling = min(4.0, 0.5 * 2 ** (n - 1))
        assert ceiling / 2 <= min(series) and max(series) <= ceiling
        assert len(set(series)) > 150  # jittered, not a fixed schedule
    assert backoff_delay(3, 0, 10) == 0.0


def test_misdeclared_cp1252_is_recognised_and_real_utf8_is_not() -> None:
    text = "Caf\u00e9 kettle, 20\u00b0C, 12 \u20ac"
    assert misdeclared_cp1252(text.encode("cp1252"))
    assert not misdeclared_cp1252(text.encode("utf-8"))
    # Mostly UTF-8 with one broken byte: still UTF-8.
    assert not misdeclared_cp1252(text.encode("utf-8") + b"\xff")
    crawler = crawler_with()
    middleware = EncodingRepairMiddleware(crawler)
    bad = TextResponse(
        "http://site.test/p",
        body=text.encode("cp1252"),
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    fixed = middleware.process_response(Request(bad.url), bad)
    assert isinstance(fixed, TextResponse) and fixed.text == text
    assert crawler.stats.get_value("responses/encoding_repaired") == 1


def test_render_modes() -> None:
    page, api = Request("http://s/p/1"), Request("http://s/api/1", meta={"render": False})
    wanted = Request("http://s/p/2", meta={"render": True})
    robots = Request("http://s/robots.txt")
    assert [wants_render("never", r) for r in (page, api, wanted)] == [False, False, False]
    assert [wants_render("always", r) for r in (page, api, wanted, robots)] == [
        True,
        False,
        True,
        False,
    ]
    assert [wants_render("per_request", r) for r in (page, api, wanted)] == [False, False, True]


# -- the block/retry middleware ------------------------------------------------------------


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_block_pages_are_retried_through_another_proxy_then_dropped() -> None:
    crawler = crawler_with({"BLOCK_RETRY_TIMES": 2})
    middleware = BlockRetryMiddleware.from_crawler(crawler)
    request = Request("http://site.test/p/1", meta={"proxy": PROXIES[0], ROTATED_PROXY_META: True})
    request.headers[b"Proxy-Authorization"] = b"Basic YWxpY2U6czNjcmV0"
    first = run(middleware.process_response(request, response(_CAPTCHA_PAGE, request=request)))
    assert isinstance(first, Request)
    assert first.meta[PROXY_EXCLUDE_META] == ["10.0.0.1:8000"]
    # The retry is a clean slate: no old proxy, no credentials to be stored in a queue.
    assert "proxy" not in first.meta and b"Proxy-Authorization" not in first.headers
    first.meta["proxy"] = PROXIES[1]
    second = run(middleware.process_response(first, response(_FORBIDDEN_PAGE, 403, request=first)))
    assert second.meta[PROXY_EXCLUDE_META] == ["10.0.0.1:8000", "10.0.0.2:8000"]
    blocked = response(_CAPTCHA_PAGE, request=second)
    with pytest.raises(PageBlocked) as raised:
        run(middleware.process_response(second, blocked))
    assert raised.value.response is blocked and raised.value.verdict.kind == "captcha"
    stats = crawler.stats.get_stats()
    assert stats["responses/classified"] == 3 and stats["blocks/total"] == 3
    assert (stats["blocks/captcha"], stats["blocks/blocked"]) == (2, 1)
    assert stats["fetch/retry/captcha"] == 1 and stats["fetch/retry/blocked"] == 1
    assert stats["fetch/gave_up/captcha"] == 1
    assert stats["blocks/rate"] == 1.0


def test_ok_pages_pass_errors_follow_scrapys_retry_codes() -> None:
    crawler = crawler_with()
    middleware = BlockRetryMiddleware.from_crawler(crawler)
    request = Request("http://site.test/p/1")
    page = response(PRODUCT_PAGE, request=request)
    assert run(middleware.process_response(request, page)) is page
    missing = response(PRODUCT_PAGE, 404, request=request)
    assert run(middleware.process_response(request, missing)) is missing
    retried = run(middleware.process_response(request, response("oops", 503, request=request)))
    assert isinstance(retried, Request) and retried.meta["retry_times"] == 1
    failed = run(middleware.process_exception(request, DownloadConnectionRefusedError()))
    assert isinstance(failed, Request)
    assert run(middleware.process_exception(request, ValueError("a bug"))) is None
    stats = crawler.stats.get_stats()
    assert stats["responses/ok"] == 1 and stats["responses/error"] == 2
    assert stats["responses/error_status/503"] == 1 and "blocks/total" not in stats
    assert stats["fetch/retry/error"] == 1 and stats["fetch/retry/network"] == 1


def test_a_429_retry_after_is_honoured_up_to_the_cap() -> None:
    crawler = crawler_with({"RETRY_BACKOFF_BASE": 0.001, "RETRY_BACKOFF_MAX": 0.2})
    middleware = BlockRetryMiddleware.from_crawler(crawler)
    request = Request("http://site.test/p/1")
    throttled = response("slow down", 429, request=request, headers={"Retry-After": "60"})
    run(middleware.process_response(request, throttled))
    assert crawler.stats.get_value("fetch/backoff_ms") == 200


# -- proxies -------------------------------------------------------------------------------


def test_rotating_proxies_are_ours_without_deprecation_warnings() -> None:
    crawler = crawler_with({"ROTATING_PROXY_LIST": PROXIES})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager = DownloaderMiddlewareManager.from_crawler(crawler)
    names = [type(m).__name__ for m in manager.middlewares]
    assert {"RotatingProxies", "BanDetection", "BlockRetryMiddleware"} <= set(names)
    assert "RetryMiddleware" not in names
    assert [str(w.message) for w in caught if "spider argument" in str(w.message)] == []


def test_proxies_rotate_with_a_slot_per_proxy_and_avoid_failed_ones() -> None:
    crawler = crawler_with({"ROTATING_PROXY_LIST": PROXIES})
    middleware = RotatingProxies.from_crawler(crawler)
    request = Request(
        "http://site.test/p/1", meta={PROXY_EXCLUDE_META: ["10.0.0.1:8000", "10.0.0.2:8000"]}
    )
    for _ in range(20):
        retry = request.replace(meta=dict(request.meta))
        middleware.process_request(retry)
        assert retry.meta["download_slot"] == "10.0.0.3:9000"
        assert retry.meta["proxy"] == "http://10.0.0.3:9000"
    own = Request("http://site.test/", meta={"proxy": None})
    middleware.process_request(own)
    assert own.meta["proxy"] is None  # a spider's own choice (here: direct) stands
    stats = crawler.stats.get_stats()
    assert stats["proxies/total"] == 3 and stats["proxies/requests/10.0.0.3:9000"] == 20
    assert not [name for name in stats if "s3cret" in name or "alice" in name]


def test_a_ban_marks_the_proxy_dead_and_an_ok_page_marks_it_good() -> None:
    crawler = crawler_with({"ROTATING_PROXY_LIST": PROXIES})
    rotating = RotatingProxies.from_crawler(crawler)
    bans = BanDetection.from_crawler(crawler)
    assert isinstance(bans.policy, BlockBanPolicy)  # ROTATING_PROXY_BAN_POLICY, from defaults
    request = Request("http://site.test/p/1")
    rotating.process_request(request)
    captcha = bans.process_response(request, response(_CAPTCHA_PAGE, request=request))
    assert request.meta[PROXY_BAN_META] is True
    rotating.process_response(request, captcha)
    banned = proxy_id(request.meta["proxy"])
    assert crawler.stats.get_value(f"proxies/bans/{banned}") == 1
    assert crawler.stats.get_value("proxies/dead") == 1
    assert crawler.stats.get_value("bans/status/200") == 1
    good = Request("http://site.test/p/2")
    rotating.process_request(good)
    assert proxy_id(good.meta["proxy"]) != banned
    page = bans.process_response(good, response(PRODUCT_PAGE, request=good))
    assert good.meta[PROXY_BAN_META] is False
    rotating.process_response(good, page)
    assert crawler.stats.get_value("proxies/good") == 1
    refused = Request("http://site.test/p/3")
    rotating.process_request(refused)
    bans.process_exception(refused, DownloadConnectionRefusedError())
    rotating.process_exception(refused, DownloadConnectionRefusedError())
    assert crawler.stats.get_value("proxies/marked_dead") == 2
    # Only our own meta keys: none of the library's private ones (_rotating_proxy, _ban).
    assert [key for r in (request, good, refused) for key in r.meta if key.startswith("_")] == []


def test_ban_policy_is_the_block_classifier() -> None:
    crawler = crawler_with({"ROTATING_PROXY_LIST": PROXIES})
    policy = BlockBanPolicy.from_crawler(crawler)
    request = Request("http://site.test/p/1")
    assert policy.response_is_ban(request, response(_CAPTCHA_PAGE)) is True
    assert policy.response_is_ban(request, response(_FORBIDDEN_PAGE, 403)) is True
    assert policy.response_is_ban(request, response("", 200)) is True  # empty body
    assert policy.response_is_ban(request, response(PRODUCT_PAGE)) is False
    assert policy.response_is_ban(request, response(PRODUCT_PAGE, 404)) is None
    assert policy.exception_is_ban(request, DownloadConnectionRefusedError()) is True
    assert policy.exception_is_ban(request, RenderTimeout()) is True
    assert policy.exception_is_ban(request, BrowserCrashedError()) is None
    proxy_error = RenderFailedError("net::ERR_PROXY_CONNECTION_FAILED", network=True)
    assert policy.exception_is_ban(request, proxy_error) is True
    assert (
        policy.exception_is_ban(request, RenderFailedError("Target closed", network=False)) is None
    )


def test_no_proxies_means_off_unless_the_site_needs_them() -> None:
    with pytest.raises(NotConfigured):
        RotatingProxies.from_crawler(crawler_with({"ROTATING_PROXY_LIST": []}))

    class NeedsProxies(Spider):
        name = "needy"

        @classmethod
        def load_profile(cls) -> SiteProfile:
            return SiteProfile.from_dict(
                "needy", {"item_type": "x", "base_url": "http://x", "needs_proxies": True}
            )

    with pytest.raises(ProxyConfigError, match="needs proxies"):
        RotatingProxies.from_crawler(crawler_with({"ROTATING_PROXY_LIST": []}, NeedsProxies))


def test_the_http_cache_never_stores_block_pages() -> None:
    crawler = crawler_with()
    policy = BlockAwareCachePolicy(crawler.settings)
    request = Request("http://site.test/p/1")
    assert policy.should_cache_response(response(PRODUCT_PAGE), request)
    assert not policy.should_cache_response(response(_CAPTCHA_PAGE), request)
    assert not policy.should_cache_response(response(_FORBIDDEN_PAGE, 403), request)


def test_site_block_markers_reach_the_classifier() -> None:
    markers = ["el acceso se ha bloqueado"]
    crawler = crawler_with({"BLOCK_MARKERS": markers})
    classifier = ResponseClassifier.of(crawler)
    page: Response = response(
        "<html><body>" + "x " * 900 + "El acceso se ha bloqueado</body></html>"
    )
    assert classifier.verdict(Request(page.url), page).kind == "blocked"
    assert classifier.verdict(Request(page.url), page).kind == "blocked"
    assert crawler.stats.get_value("responses/classified") == 1  # once per response


def test_launch_flags_keep_playwrights_disabled_features() -> None:
    """Chromium keeps only the last --disable-features switch: ours must carry Playwright's.

    Reads the list from the installed Playwright driver, so an upgrade that changes it
    fails here instead of silently re-enabling what Playwright turns off.
    """
    bundle = Path(playwright.__file__).parent / "driver/package/lib/coreBundle.js"
    source = bundle.read_text(encoding="utf-8")
    block = re.search(r"disabledFeatures = \[(.*?)\]\.filter", source, re.S)
    assert block, "Playwright's chromiumSwitches moved; re-read its disabled features"
    theirs = re.findall(r'^\s*"([A-Za-z]+)"', block.group(1), re.M)
    assert len(theirs) >= 10
    switches = [
        a for a in defaults.PLAYWRIGHT_LAUNCH_OPTIONS["args"] if a.startswith("--disable-features=")
    ]
    assert len(switches) == 1
    ours = switches[0].split("=", 1)[1].split(",")
    assert set(theirs) <= set(ours)
    assert {"SpareRendererForSitePerProcess", "RenderDocument"} <= set(ours)
