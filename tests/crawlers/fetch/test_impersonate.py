"""The plain-request handler on curl_cffi, against real servers on loopback: what goes on
the wire (HTTP/1.1 and HTTP/2, beside the real Chromium's), connections, cookies,
decoding, size caps, errors, proxies with credentials (TLS and HTTP/2:
test_impersonate_tls.py)."""

from __future__ import annotations

import gzip
import logging
import time
from collections.abc import Callable

import brotli
import pytest
from curl_cffi import CurlECode
from scrapy import Request
from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from scrapy.http import Response
from scrapy.settings import default_settings
from scrapy.utils.misc import load_object

from crawlers.fetch.identity import SESSION_META
from crawlers.fetch.impersonate import (
    FLAG,
    ConnectionLostError,
    download_error,
)
from crawlers.fetch.proxies import BlockBanPolicy
from harness.base import free_port
from harness.demo_site import DemoSite
from harness.loopback_proxy import LoopbackProxy
from tests.crawlers.fetch.capture import (
    Answer,
    CaptureServer,
    Head,
)
from tests.crawlers.fetch.plain_client import Client, expected_wire, run, wire
from tests.crawlers.fetch.support import assert_no_secret

RETRY_EXCEPTIONS = tuple(
    load_object(path) if isinstance(path, str) else path
    for path in default_settings.RETRY_EXCEPTIONS
)
SECRET = "cu7l-s3cret"


# -- the wire, HTTP/1.1 ------------------------------------------------------------------------


@pytest.mark.integration
def test_plain_requests_go_out_exactly_as_the_identity_says() -> None:
    with CaptureServer() as site:

        async def scenario(client: Client) -> list[Response]:
            page = await client.fetch(Request(site.url + "/p/1"))
            api = await client.fetch(
                Request(
                    site.url + "/api/reviews",
                    headers={
                        "Accept": "application/json",
                        "Referer": site.url + "/p/1",
                        "Cookie": "sid=1",
                    },
                )
            )
            form = await client.fetch(
                Request(
                    site.url + "/search",
                    method="POST",
                    body=b"q=kettle",
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                )
            )
            raw = await client.fetch(Request(site.url + "/raw", method="POST", body=b"{}"))
            return [page, api, form, raw]

        page, api, form, raw = run(scenario)
        client = Client()
        heads = site.heads
    assert wire(heads[0]) == expected_wire(client, site.url + "/p/1", [])
    assert wire(heads[1]) == expected_wire(
        client,
        site.url + "/api/reviews",
        [("Accept", "application/json"), ("Referer", site.url + "/p/1"), ("Cookie", "sid=1")],
    )
    # A body: Content-Length third, as Chromium puts it; no Content-Type curl would add.
    form_wire = wire(heads[2])
    assert form_wire[:3] == [("Host", site.url[7:]), ("Connection", "keep-alive"),
                             ("Content-Length", "8")]  # fmt: skip
    assert [h for h in form_wire if h[0] != "Content-Length"] == expected_wire(
        client,
        site.url + "/search",
        [("Content-Type", "application/x-www-form-urlencoded")],
        "POST",
    )
    assert heads[2].body == b"q=kettle"
    assert "Content-Type" not in dict(wire(heads[3]))
    # One connection for all of them (keep-alive), as a browser.
    assert {head.connection for head in heads} == {1}

    assert page.status == 200 and b"<p>ok</p>" in page.body
    assert page.protocol == "HTTP/1.1"
    assert str(page.ip_address) == "127.0.0.1"
    assert page.flags == [FLAG]
    assert page.request is not None and page.request.meta["download_latency"] > 0
    assert api.status == form.status == raw.status == 200


@pytest.mark.integration
def test_sessions_keep_their_own_connections_within_a_bound() -> None:
    with CaptureServer() as site:

        async def scenario(client: Client) -> None:
            for session in ("a", "a", "b", "a"):
                await client.fetch(Request(site.url + "/", meta={SESSION_META: session}))
            assert client.stat("impersonate/sessions_opened") == 3  # a, b, a again
            assert client.stat("impersonate/sessions_evicted") == 2

        run(scenario, {"FETCH_MAX_SESSIONS": 1})
        connections = [head.connection for head in site.heads]
    assert connections[0] == connections[1] != connections[2] != connections[3]


@pytest.mark.integration
def test_curl_keeps_no_cookie_of_its_own() -> None:
    """curl_cffi turns curl's cookie engine on and keeps answers' cookies in its session
    jar; neither may send one: only the request's own Cookie header goes out."""

    def respond(head: Head) -> Answer:
        headers = [("Content-Type", "text/html")]
        if head.target == "/login":
            headers += [("Set-Cookie", "session=s3t; Path=/"), ("Set-Cookie", "b=2; Path=/")]
        return Answer(headers=headers)

    with CaptureServer(respond) as site:

        async def scenario(client: Client) -> Response:
            login = await client.fetch(Request(site.url + "/login"))
            await client.fetch(Request(site.url + "/after"))
            await client.fetch(Request(site.url + "/mine", headers={"Cookie": "mine=1"}))
            assert client.handler._sessions  # the same session served all three
            return login

        login = run(scenario)
        heads = {head.target: head for head in site.heads}
    # The answer still carries its cookies, for Scrapy's CookiesMiddleware to decide.
    assert login.headers.getlist(b"Set-Cookie") == [b"session=s3t; Path=/", b"b=2; Path=/"]
    assert heads["/after"].get("Cookie") is None
    assert [v for n, v in heads["/mine"].headers if n == "Cookie"] == ["mine=1"]


@pytest.mark.integration
def test_bodies_are_decoded_once() -> None:
    page = b"<html><body>" + b"<p>kettle</p>" * 500 + b"</body></html>"
    encoders = {"/gzip": ("gzip", gzip.compress), "/br": ("br", brotli.compress)}

    def respond(head: Head) -> Answer:
        name, encode = encoders[head.target]
        headers = [("Content-Type", "text/html"), ("Content-Encoding", name)]
        return Answer(headers=headers, body=encode(page))

    with CaptureServer(respond) as site:

        async def scenario(client: Client) -> list[Response]:
            return [await client.fetch(Request(site.url + path)) for path in encoders]

        responses = run(scenario)
    compression = HttpCompressionMiddleware.from_crawler(Client().crawler)
    for response in responses:
        assert response.body == page
        assert b"Content-Encoding" not in response.headers
        assert b"Content-Length" not in response.headers
        assert response.request is not None
        after = compression.process_response(response.request, response)
        assert after.body == page  # HttpCompressionMiddleware leaves it alone


@pytest.mark.integration
def test_a_body_over_the_size_cap_is_cut_and_fails_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = b"x" * (3 * 1024 * 1024)

    with CaptureServer(lambda head: Answer(body=big)) as site:

        async def scenario(client: Client) -> Response:
            capped = Request(site.url + "/huge", meta={"download_maxsize": 1024 * 1024})
            with pytest.raises(DownloadCancelledError) as cut:
                await client.fetch(capped)
            assert "larger than download max size (1048576)" in str(cut.value)
            assert site.url + "/huge" in str(cut.value)
            # Its Content-Length said so: refused at the header, the body never read.
            assert "the body was not read" in str(cut.value)
            warned = Request(site.url + "/huge", meta={"download_warnsize": 1024 * 1024})
            return await client.fetch(warned)

        with caplog.at_level(logging.WARNING, logger="crawlers.fetch.impersonate"):
            whole = run(scenario)
    assert whole.body == big
    assert sum("larger than download warn size" in r.message for r in caplog.records) == 1
    assert not isinstance(DownloadCancelledError(), RETRY_EXCEPTIONS)  # as Scrapy's: not retried


# -- errors ---------------------------------------------------------------------------------------


def test_curl_errors_become_the_exceptions_scrapy_retries() -> None:
    url = "https://shop.example/"
    cases = {
        CurlECode.OPERATION_TIMEDOUT: DownloadTimeoutError,
        CurlECode.COULDNT_RESOLVE_HOST: CannotResolveHostError,
        CurlECode.COULDNT_RESOLVE_PROXY: CannotResolveHostError,
        CurlECode.COULDNT_CONNECT: DownloadConnectionRefusedError,
        CurlECode.PROXY: TunnelError,
        CurlECode.PARTIAL_FILE: ResponseDataLossError,
        CurlECode.RECV_ERROR: ConnectionLostError,
        CurlECode.GOT_NOTHING: ConnectionLostError,
        CurlECode.HTTP2_STREAM: ConnectionLostError,
        CurlECode.SSL_CONNECT_ERROR: DownloadFailedError,
        CurlECode.BAD_CONTENT_ENCODING: DownloadFailedError,
    }
    for code, kind in cases.items():
        error = download_error(code, f"curl: ({int(code)}) failed", url, 30.0)
        assert type(error) is kind, code
        assert isinstance(error, RETRY_EXCEPTIONS), code
    tunnel = download_error(CurlECode.RECV_ERROR, "CONNECT tunnel failed, response 407", url, 30.0)
    assert isinstance(tunnel, TunnelError)
    refused_tunnel = download_error(
        CurlECode.COULDNT_CONNECT,
        "Failed to perform, curl: (7) CONNECT tunnel failed, response 407. See "
        "https://curl.se/libcurl/c/libcurl-errors.html first for more details.",
        url,
        30.0,
    )
    assert isinstance(refused_tunnel, TunnelError)
    assert (
        str(refused_tunnel) == "Failed to perform, curl: (7) CONNECT tunnel failed, response 407."
    )
    timeout = download_error(CurlECode.OPERATION_TIMEDOUT, "", url, 2.5)
    assert str(timeout) == f"Getting {url} took longer than 2.5 seconds."
    leaky = download_error(CurlECode.COULDNT_CONNECT, "via http://u:p4ss@10.0.0.1:8000", url, 1)
    assert "p4ss" not in str(leaky)


@pytest.mark.integration
def test_refused_and_timed_out_requests_fail_as_retryable_bans() -> None:
    refused_url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there

    with CaptureServer(lambda head: Answer(hang=True)) as hung:

        async def scenario(client: Client) -> list[Exception]:
            failures = []
            for request in (
                Request(refused_url),
                Request(hung.url + "/slow", meta={"download_timeout": 1.0}),
            ):
                started = time.monotonic()
                with pytest.raises(Exception) as failed:
                    await client.fetch(request)
                assert time.monotonic() - started < 10
                failures.append(failed.value)
            return failures

        refused, timed_out = run(scenario)
    assert isinstance(refused, DownloadConnectionRefusedError)
    assert isinstance(timed_out, DownloadTimeoutError)
    assert "took longer than 1.0 seconds" in str(timed_out)
    policy = BlockBanPolicy(Client().crawler)
    for failure in (refused, timed_out):
        assert isinstance(failure, RETRY_EXCEPTIONS)  # BlockRetryMiddleware retries them
        assert policy.exception_is_ban(Request(refused_url), failure) is True


def test_a_refused_connection_names_no_credentials() -> None:
    port = free_port()

    async def scenario(client: Client) -> Exception:
        request = Request(
            "http://shop.test/", meta={"proxy": f"http://me:{SECRET}@127.0.0.1:{port}"}
        )
        with pytest.raises(DownloadConnectionRefusedError) as refused:
            await client.fetch(request)
        return refused.value

    error = run(scenario)
    assert SECRET not in str(error) and f"127.0.0.1:{port}" in str(error)


# -- proxies --------------------------------------------------------------------------------------


def test_credentials_reach_the_proxy_never_the_site(
    demo_site: DemoSite,
    start_proxy: Callable[..., LoopbackProxy],
    tls_site: CaptureServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy = start_proxy("paid", auth=f"crawler:{SECRET}")
    wrong = proxy.url.replace(SECRET, "wrong")
    demo_site.control(log_headers=True)

    async def scenario(client: Client) -> tuple[Response, Response, Response, Exception]:
        plain = await client.fetch(Request(demo_site.url + "/", meta={"proxy": proxy.url}))
        tunnelled = await client.fetch(Request(tls_site.url + "/", meta={"proxy": proxy.url}))
        refused = await client.fetch(Request(demo_site.url + "/", meta={"proxy": wrong}))
        with pytest.raises(TunnelError) as tunnel:
            await client.fetch(Request(tls_site.url + "/again", meta={"proxy": wrong}))
        return plain, tunnelled, refused, tunnel.value

    with caplog.at_level(logging.DEBUG):
        plain, tunnelled, refused, tunnel = run(scenario)
    assert plain.status == tunnelled.status == 200
    assert refused.status == 407  # the proxy's answer to an http request: a response
    # The site saw the identity's headers and none of the proxy's credentials.
    entry = demo_site.access_log()[0]
    names = [name.lower() for name, _ in entry["headers"]]
    assert entry["client"] == "paid" and "proxy-authorization" not in names
    assert "sec-ch-ua" in names
    assert [head.target for head in tls_site.heads] == ["/"]
    assert tls_site.heads[0].get("Proxy-Authorization") is None
    stats = proxy.stats()
    assert stats["requests"] >= 1 and stats["connects"] >= 1 and stats["auth_failures"] >= 2
    assert_no_secret(SECRET, str(tunnel), caplog.text, str(refused.headers))
