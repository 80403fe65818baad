"""A fetch session's cookie jar: Playwright's cookie dicts (``context.cookies()``), so the
same jar serves a session's plain requests (the Cookie header) and its browser context.

Set-Cookie answers are parsed by Scrapy's cookie jar; the Cookie header is matched as a
browser matches it (RFC 6265: domain, path, secure, expiry). Cookies never appear in a
log line or a stat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http.cookiejar import Cookie
from typing import Any
from urllib.parse import urlsplit

from scrapy.http import Request, Response
from scrapy.http.cookies import CookieJar


def cookie_dict(cookie: Cookie) -> dict[str, Any]:
    """A cookie Scrapy parsed from Set-Cookie, as Playwright's ``context.cookies()`` has it."""
    return {
        "name": cookie.name,
        "value": cookie.value or "",
        "domain": cookie.domain,
        "path": cookie.path or "/",
        "expires": float(cookie.expires) if cookie.expires is not None else -1,
        "httpOnly": bool(cookie.has_nonstandard_attr("HttpOnly")),
        "secure": bool(cookie.secure),
        "sameSite": str(cookie.get_nonstandard_attr("SameSite") or "Lax").capitalize(),
    }


def _domain_matches(host: str, domain: str) -> bool:
    if domain.startswith("."):
        bare = domain[1:]
        return host == bare or host.endswith(domain)
    return host == domain


def cookie_header(cookies: Sequence[Mapping[str, Any]], url: str, now: float) -> str:
    """The Cookie header a browser sends to ``url`` from this jar (RFC 6265 5.4: domain,
    path and secure matched, expired cookies left out, longer paths first)."""
    parts = urlsplit(url)
    host, path = (parts.hostname or "").lower(), parts.path or "/"
    chosen = []
    for cookie in cookies:
        expires = cookie.get("expires", -1)
        if expires is not None and 0 <= expires <= now:
            continue
        if cookie.get("secure") and parts.scheme != "https":
            continue
        if not _domain_matches(host, str(cookie.get("domain", "")).lower()):
            continue
        cookie_path = str(cookie.get("path") or "/")
        if not (path == cookie_path or path.startswith(cookie_path.rstrip("/") + "/")):
            continue
        chosen.append(cookie)
    chosen.sort(key=lambda c: -len(str(c.get("path") or "/")))
    return "; ".join(f"{c['name']}={c['value']}" for c in chosen)


def set_cookies(response: Response, request: Request) -> list[dict[str, Any]]:
    """The cookies ``response`` sets (Set-Cookie), parsed by Scrapy's cookie jar."""
    if not response.headers.getlist(b"Set-Cookie"):
        return []
    jar = CookieJar()
    return [cookie_dict(c) for c in jar.make_cookies(response, request)]
