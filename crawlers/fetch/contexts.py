"""The browser context a rendered request uses, and what the context is made with.

scrapy-playwright renders a request in the context its ``playwright_context`` meta names,
made (on the first request naming it) with its ``playwright_context_kwargs``:

- every context gets the identity's User-Agent and the TLS verification of plain
  requests (``context_options``); Chromium is launched with the identity's languages
  (``launch_options``);
- a proxied request goes to its proxy's context, ``proxy:<host:port>`` (plus ``~<tag>``
  for an account on a shared gateway), made with Playwright's ``proxy`` option: the
  credentials come from the ``Proxy-Authorization`` header Scrapy's HttpProxyMiddleware
  built, which is removed (the site never sees it);
- a request of a fetch session (``crawlers.fetch.sessions``) goes to the session's own
  context, ``session:<id>``, with its identity's User-Agent and its cookie jar
  (``SessionCookies``): never another visitor's.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from playwright.async_api import BrowserContext, Page
from scrapy.http import Request

from crawlers.fetch.identity import IDENTITY_META, SESSION_META, BrowserIdentity
from crawlers.fetch.redact import basic_credentials, credential_tag, proxy_for_playwright, proxy_id
from crawlers.fetch.retry import COOKIES_IN_META

# scrapy-playwright's documented request meta keys.
CONTEXT_META = "playwright_context"
CONTEXT_KWARGS_META = "playwright_context_kwargs"
DEFAULT_CONTEXT = "default"  # the context of a request without playwright_context


def context_options(user_agent: str, *, verify: bool) -> dict[str, Any]:
    """Options of every context the handler creates: the identity's User-Agent (the
    non-headless form; Chromium keeps its own client hints, which agree with it) and TLS
    verification as for plain requests. Playwright's ``locale`` is not used: it rewrites
    Accept-Language to the bare locale and moves it before Accept (measured on Chromium
    156), which no Chrome sends; the languages come with the launch (``launch_options``).
    """
    return {"user_agent": user_agent, "ignore_https_errors": not verify}


def launch_options(options: dict[str, Any], identity: BrowserIdentity | None) -> dict[str, Any]:
    """PLAYWRIGHT_LAUNCH_OPTIONS with the identity's languages (``--accept-lang``):
    Chromium then sends BROWSER_ACCEPT_LANGUAGE itself, in its place, and
    navigator.languages agrees. An ``--accept-lang`` of the options' own wins."""
    args = [str(arg) for arg in options.get("args") or ()]
    if identity is None or any(arg.startswith("--accept-lang=") for arg in args):
        return dict(options)
    return {**options, "args": [*args, "--accept-lang=" + ",".join(identity.languages)]}


def route_through_proxy(request: Request) -> None:
    """A proxied browser request goes to its proxy's context (Playwright ``proxy``)."""
    proxy = request.meta.get("proxy")
    if not proxy:
        return
    # HttpProxyMiddleware moved the credentials into this header; Chromium must not
    # send it to the site, and the context gets them as Playwright options instead.
    credentials = basic_credentials(request.headers.get(b"Proxy-Authorization"))
    request.headers.pop(b"Proxy-Authorization", None)
    option = {"server": proxy_for_playwright(proxy)["server"]}
    name = f"proxy:{proxy_id(proxy)}"
    if credentials is not None:
        option["username"], option["password"] = credentials
        # Two accounts on one gateway must not share a context (cookies, session).
        name += f"~{credential_tag(*credentials)}"
    kwargs = dict(request.meta.get(CONTEXT_KWARGS_META) or {})
    kwargs["proxy"] = option
    request.meta[CONTEXT_META] = name
    request.meta[CONTEXT_KWARGS_META] = kwargs


def route_to_session(request: Request) -> None:
    """A request of a fetch session (crawlers.fetch.sessions) renders in the session's
    own context: its proxy (set above), its identity's User-Agent, its cookies (loaded
    at page init), never another visitor's."""
    session = request.meta.get(SESSION_META)
    if not session:
        return
    kwargs = dict(request.meta.get(CONTEXT_KWARGS_META) or {})
    identity = request.meta.get(IDENTITY_META)
    if isinstance(identity, Mapping):
        kwargs["user_agent"] = BrowserIdentity.from_dict(identity).user_agent
    request.meta[CONTEXT_META] = f"session:{session}"
    request.meta[CONTEXT_KWARGS_META] = kwargs


def playwright_cookie(cookie: Mapping[str, Any]) -> dict[str, Any]:
    """A session cookie (Playwright's ``context.cookies()`` form) as ``add_cookies`` takes
    it: a session cookie has no ``expires``, ``sameSite`` is one of its three words."""
    out = {
        key: cookie[key]
        for key in ("name", "value", "domain", "path", "httpOnly", "secure")
        if key in cookie
    }
    out.setdefault("path", "/")
    expires = cookie.get("expires")
    if isinstance(expires, int | float) and expires > 0:
        out["expires"] = expires
    same_site = str(cookie.get("sameSite") or "Lax").capitalize()
    out["sameSite"] = same_site if same_site in ("Strict", "Lax", "None") else "Lax"
    return out


class SessionCookies:
    """Per context, the session cookies already in it: loaded once, not per request."""

    def __init__(self) -> None:
        self.loaded: weakref.WeakKeyDictionary[BrowserContext, frozenset[Any]] = (
            weakref.WeakKeyDictionary()
        )

    async def load(self, page: Page, request: Request) -> None:
        """The session's cookie jar into its context, when the context lacks any of it
        (a new context, or cookies the session got elsewhere: a plain answer, another
        worker's challenge)."""
        cookies = request.meta.get(COOKIES_IN_META)
        if not cookies or not request.meta.get(SESSION_META):
            return
        wanted = {(c.get("name"), c.get("domain"), c.get("path"), c.get("value")) for c in cookies}
        loaded = self.loaded.get(page.context, frozenset())
        if wanted <= loaded:
            return
        # add_cookies types its dicts as SetCookieParam, a TypedDict Playwright keeps private
        # (playwright._impl); playwright_cookie builds that shape.
        await page.context.add_cookies(
            [playwright_cookie(c) for c in cookies]  # type: ignore[misc]  # as said above
        )
        self.loaded[page.context] = frozenset(loaded | wanted)
