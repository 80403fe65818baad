"""Level 1: do a request's headers tell one consistent browser story?

Cloudflare's Browser Integrity Check and the header stage of DataDome/Akamai refuse
what no browser sends: a library's User-Agent, a Chrome UA without Chrome's client
hints, hints that contradict the UA, a bare ``Accept-Language``, a navigation without
``Sec-Fetch-*``. ``header_problem`` names the first rule a request breaks.
"""

from __future__ import annotations

import re
from typing import Protocol


class Headers(Protocol):
    """Case-insensitive lookup, as ``http.client.HTTPMessage`` (and a dict of lower-case
    names) provide."""

    def get(self, name: str, /) -> str | None: ...


# Words only automation puts in a User-Agent (HeadlessChrome is caught by "headless").
AUTOMATION_WORDS = (
    "bot",
    "crawl",
    "spider",
    "scrapy",
    "python",
    "curl",
    "wget",
    "httpclient",
    "headless",
    "playwright",
    "puppeteer",
    "selenium",
)
_AUTOMATION = re.compile("|".join(AUTOMATION_WORDS), re.IGNORECASE)
# Every browser's UA since the 2000s: Mozilla/5.0 (<platform>) <engine and product>.
_BROWSER_UA = re.compile(r"^Mozilla/5\.0 \([^)]+\) \S")
_CHROME_MAJOR = re.compile(r"\b(?:Chrome|Chromium)/(\d+)\.")
_BRAND = re.compile(r'"([^"]*)"\s*;\s*v\s*=\s*"([^"]*)"')
CHROME_BRANDS = frozenset({"Chromium", "Google Chrome"})
# What sec-ch-ua-platform says for a UA's platform token, most specific first.
_PLATFORMS = (
    ("Android", "Android"),
    ("CrOS", "Chrome OS"),
    ("Windows NT", "Windows"),
    ("Macintosh", "macOS"),
    ("Linux", "Linux"),
)
_REGION = re.compile(r"^[A-Za-z]{2,3}-[A-Za-z0-9]{2,8}")

# The reasons, as the log and the stats name them.
UA_MISSING = "ua_missing"
UA_AUTOMATION = "ua_automation"
UA_NOT_BROWSER = "ua_not_browser"
CH_MISSING = "ch_missing"
CH_VERSION = "ch_version"
CH_PLATFORM = "ch_platform"
CH_MOBILE = "ch_mobile"
ACCEPT_LANGUAGE_MISSING = "accept_language_missing"
ACCEPT_LANGUAGE_BARE = "accept_language_bare"
SEC_FETCH_MISSING = "sec_fetch_missing"
ACCEPT_ENCODING_MISSING = "accept_encoding_missing"


def header_problem(headers: Headers) -> str | None:
    """The first header rule the request breaks (a reason constant), or None."""
    ua = headers.get("user-agent")
    if not ua:
        return UA_MISSING
    if _AUTOMATION.search(ua):
        return UA_AUTOMATION
    if not _BROWSER_UA.match(ua):
        return UA_NOT_BROWSER
    chrome = _CHROME_MAJOR.search(ua)
    if chrome is not None:
        problem = _client_hints_problem(headers, ua, chrome.group(1))
        if problem:
            return problem
    language = headers.get("accept-language")
    if not language or not language.strip():
        return ACCEPT_LANGUAGE_MISSING
    if _bare_language(language):
        return ACCEPT_LANGUAGE_BARE
    if chrome is not None and _navigation(headers) and not _has_sec_fetch(headers):
        return SEC_FETCH_MISSING
    if not headers.get("accept-encoding"):
        return ACCEPT_ENCODING_MISSING
    return None


def _client_hints_problem(headers: Headers, ua: str, major: str) -> str | None:
    # Chromium 90+ sends the low-entropy hints on every secure request.
    brands_header = headers.get("sec-ch-ua")
    if not brands_header:
        return CH_MISSING
    brands = dict(_BRAND.findall(brands_header))
    if not any(brands.get(name) == major for name in CHROME_BRANDS):
        return CH_VERSION
    platform = next((name for token, name in _PLATFORMS if token in ua), None)
    if platform is not None and _unquote(headers.get("sec-ch-ua-platform")) != platform:
        return CH_PLATFORM
    mobile = "?1" if "Mobile" in ua or "Android" in ua else "?0"
    if (headers.get("sec-ch-ua-mobile") or "").strip() != mobile:
        return CH_MOBILE
    return None


def _unquote(value: str | None) -> str | None:
    return value.strip().strip('"') if value is not None else None


def _bare_language(value: str) -> bool:
    """``en`` or ``en,fr``: no region and no q-values, which no browser sends."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    has_region = any(_REGION.match(part) for part in parts)
    has_q = any(";q=" in part.replace(" ", "") for part in parts)
    return not (has_region or has_q)


def _navigation(headers: Headers) -> bool:
    return (headers.get("accept") or "").lstrip().lower().startswith("text/html")


def _has_sec_fetch(headers: Headers) -> bool:
    return all(headers.get(name) for name in ("sec-fetch-mode", "sec-fetch-dest", "sec-fetch-site"))
