"""The browser identity: brands, target (pure), the middleware on a crawler's
settings, and the real Chromium the platform launches, whose request heads the
identity's headers must equal (a Chromium upgrade that changes them fails here)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from scrapy import Request
from scrapy.settings import Settings, default_settings

from core.config import ConfigurationError
from crawlers import defaults
from crawlers.fetch.contexts import context_options, launch_options
from crawlers.fetch.headers import (
    ACCEPT_ENCODING,
    browser_headers,
)
from crawlers.fetch.identity import (
    IDENTITY_META,
    BrowserIdentity,
    IdentityMiddleware,
    check_identity,
    chromium_path,
    chromium_version,
    crawl_identity,
    grease_brands,
    impersonate_target,
    installed_targets,
)
from crawlers.profiles import SiteProfile, profile_sites
from crawlers.scaffold.sample import sample_site
from fingerprints.sampling.fetch import fetch_sample
from harness.demo_site import DemoSite
from tests.crawlers.fetch.capture import Answer, CaptureServer, Head
from tests.crawlers.fetch.chromium import TARGETS, UA, identity, platform_crawler, sent
from tests.crawlers.fetch.support import run_crawl

# -- the identity (pure) --------------------------------------------------------------------


def test_brands_follow_chromiums_grease_algorithm() -> None:
    assert grease_brands(156) == (("Not:A-Brand", "8"), ("Chromium", "156"))
    # Public Chrome releases' greasey brands (their list also names Google Chrome).
    assert grease_brands(120)[0] == ("Not_A Brand", "8")
    assert grease_brands(124)[0] == ("Not-A.Brand", "99")
    assert grease_brands(131)[1] == ("Not_A Brand", "24")  # odd major: Chromium first
    assert grease_brands(131)[0] == ("Chromium", "131")


def test_the_target_is_the_newest_desktop_chrome_not_newer_than_the_browser() -> None:
    assert impersonate_target(156, TARGETS) == "chrome152"
    assert impersonate_target(152, TARGETS) == "chrome152"
    assert impersonate_target(149, TARGETS) == "chrome146"
    assert impersonate_target(140, TARGETS) == "chrome131"  # not 133a, not _android
    with pytest.raises(ConfigurationError, match="no Chrome target for Chromium 120"):
        impersonate_target(120, TARGETS)
    # The installed curl_cffi (0.17.0): its newest Chrome is 152, Chromium 156's TLS.
    assert "chrome152" in installed_targets()
    assert impersonate_target(156) == "chrome152"


def test_an_identity_is_the_headful_chromium_of_its_version() -> None:
    me = identity("es-ES,es;q=0.9")
    assert me.user_agent == UA and "Headless" not in me.user_agent
    assert (me.browser, me.major, me.platform, me.impersonate) == (
        "Chromium",
        156,
        "Linux",
        "chrome152",
    )
    assert me.sec_ch_ua == '"Not:A-Brand";v="8", "Chromium";v="156"'
    assert me.sec_ch_ua_platform == '"Linux"'
    assert me.locale == "es-ES"
    assert me.languages == ["es-ES", "es"]


def test_an_identity_survives_a_json_round_trip() -> None:
    me = identity()
    stored = json.dumps(me.to_dict())  # what a session in Redis holds
    assert BrowserIdentity.from_dict(json.loads(stored)) == me


# -- the installed Chromium ---------------------------------------------------------------------


def test_the_version_comes_from_the_installed_chromium_or_says_what_to_do() -> None:
    settings = Settings({"PLAYWRIGHT_LAUNCH_OPTIONS": defaults.PLAYWRIGHT_LAUNCH_OPTIONS})
    version = chromium_version(chromium_path(settings))
    assert version.split(".")[0].isdigit() and version.count(".") == 3
    with pytest.raises(ConfigurationError) as missing:
        chromium_version("/nonexistent/chromium")
    message = missing.value.message
    assert "\n" not in message and "BROWSER_VERSION" in message and "CHROMIUM_PATH" in message
    with pytest.raises(ConfigurationError, match="none was found"):
        chromium_version(None)
    # Without a Chromium, BROWSER_VERSION presents that version.
    fallback = Settings(
        {
            "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": "/nonexistent/chromium"},
            "BROWSER_VERSION": "150.0.7000.1",
            "BROWSER_ACCEPT_LANGUAGE": "en-US,en;q=0.9",
        }
    )
    assert crawl_identity(fallback).user_agent.endswith("Chrome/150.0.0.0 Safari/537.36")
    assert crawl_identity(fallback).impersonate == "chrome150"
    with pytest.raises(ConfigurationError, match="FETCH_IDENTITY='firefox'"):
        check_identity(Settings({"FETCH_IDENTITY": "firefox"}))


# -- the middleware ------------------------------------------------------------------------------


def test_the_middleware_gives_plain_requests_the_identitys_headers() -> None:
    crawler = platform_crawler()
    middleware = IdentityMiddleware.from_crawler(crawler)
    assert crawler.settings["ROBOTSTXT_USER_AGENT"] == "scraping-platform"
    assert crawler.settings.getdict("DEFAULT_REQUEST_HEADERS") == {}
    me = crawl_identity(crawler.settings)
    request = Request(
        "https://shop.example/p/1",
        headers={"Referer": "https://shop.example/", "Cookie": "sid=1"},
    )
    middleware.process_request(request)
    sent = [(k.decode(), v.decode()) for k, vs in request.headers.items() for v in vs]
    expected = browser_headers(
        me,
        method="GET",
        url=request.url,
        headers=[("Referer", "https://shop.example/"), ("Cookie", "sid=1")],
    )
    # Scrapy's Headers normalise names (the handler spells them as Chromium does).
    assert [(k.lower(), v) for k, v in sent] == [(k.lower(), v) for k, v in expected]

    # A session's own identity (a dict once it went through a disk queue) wins.
    other = BrowserIdentity.chromium("150.0.1.2", accept_language="fr-FR,fr;q=0.9")
    session = Request("https://shop.example/", meta={IDENTITY_META: other.to_dict()})
    middleware.process_request(session)
    assert session.headers[b"Accept-Language"] == b"fr-FR,fr;q=0.9"
    assert b"Chrome/150.0.0.0" in session.headers[b"User-Agent"]
    # Rendered requests keep Chromium's own headers: nothing is added.
    rendered = Request("https://shop.example/", meta={"playwright": True})
    middleware.process_request(rendered)
    assert not rendered.headers


def test_the_crawler_identity_announces_the_platform_as_before() -> None:
    crawler = platform_crawler({"FETCH_IDENTITY": "crawler"})
    middleware = IdentityMiddleware.from_crawler(crawler)
    request = Request("https://shop.example/")
    middleware.process_request(request)
    assert request.headers[b"User-Agent"] == defaults.USER_AGENT.encode()
    for name, value in default_settings.DEFAULT_REQUEST_HEADERS.items():
        assert request.headers[name] == value.encode()


def test_tls_verification_is_one_switch_for_every_handler() -> None:
    assert not platform_crawler().settings.getbool("DOWNLOAD_VERIFY_CERTIFICATES")
    verified = platform_crawler({"FETCH_TLS_VERIFY": True})
    assert verified.settings.getbool("DOWNLOAD_VERIFY_CERTIFICATES")
    assert context_options(UA, verify=True) == {"user_agent": UA, "ignore_https_errors": False}


def test_robots_rules_are_matched_for_the_bot_token_whatever_the_identity() -> None:
    from protego import Protego

    robots = Protego.parse("User-agent: scraping-platform\nDisallow: /private\n")
    token = defaults.ROBOTSTXT_USER_AGENT
    assert not robots.can_fetch("https://shop.example/private", token)
    assert robots.can_fetch("https://shop.example/private", identity().user_agent)
    assert defaults.USER_AGENT.startswith(token + "/")


# -- the real Chromium ---------------------------------------------------------------------------


def market_languages() -> list[str]:
    """The default, a market's, and every site profile's own BROWSER_ACCEPT_LANGUAGE."""
    found = {
        defaults.BROWSER_ACCEPT_LANGUAGE,
        "es-ES,es;q=0.9",
        "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7",
    }
    for site in profile_sites():
        value = SiteProfile.load(site).scrapy_settings().get("BROWSER_ACCEPT_LANGUAGE")
        if value:
            found.add(str(value))
    return sorted(found)


@pytest.mark.integration
@pytest.mark.parametrize("accept_language", market_languages())
def test_chromium_sends_the_configured_languages_as_the_identity_does(
    accept_language: str,
) -> None:
    """BROWSER_ACCEPT_LANGUAGE must be what Chromium sends for its tags (its expansion
    of a tag list is its own): a value it would send otherwise fails here."""
    me = identity(accept_language)

    async def visit(site: CaptureServer) -> list[str]:
        options = launch_options(dict(defaults.PLAYWRIGHT_LAUNCH_OPTIONS), me)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(**options)
            context = await browser.new_context(**context_options(me.user_agent, verify=False))
            page = await context.new_page()
            await page.goto(site.url + "/")
            languages: list[str] = await page.evaluate("navigator.languages")
            await browser.close()
        return languages

    with CaptureServer() as site:
        languages = asyncio.run(visit(site))
        head = site.heads[0]
    assert head.get("Accept-Language") == accept_language
    assert sent(head)[-1] == ("Accept-Language", accept_language)  # in its place: last
    assert languages[0] == me.locale
    assert head.get("Accept-Encoding") == ACCEPT_ENCODING


# -- a crawl of the demo shop ---------------------------------------------------------------------

# What no request of the platform may say, in any header name or value.
TELLS = ("scrapy", "python", "headlesschrome", "curl", "playwright")


def tells(entry: dict[str, Any]) -> list[str]:
    return [
        f"{name}: {value}"
        for name, value in entry["headers"]
        if any(word in f"{name} {value}".lower() for word in TELLS)
    ]


def header(entry: dict[str, Any], name: str) -> str | None:
    return next((v for n, v in entry["headers"] if n.lower() == name.lower()), None)


@pytest.mark.parametrize("render_mode", ["never", "always"])
def test_no_request_of_a_crawl_says_scrapy_python_or_headless(
    demo_site: DemoSite, tmp_path: Path, render_mode: str
) -> None:
    """The default settings, plain and rendered (RENDER_MODE=always, images, fonts and
    media loaded too): robots.txt, pages, the spider's API requests and every
    sub-resource Chromium fetched present the same browser."""
    demo_site.control(log_headers=True)
    settings: dict[str, object] = {"MAX_LISTING_PAGES": 1, "CLOSESPIDER_ITEMCOUNT": 12}
    if render_mode == "always":
        settings |= {"RENDER_MODE": "always", "RENDER_ABORT_RESOURCE_TYPES": ""}
    result = run_crawl(tmp_path, base_url=demo_site.url, settings=settings, timeout=240)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) >= 12

    me = crawl_identity(platform_crawler().settings)
    log = demo_site.access_log()
    assert log[0]["path"] == "/robots.txt"
    assert {entry["path"].split("/")[1] for entry in log} >= {"robots.txt", "category", "product"}
    assert [(entry["path"], tells(entry)) for entry in log if tells(entry)] == []
    assert {entry["user_agent"] for entry in log} == {me.user_agent}
    assert {header(entry, "sec-ch-ua") for entry in log} == {me.sec_ch_ua}
    assert {header(entry, "Accept-Language") for entry in log} == {me.accept_language}
    dests = {header(entry, "Sec-Fetch-Dest") for entry in log}
    if render_mode == "always":
        # The pages' own images and review fetches came from Chromium. (The spider's
        # request of the reviews API is rendered too, a navigation: the demo spider does
        # not mark it render=False.)
        assert {"document", "image", "empty"} <= dests
        assert result.stat("render/ok") >= 12
        assert result.stat("render/accept_language_mismatch") == 0
    else:
        # The spider's reviews API requests (Accept: application/json) go as a script's.
        api = [entry for entry in log if entry["path"].startswith("/api/")]
        assert api and {header(entry, "Sec-Fetch-Mode") for entry in api} == {"cors"}
        assert dests == {"document", "empty"}
        assert result.stat("impersonate/sessions_opened") == 1


def robots_site(head: Head) -> Answer:
    if head.target == "/robots.txt":
        robots = b"User-agent: scraping-platform\nDisallow: /private\n\nUser-agent: *\nAllow: /\n"
        return Answer(headers=[("Content-Type", "text/plain")], body=robots)
    links = b'<a href="/private">private</a> <a href="/public">public</a>'
    filler = b"<p>filler text so the page is not a near-empty block answer.</p>" * 20
    return Answer(body=b"<html><head><title>t</title></head><body>" + links + filler + b"</body>")


def test_robots_rules_for_the_bot_token_hold_behind_the_browser_identity(
    tmp_path: Path,
) -> None:
    with CaptureServer(robots_site) as site:
        spider = Path(__file__).with_name("robotless_spider.py")
        result = run_crawl(tmp_path, base_url=site.url, spider_file=spider, timeout=120)
        heads = list(site.heads)
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(head.target for head in heads) == ["/", "/public", "/robots.txt"]
    assert result.stat("robotstxt/forbidden") == 1
    me = crawl_identity(platform_crawler().settings)
    robots = next(head for head in heads if head.target == "/robots.txt")
    assert robots.get("User-Agent") == me.user_agent
    assert robots.get("Sec-Fetch-Mode") == "navigate"


def test_the_structure_gates_and_the_scaffolds_samplers_fetch_as_the_browser(
    demo_site: DemoSite, tmp_path: Path
) -> None:
    """The HTTP clients beside the crawls that reach a site (the gate's sampler, the
    scaffold's sample) are Scrapy crawls with the platform's add-on: the same identity."""
    demo_site.control(log_headers=True)
    product = demo_site.catalog().products[0].url
    pages = fetch_sample(
        "demo", {"home": ["/"], "product": [product]}, base_url=demo_site.url, timeout=120
    )
    assert [page.status for page in pages] == [200, 200]
    sample_site(demo_site.url + "/", 3, out=tmp_path / "sample.jsonl", timeout=300)
    log = demo_site.access_log()
    assert len(log) >= 5
    assert [(entry["path"], tells(entry)) for entry in log if tells(entry)] == []
    me = crawl_identity(platform_crawler().settings)
    assert {entry["user_agent"] for entry in log} == {me.user_agent}
