"""The headers Chromium sends for a request, in its order and spelling.

Measured on Chromium 156 over HTTP/1.1 and HTTP/2: a navigation (a document) or a
sub-resource fetch (an XHR asking for JSON); tests/crawlers/fetch/test_headers.py and
test_identity.py compare them with the real browser, so a Chromium upgrade that changes
them fails there. What a browser presents (its User-Agent, client hints, languages) is a
``crawlers.fetch.identity.BrowserIdentity``; ``IdentityMiddleware`` applies these headers
to every plain request, ``crawlers.fetch.impersonate`` sends them over curl_cffi.

Request meta: ``FETCH_DEST_META`` (``"document"`` or ``"empty"``: a navigation or a
fetch, when the request's own ``Accept`` does not say).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

import tldextract
from scrapy.http import Request

FETCH_DEST_META = "fetch_dest"
DOCUMENT, EMPTY = "document", "empty"  # Sec-Fetch-Dest: a navigation, a fetch/XHR

# What Chromium 156 sends on a navigation and accepts as encodings.
NAVIGATION_ACCEPT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)
ACCEPT_ENCODING = "gzip, deflate, br, zstd"
FETCH_ACCEPT = "*/*"

# Sites by registrable domain, the way Chromium tells same-site from cross-site: the
# public suffix list with its private part (github.io hosts are each a site). The
# snapshot bundled with tldextract, never fetched: nothing downloads at run time.
_SITES = tldextract.TLDExtract(
    cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True
)


class Presented(Protocol):
    """What the headers need of a browser identity (``BrowserIdentity``)."""

    @property
    def user_agent(self) -> str: ...
    @property
    def accept_language(self) -> str: ...
    @property
    def sec_ch_ua(self) -> str: ...
    @property
    def sec_ch_ua_platform(self) -> str: ...


Headers = list[tuple[str, str]]

# A request's own headers the browser would never send as they are: the identity's
# replace them (Scrapy's generic ones, a previous pass's, Content-Length left to curl).
_REPLACED = frozenset(
    {
        "user-agent",
        "accept-language",
        "accept-encoding",
        "connection",
        "keep-alive",
        "upgrade-insecure-requests",
        "sec-ch-ua",
        "sec-ch-ua-mobile",
        "sec-ch-ua-platform",
        "sec-fetch-site",
        "sec-fetch-mode",
        "sec-fetch-user",
        "sec-fetch-dest",
        "origin",
        "content-length",
        "te",
        "priority",
    }
)
# A request's own headers that stay, each at the place Chromium puts it.
_SLOTTED = frozenset(
    {
        "accept",
        "cache-control",
        "content-type",
        "referer",
        "cookie",
        "if-none-match",
        "if-modified-since",
        "proxy-authorization",
    }
)
# Chromium spells client hints in lower case on HTTP/1.1; every other name as Scrapy's
# Headers normalise it (``Sec-Fetch-Site``, ``If-None-Match``).
_SPELLING = {name: name for name in ("sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform")}


def browser_spelling(name: str) -> str:
    """``name`` as Chromium writes it on the wire."""
    return _SPELLING.get(name.lower(), name)


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    port = parts.port
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _site(url: str) -> tuple[str, str]:
    """(scheme, registrable domain): Chromium's schemeful site. An IP address or a name
    without a public suffix (localhost) is its own site."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    extracted = _SITES(host)
    return parts.scheme, extracted.top_domain_under_public_suffix or host


def fetch_site(url: str, referer: str | None, *, navigation: bool) -> str:
    """Sec-Fetch-Site from the page that asked (the Referer). Without one a navigation is
    typed in (``none``) and a fetch is the site's own page asking (``same-origin``)."""
    if not referer:
        return "none" if navigation else "same-origin"
    if origin_of(referer) == origin_of(url):
        return "same-origin"
    return "same-site" if _site(referer) == _site(url) else "cross-site"


def request_dest(accept: str | None, dest: str | None = None) -> str:
    """``document`` (a navigation) or ``empty`` (a fetch): ``dest`` when given, else the
    request's own Accept: none or one naming HTML is a page, anything else (JSON, ``*/*``)
    is what a page's script asks for."""
    if dest in (DOCUMENT, EMPTY):
        return dest
    if dest is not None:
        raise ValueError(f"{FETCH_DEST_META} must be {DOCUMENT!r} or {EMPTY!r}, got {dest!r}")
    if not accept or "text/html" in accept:
        return DOCUMENT
    return EMPTY


def browser_headers(
    identity: Presented,
    *,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]] = (),
    dest: str | None = None,
) -> Headers:
    """The headers Chromium sends for this request, in its order and spelling.

    ``headers`` are the request's own (name, value) pairs: Accept (of a fetch),
    Cache-Control, Content-Type, Referer, Cookie, If-None-Match, If-Modified-Since and
    Proxy-Authorization keep their values at Chromium's places for them; any other header
    of the request's own (an API key, X-Requested-With) is kept, where Chromium puts a
    script's headers (a fetch) or before the Referer (a navigation); the generic ones
    (User-Agent, Accept-Language, Accept-Encoding, client hints, Sec-Fetch-*, Origin) are
    the identity's. Host and Content-Length are curl's (first on the wire: the handler's
    header order option).
    """
    own: dict[str, list[str]] = {}
    others: Headers = []
    for name, value in headers:
        key = name.lower()
        if key in _REPLACED:
            continue
        if key in _SLOTTED:
            own.setdefault(key, []).append(value)
        else:
            others.append((browser_spelling(name), value))

    def slot(name: str) -> Headers:
        return [(name, value) for value in own.get(name.lower(), ())]

    accept = own.get("accept", [None])[0]
    kind = request_dest(accept, dest)
    referer = own.get("referer", [None])[0]
    safe = method.upper() in ("GET", "HEAD")
    navigation = kind == DOCUMENT
    site = fetch_site(url, referer, navigation=navigation)
    # Origin: the page's origin on a request that is not a GET, or a cross-origin fetch.
    origin: Headers = []
    if not safe or (not navigation and site != "same-origin"):
        origin = [("Origin", origin_of(referer or url))]
    tail = [
        *slot("Referer"),
        ("Accept-Encoding", ACCEPT_ENCODING),
        ("Accept-Language", identity.accept_language),
        *slot("Cookie"),
        *slot("If-None-Match"),
        *slot("If-Modified-Since"),
        *slot("Proxy-Authorization"),  # to the proxy only: the handler takes it off
    ]
    if navigation:
        cache_control = slot("Cache-Control") or ([] if safe else [("Cache-Control", "max-age=0")])
        return [
            ("Connection", "keep-alive"),
            *cache_control,
            ("sec-ch-ua", identity.sec_ch_ua),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", identity.sec_ch_ua_platform),
            ("Upgrade-Insecure-Requests", "1"),
            *slot("Content-Type"),
            ("User-Agent", identity.user_agent),
            *origin,
            ("Accept", NAVIGATION_ACCEPT),
            ("Sec-Fetch-Site", site),
            ("Sec-Fetch-Mode", "navigate"),
            ("Sec-Fetch-User", "?1"),
            ("Sec-Fetch-Dest", DOCUMENT),
            *others,
            *tail,
        ]
    # A script's fetch: its own headers (and an Accept it set) come before the hints
    # Chromium adds; a default Accept (*/*) after them.
    explicit_accept = [("Accept", accept)] if accept and accept != FETCH_ACCEPT else []
    return [
        ("Connection", "keep-alive"),
        *slot("Cache-Control"),
        ("sec-ch-ua-platform", identity.sec_ch_ua_platform),
        *others,
        ("User-Agent", identity.user_agent),
        *explicit_accept,
        ("sec-ch-ua", identity.sec_ch_ua),
        *slot("Content-Type"),
        ("sec-ch-ua-mobile", "?0"),
        *([] if explicit_accept else [("Accept", FETCH_ACCEPT)]),
        *origin,
        ("Sec-Fetch-Site", site),
        ("Sec-Fetch-Mode", "cors"),
        ("Sec-Fetch-Dest", EMPTY),
        *tail,
    ]


# A header's value: text, or None where curl is told to send no header of that name.
_Value = TypeVar("_Value", str, str | None)


def with_h2_priority(headers: Sequence[tuple[str, _Value]]) -> list[tuple[str, _Value]]:
    """``headers`` as Chromium sends them over HTTP/2: with its RFC 9218 ``priority``
    (``u=0, i`` for a document, ``u=1, i`` for a fetch) right after Accept-Language,
    before the Cookie (measured on Chromium 156; HTTP/1.1 carries none)."""
    dest = next((v for n, v in headers if n.lower() == "sec-fetch-dest"), DOCUMENT)
    priority = ("priority", "u=0, i" if dest == DOCUMENT else "u=1, i")
    out = [(name, value) for name, value in headers if name.lower() != "priority"]
    at = next(
        (i + 1 for i, (name, _) in enumerate(out) if name.lower() == "accept-language"),
        len(out),
    )
    out.insert(at, priority)
    return out


def request_pairs(request: Request) -> Headers:
    """A Scrapy request's headers as (name, value) text pairs, in order."""
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in request.headers.items()
        for value in values
    ]
