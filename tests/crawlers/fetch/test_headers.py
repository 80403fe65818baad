"""The headers Chromium sends (crawlers/fetch/headers.py): a navigation, a script's fetch,
the request's own headers at Chromium's places, Sec-Fetch-Site and -Dest; then the real
Chromium's request heads compared with them (a Chromium upgrade that changes them fails
here)."""

from __future__ import annotations

import asyncio

import pytest

from crawlers import defaults
from crawlers.fetch.headers import (
    ACCEPT_ENCODING,
    NAVIGATION_ACCEPT,
    browser_headers,
    fetch_site,
    request_dest,
)
from crawlers.fetch.identity import crawl_identity
from tests.crawlers.fetch.capture import CaptureServer
from tests.crawlers.fetch.chromium import (
    UA,
    chromium_heads,
    identity,
    only,
    platform_crawler,
    sent,
)


def test_a_typed_in_navigation_is_chromiums() -> None:
    assert browser_headers(identity(), method="GET", url="https://shop.example/") == [
        ("Connection", "keep-alive"),
        ("sec-ch-ua", '"Not:A-Brand";v="8", "Chromium";v="156"'),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", '"Linux"'),
        ("Upgrade-Insecure-Requests", "1"),
        ("User-Agent", UA),
        ("Accept", NAVIGATION_ACCEPT),
        ("Sec-Fetch-Site", "none"),
        ("Sec-Fetch-Mode", "navigate"),
        ("Sec-Fetch-User", "?1"),
        ("Sec-Fetch-Dest", "document"),
        ("Accept-Encoding", ACCEPT_ENCODING),
        ("Accept-Language", "en-US,en;q=0.9"),
    ]


def test_the_requests_own_headers_stay_at_chromiums_places_and_scrapys_go() -> None:
    own = [
        ("User-Agent", "Scrapy/2.19 (+https://scrapy.org)"),
        ("Accept-Language", "en"),
        ("Accept-Encoding", "gzip, deflate"),
        ("Cookie", "sid=1"),
        ("If-None-Match", '"abc"'),
        ("Referer", "https://shop.example/list"),
        ("Proxy-Authorization", "Basic eDp5"),
        ("X-Api-Key", "k"),
        ("If-Modified-Since", "Mon, 01 Jan 2024 00:00:00 GMT"),
    ]
    headers = browser_headers(
        identity(), method="GET", url="https://shop.example/item/1", headers=own
    )
    names = [name for name, _ in headers]
    assert names[-9:] == [
        "Sec-Fetch-Dest",
        "X-Api-Key",  # another header of the request's own: before the Referer
        "Referer",
        "Accept-Encoding",
        "Accept-Language",
        "Cookie",
        "If-None-Match",
        "If-Modified-Since",
        "Proxy-Authorization",
    ]
    values = dict(headers)
    assert values["User-Agent"] == UA and values["Accept-Language"] == "en-US,en;q=0.9"
    assert values["Sec-Fetch-Site"] == "same-origin"
    assert not any("scrapy" in value.lower() for value in values.values())
    # Applying them again (a retry passes the middleware again) changes nothing.
    again = browser_headers(
        identity(), method="GET", url="https://shop.example/item/1", headers=headers
    )
    assert again == headers


def test_a_json_fetch_is_a_scripts_fetch() -> None:
    headers = browser_headers(
        identity(),
        method="GET",
        url="https://shop.example/api/reviews",
        headers=[("Accept", "application/json"), ("Referer", "https://shop.example/p/1")],
    )
    assert [name for name, _ in headers] == [
        "Connection",
        "sec-ch-ua-platform",
        "User-Agent",
        "Accept",
        "sec-ch-ua",
        "sec-ch-ua-mobile",
        "Sec-Fetch-Site",
        "Sec-Fetch-Mode",
        "Sec-Fetch-Dest",
        "Referer",
        "Accept-Encoding",
        "Accept-Language",
    ]
    values = dict(headers)
    assert (values["Sec-Fetch-Mode"], values["Sec-Fetch-Dest"]) == ("cors", "empty")
    assert "Sec-Fetch-User" not in values and "Origin" not in values
    # A default Accept comes after the hints; a POST says its Origin.
    post = browser_headers(
        identity(),
        method="POST",
        url="https://api.shop.com/graphql",
        headers=[("Content-Type", "application/json"), ("Referer", "https://shop.com/")],
        dest="empty",
    )
    assert [name for name, _ in post][2:10] == [
        "User-Agent",
        "sec-ch-ua",
        "Content-Type",
        "sec-ch-ua-mobile",
        "Accept",
        "Origin",
        "Sec-Fetch-Site",
        "Sec-Fetch-Mode",
    ]
    assert dict(post)["Origin"] == "https://shop.com"
    assert dict(post)["Sec-Fetch-Site"] == "same-site"


def test_sec_fetch_site_is_derived_from_the_referer() -> None:
    url = "https://www.shop.co.uk/p/1"
    assert fetch_site(url, None, navigation=True) == "none"
    assert fetch_site(url, None, navigation=False) == "same-origin"
    assert fetch_site(url, "https://www.shop.co.uk/list", navigation=True) == "same-origin"
    assert fetch_site(url, "https://img.shop.co.uk/", navigation=True) == "same-site"
    assert fetch_site(url, "https://other.co.uk/", navigation=True) == "cross-site"
    assert fetch_site(url, "http://www.shop.co.uk/", navigation=True) == "cross-site"
    # github.io is a public suffix (the list's private part): its hosts are sites apart.
    assert fetch_site("https://a.github.io/", "https://b.github.io/", navigation=True) == (
        "cross-site"
    )
    assert fetch_site("http://127.0.0.1:81/", "http://127.0.0.1:80/", navigation=True) == (
        "same-site"
    )
    assert fetch_site("http://localhost:8/", "http://127.0.0.1:8/", navigation=True) == (
        "cross-site"
    )


def test_the_kind_of_request_is_its_accept_or_its_meta() -> None:
    assert request_dest(None) == request_dest("text/html,*/*;q=0.8") == "document"
    assert request_dest("application/json") == request_dest("*/*") == "empty"
    assert request_dest("application/json", "document") == "document"
    with pytest.raises(ValueError, match="fetch_dest"):
        request_dest(None, "image")


# -- against the installed Chromium ---------------------------------------------------------


@pytest.mark.integration
def test_the_identitys_headers_are_what_the_installed_chromium_sends(
    sites: tuple[CaptureServer, CaptureServer],
) -> None:
    site, other = sites
    me = crawl_identity(platform_crawler().settings)
    found = asyncio.run(chromium_heads(me, site, other))
    assert found["webdriver"] is False
    assert found["user_agent"] == me.user_agent
    assert found["brands"] == list(me.brands)
    assert found["languages"] == me.languages

    def ours(url: str, own: list[tuple[str, str]], method: str = "GET") -> list[tuple[str, str]]:
        return browser_headers(me, method=method, url=url, headers=own)

    typed = only(site, "/typed")
    assert sent(typed) == ours(site.url + "/typed", [])
    link = only(site, "/next")
    assert sent(link) == ours(site.url + "/next", [("Referer", site.url + "/typed")])
    page = site.url + "/next"
    json_own = [("Accept", "application/json"), ("Referer", page)]
    assert sent(only(site, "/api/json")) == ours(site.url + "/api/json", json_own)
    assert sent(only(site, "/api/any")) == ours(
        site.url + "/api/any", [("Accept", "*/*"), ("Referer", page)]
    )
    post_own = [("Content-Type", "application/json"), *json_own]
    assert [h for h in sent(only(site, "/api/post")) if h[0] != "Content-Length"] == ours(
        site.url + "/api/post", post_own, "POST"
    )
    # Another port of the same host is the same site; localhost is another site. The
    # Referer of a cross-origin request is the page's origin (strict-origin-when-cross-origin,
    # Scrapy's REFERRER_POLICY in the platform's defaults).
    origin_only = [("Accept", "application/json"), ("Referer", site.url + "/")]
    assert sent(only(other, "/api/samesite")) == ours(other.url + "/api/samesite", origin_only)
    crosssite = other.url.replace("127.0.0.1", "localhost") + "/api/crosssite"
    assert sent(only(other, "/api/crosssite")) == ours(crosssite, origin_only)
    # A reload: validators and the cookie after everything else.
    reload = only(site, "/validated", 1)
    assert sent(reload) == [
        *ours(
            site.url + "/validated",
            [
                ("Cache-Control", "max-age=0"),
                ("Cookie", "sid=1"),
                ("If-None-Match", '"v1"'),
                ("If-Modified-Since", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ],
        )
    ]
    assert defaults.REFERRER_POLICY == "strict-origin-when-cross-origin"
