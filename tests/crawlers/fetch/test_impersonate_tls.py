"""The plain-request handler's TLS and HTTP/2 against real servers on loopback: certificate
verification, HTTP/2 only where the server offers it, the HTTP/2 request beside the real
Chromium's, a hung proxy, and the TLS ClientHello beside the installed Chromium's."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright
from scrapy import Request
from scrapy.exceptions import DownloadFailedError
from scrapy.http import Response

from crawlers import defaults
from crawlers.fetch.contexts import context_options, launch_options
from crawlers.fetch.identity import identity_for
from harness.demo_site import DemoSite
from harness.loopback_proxy import LoopbackProxy
from tests.crawlers.fetch.capture import Answer, CaptureServer, HelloServer, self_signed_tls
from tests.crawlers.fetch.plain_client import Client, expected_wire, run
from tests.crawlers.fetch.support import expected_products, run_crawl


@pytest.mark.integration
def test_certificates_are_verified_only_when_asked(tls_site: CaptureServer) -> None:
    async def scenario(client: Client) -> Response:
        return await client.fetch(Request(tls_site.url + "/"))

    assert run(scenario).status == 200  # FETCH_TLS_VERIFY false: Scrapy's own default
    with pytest.raises(DownloadFailedError):
        run(scenario, {"FETCH_TLS_VERIFY": True})


@pytest.mark.integration
def test_the_http2_priority_header_never_goes_over_http1(tls_site: CaptureServer) -> None:
    async def scenario(client: Client) -> str | None:
        return (await client.fetch(Request(tls_site.url + "/"))).protocol

    assert run(scenario) == "HTTP/1.1"  # the server's ALPN offers no h2
    assert tls_site.heads[0].get("priority") is None
    assert tls_site.heads[0].headers == expected_wire(Client(), tls_site.url + "/", [])


@pytest.mark.integration
def test_over_http2_the_handler_sends_what_chromium_sends(tmp_path: Path) -> None:
    page = b"<html><body><script>function get(u, o) { return fetch(u, o) }</script></body></html>"
    with CaptureServer(
        lambda head: Answer(body=page), tls=self_signed_tls(tmp_path, http2=True)
    ) as site:
        client = Client()
        me = identity_for(client.crawler)

        async def chromium() -> None:
            options = launch_options(dict(defaults.PLAYWRIGHT_LAUNCH_OPTIONS), me)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(**options)
                context = await browser.new_context(**context_options(me.user_agent, verify=False))
                page = await context.new_page()
                await page.goto(site.url + "/chromium")
                options_json = {"headers": {"Accept": "application/json"}}
                await page.evaluate(
                    "([u, o]) => get(u, o)", [site.url + "/api/chromium", options_json]
                )
                await browser.close()

        async def scenario(client: Client) -> list[Response]:
            document = await client.fetch(Request(site.url + "/curl"))
            api = await client.fetch(
                Request(
                    site.url + "/api/curl",
                    headers={"Accept": "application/json", "Referer": site.url + "/chromium"},
                )
            )
            return [document, api]

        asyncio.run(chromium())
        responses = run(scenario)
        heads = {head.target: head for head in site.heads}
    assert [response.protocol for response in responses] == ["h2", "h2"]
    for ours, theirs in (("/curl", "/chromium"), ("/api/curl", "/api/chromium")):
        assert heads[ours].protocol == heads[theirs].protocol == "h2"
        renamed = [(name, value.replace(ours, theirs)) for name, value in heads[ours].headers]
        assert renamed == heads[theirs].headers, ours


def test_a_hung_proxy_times_out_and_the_page_is_fetched_through_another(
    start_site: Callable[..., DemoSite],
    start_proxy: Callable[..., LoopbackProxy],
    tmp_path: Path,
) -> None:
    """DOWNLOAD_TIMEOUT holds on curl's requests; the timeout is retried and bans the
    proxy, as Twisted's timeouts were."""
    site = start_site(products=12)
    hung, good = start_proxy("hung", mode="hang"), start_proxy("good")
    result = run_crawl(
        tmp_path,
        base_url=site.url,
        proxies=[hung.url, good.url],
        settings={"DOWNLOAD_TIMEOUT": 2, "RETRY_BACKOFF_BASE": 0.05},
        timeout=240,
    )
    assert result.returncode == 0, result.log[-3000:]
    expected = expected_products(site.catalog(), site.url)
    assert sorted(item["sku"] for item in result.items) == sorted(expected)
    timeout = "scrapy.exceptions.DownloadTimeoutError"
    assert result.stat(f"retry/reason_count/{timeout}") >= 1
    assert result.stat(f"bans/error/{timeout}") >= 1
    assert result.stat(f"proxies/bans/127.0.0.1:{hung.port}") >= 1
    assert result.stat("fetch/retry/network") >= 1


@pytest.mark.integration
def test_the_tls_client_hello_is_the_installed_chromiums() -> None:
    """The curl_cffi target's ClientHello offers what the installed Chromium's does: the
    same cipher suites in order, extension set (Chrome permutes the order), supported
    groups, signature algorithms and ALPN (GREASE aside). A Chromium upgrade that changes
    them fails here: pin a curl-cffi with a closer Chrome target (docs/fetching.md)."""
    with HelloServer() as server:

        async def chromium() -> None:
            me = identity_for(Client().crawler)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    **launch_options(dict(defaults.PLAYWRIGHT_LAUNCH_OPTIONS), me)
                )
                page = await browser.new_page()
                with contextlib.suppress(PlaywrightError):  # the server hangs up
                    await page.goto(server.url + "/")
                await browser.close()

        async def curl(client: Client) -> None:
            with pytest.raises(DownloadFailedError):
                await client.fetch(Request(server.url + "/"))

        asyncio.run(chromium())
        theirs = server.hellos[0]
        run(curl)
        ours = server.hellos[-1]
    assert ours.ciphers == theirs.ciphers
    assert ours.extensions == theirs.extensions
    assert ours.groups == theirs.groups
    assert ours.signature_algorithms == theirs.signature_algorithms
    assert ours.alpn == theirs.alpn == ("h2", "http/1.1")
