"""The identity the fetch tests present (Chromium 156 with a fixed curl_cffi target list),
a crawler with the platform's add-on, and the real Chromium's request heads as the
platform launches it, for the tests to compare the identity's headers with."""

from __future__ import annotations

from typing import Any

from playwright.async_api import async_playwright
from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawlers import defaults
from crawlers.fetch.contexts import context_options, launch_options
from crawlers.fetch.identity import BrowserIdentity
from tests.crawlers.fetch.capture import Answer, CaptureServer, Head

PLATFORM = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}}
TARGETS = (
    "chrome131",
    "chrome133a",
    "chrome142",
    "chrome146",
    "chrome150",
    "chrome152",
    "chrome152_macos",
    "chrome131_android",
    "edge101",
    "safari270",
)
UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Safari/537.36"
)


def identity(accept_language: str = "en-US,en;q=0.9") -> BrowserIdentity:
    return BrowserIdentity.chromium(
        "156.0.8078.114", accept_language=accept_language, targets=TARGETS
    )


def platform_crawler(settings: dict[str, Any] | None = None) -> Any:
    return get_crawler(Spider, {**PLATFORM, **(settings or {})})


PAGE = b"""<!doctype html><html><head><title>t</title></head><body>
<a id="next" href="/next">next</a>
<script>async function get(url, options) { return (await fetch(url, options)).text(); }</script>
</body></html>"""


def respond(head: Head) -> Answer:
    if head.target.startswith("/api"):
        return Answer(
            headers=[
                ("Content-Type", "application/json"),
                ("Access-Control-Allow-Origin", "*"),
                ("Access-Control-Allow-Headers", "*"),
            ],
            body=b"{}",
        )
    if head.target == "/validated":
        if head.get("If-None-Match"):
            return Answer(status=304, headers=[("ETag", '"v1"')], body=b"")
        return Answer(
            headers=[
                ("Content-Type", "text/html; charset=utf-8"),
                ("ETag", '"v1"'),
                ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
                ("Cache-Control", "no-cache"),
                ("Set-Cookie", "sid=1; Path=/"),
            ],
            body=PAGE,
        )
    return Answer(body=PAGE)


async def chromium_heads(
    me: BrowserIdentity, site: CaptureServer, other: CaptureServer
) -> dict[str, Any]:
    """Chromium launched and its context made as the platform does; a navigation typed
    in, a link followed, a script's fetches (same origin, same site, cross site, a POST),
    a reload with validators and a cookie."""
    options = launch_options(dict(defaults.PLAYWRIGHT_LAUNCH_OPTIONS), me)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**options)
        context = await browser.new_context(**context_options(me.user_agent, verify=False))
        page = await context.new_page()
        await page.goto(site.url + "/typed")
        found = await page.evaluate(
            "[navigator.webdriver, navigator.userAgent, navigator.languages,"
            " navigator.userAgentData.brands.map(b => [b.brand, b.version])]"
        )
        async with page.expect_navigation():
            await page.click("#next")
        json_accept = {"headers": {"Accept": "application/json"}}
        await page.evaluate("([u, o]) => get(u, o)", [site.url + "/api/json", json_accept])
        await page.evaluate("u => get(u)", site.url + "/api/any")
        post = {
            "method": "POST",
            "headers": {"Content-Type": "application/json", "Accept": "application/json"},
            "body": "{}",
        }
        await page.evaluate("([u, o]) => get(u, o)", [site.url + "/api/post", post])
        await page.evaluate("([u, o]) => get(u, o)", [other.url + "/api/samesite", json_accept])
        crosssite = other.url.replace("127.0.0.1", "localhost") + "/api/crosssite"
        await page.evaluate("([u, o]) => get(u, o)", [crosssite, json_accept])
        await page.goto(site.url + "/validated")
        await page.reload()
        await browser.close()
    return {
        "webdriver": found[0],
        "user_agent": found[1],
        "languages": found[2],
        "brands": [tuple(brand) for brand in found[3]],
    }


def sent(head: Head) -> list[tuple[str, str]]:
    """What the identity's headers are compared with: all but Host (curl's)."""
    return [(name, value) for name, value in head.headers if name != "Host"]


def only(server: CaptureServer, target: str, nth: int = 0) -> Head:
    return [head for head in server.heads if head.target.split("?")[0] == target][nth]
