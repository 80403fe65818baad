"""A session's cookie jar (crawlers/fetch/cookies.py): Set-Cookie parsed into Playwright's
cookie dicts, and the Cookie header a browser would send from them."""

from __future__ import annotations

from scrapy import Request
from scrapy.http import Response

from crawlers.fetch.cookies import cookie_header, set_cookies

NOW = 1_800_000_000.0


def jar(**overrides: object) -> dict[str, object]:
    cookie: dict[str, object] = {
        "name": "sid",
        "value": "1",
        "domain": "shop.example",
        "path": "/",
        "expires": -1,
        "secure": False,
    }
    return {**cookie, **overrides}


def test_set_cookie_becomes_playwrights_cookie_dicts() -> None:
    request = Request("https://shop.example/p/1")
    response = Response(
        request.url,
        headers={
            "Set-Cookie": [
                "datadome=abc; Domain=.shop.example; Path=/; Secure; HttpOnly; SameSite=None",
                "lang=en",
            ]
        },
        request=request,
    )
    cookies = {c["name"]: c for c in set_cookies(response, request)}
    assert cookies["datadome"] == {
        "name": "datadome",
        "value": "abc",
        "domain": ".shop.example",
        "path": "/",
        "expires": -1,
        "httpOnly": True,
        "secure": True,
        "sameSite": "None",
    }
    assert cookies["lang"]["domain"] == "shop.example" and cookies["lang"]["sameSite"] == "Lax"
    assert set_cookies(Response(request.url, request=request), request) == []


def test_the_cookie_header_matches_domain_path_secure_and_expiry() -> None:
    cookies = [
        jar(name="a", path="/"),
        jar(name="b", path="/p", domain=".shop.example"),
        jar(name="c", secure=True),
        jar(name="d", expires=NOW - 1),
        jar(name="e", domain="other.example"),
        jar(name="f", path="/pages"),
    ]
    # Longer paths first; /pages is not under /p/1; .shop.example covers subdomains.
    assert cookie_header(cookies, "http://shop.example/p/1", NOW) == "b=1; a=1"
    assert cookie_header(cookies, "https://www.shop.example/p", NOW) == "b=1"
    assert cookie_header(cookies, "https://shop.example/", NOW) == "a=1; c=1"
