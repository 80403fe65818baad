"""The browser every request of the platform presents: the Chromium it runs.

``BrowserIdentity`` (version, non-headless User-Agent, ``sec-ch-ua`` brands, languages,
the curl_cffi target; JSON round trip for sessions in Redis) is derived from the installed
Chromium. ``IdentityMiddleware`` (replacing Scrapy's ``UserAgentMiddleware``) gives every
plain request its headers in Chromium's order (``crawlers.fetch.headers``), or the
platform's own ``USER_AGENT`` with ``FETCH_IDENTITY = "crawler"``. robots.txt is matched
for ``ROBOTSTXT_USER_AGENT`` whatever identity is presented.

Reads: ``FETCH_IDENTITY``, ``BROWSER_ACCEPT_LANGUAGE``, ``BROWSER_VERSION``,
``CHROMIUM_PATH`` / ``PLAYWRIGHT_LAUNCH_OPTIONS``; request meta ``IDENTITY_META``,
``SESSION_META``, ``FETCH_DEST_META``. Details: docs/fetching.md "Identity: every request
presents the Chromium the platform runs".
"""

from __future__ import annotations

import functools
import re
import subprocess
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.settings import BaseSettings, default_settings

from core.config import ConfigurationError
from crawlers.fetch.headers import FETCH_DEST_META, browser_headers, request_pairs
from crawlers.runtime.services import CrawlServices

IDENTITY_META = "identity"
SESSION_META = "fetch_session"
FETCH_IDENTITIES = ("browser", "crawler")

BROWSER = "Chromium"
# The User-Agent's platform token per client-hint platform (the platform runs on Linux).
UA_PLATFORMS = {"Linux": "X11; Linux x86_64"}

# Chromium's brand GREASE (components/embedder_support/user_agent_utils.cc), seeded by
# the major version: a deliberately odd brand so servers do not parse the list naively.
_GREASE_CHARS = (" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_")
_GREASE_VERSIONS = ("8", "99", "24")

_VERSION = re.compile(r"\b(\d+)\.(\d+)\.(\d+)\.(\d+)\b")
_TARGET = re.compile(r"^chrome(\d+)$")  # desktop targets only (not _android, _macos, 133a)


def grease_brands(major: int, product: str = BROWSER) -> tuple[tuple[str, str], ...]:
    """``navigator.userAgentData.brands`` of a Chromium build (no vendor brand)."""
    grease = (
        f"Not{_GREASE_CHARS[major % 11]}A{_GREASE_CHARS[(major + 1) % 11]}Brand",
        _GREASE_VERSIONS[major % 3],
    )
    real = (product, str(major))
    return (grease, real) if major % 2 == 0 else (real, grease)


def installed_targets() -> tuple[str, ...]:
    """The impersonation targets of the installed curl_cffi."""
    from curl_cffi.requests.impersonate import BrowserTypeLiteral

    return typing.get_args(BrowserTypeLiteral)


def impersonate_target(major: int, targets: Iterable[str] | None = None) -> str:
    """The newest desktop ``chromeNNN`` target with NNN <= ``major``: its TLS/HTTP2
    fingerprint is the one closest to the browser's (Chromium changes it rarely)."""
    versions = sorted(
        int(match.group(1))
        for target in (installed_targets() if targets is None else targets)
        if (match := _TARGET.match(target))
    )
    eligible = [version for version in versions if version <= major]
    if not eligible:
        raise ConfigurationError(
            f"curl_cffi has no Chrome target for Chromium {major} (it has chrome"
            f"{', chrome'.join(map(str, versions))}): install a matching curl-cffi or set "
            "FETCH_IDENTITY=crawler"
        )
    return f"chrome{eligible[-1]}"


@dataclass(frozen=True)
class BrowserIdentity:
    browser: str
    version: str  # full, e.g. 156.0.8078.114
    major: int
    platform: str  # the sec-ch-ua-platform value, e.g. Linux
    user_agent: str
    brands: tuple[tuple[str, str], ...]
    accept_language: str
    impersonate: str  # the curl_cffi target of the plain-request handler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserIdentity:
        """The crawl's identity (``crawl_identity`` of its settings)."""
        return crawl_identity(crawler.settings)

    @classmethod
    def chromium(
        cls,
        version: str,
        *,
        accept_language: str,
        platform: str = "Linux",
        targets: Iterable[str] | None = None,
    ) -> BrowserIdentity:
        """The identity of Chromium ``version`` (``156`` or ``156.0.8078.114``)."""
        major = int(version.split(".", 1)[0])
        if platform not in UA_PLATFORMS:
            raise ValueError(f"platform must be one of {sorted(UA_PLATFORMS)}, got {platform!r}")
        # Chrome's reduced User-Agent: the major version only, as a headful browser says.
        user_agent = (
            f"Mozilla/5.0 ({UA_PLATFORMS[platform]}) AppleWebKit/537.36 "
            f"(KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
        )
        return cls(
            browser=BROWSER,
            version=version,
            major=major,
            platform=platform,
            user_agent=user_agent,
            brands=grease_brands(major),
            accept_language=accept_language,
            impersonate=impersonate_target(major, targets),
        )

    @property
    def locale(self) -> str:
        """The first language tag of Accept-Language (``en-US``)."""
        return self.accept_language.split(",", 1)[0].split(";", 1)[0].strip()

    @property
    def languages(self) -> list[str]:
        """Accept-Language's tags without q-values: Chromium's ``--accept-lang`` list."""
        tags = (part.split(";", 1)[0].strip() for part in self.accept_language.split(","))
        return [tag for tag in tags if tag]

    @property
    def sec_ch_ua(self) -> str:
        return ", ".join(f'"{brand}";v="{version}"' for brand, version in self.brands)

    @property
    def sec_ch_ua_platform(self) -> str:
        return f'"{self.platform}"'

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (a session shared by workers through Redis stores it)."""
        return {
            "browser": self.browser,
            "version": self.version,
            "major": self.major,
            "platform": self.platform,
            "user_agent": self.user_agent,
            "brands": [list(brand) for brand in self.brands],
            "accept_language": self.accept_language,
            "impersonate": self.impersonate,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BrowserIdentity:
        return cls(
            browser=str(data["browser"]),
            version=str(data["version"]),
            major=int(data["major"]),
            platform=str(data["platform"]),
            user_agent=str(data["user_agent"]),
            brands=tuple((str(brand), str(version)) for brand, version in data["brands"]),
            accept_language=str(data["accept_language"]),
            impersonate=str(data["impersonate"]),
        )


# -- the installed Chromium ----------------------------------------------------------------


def chromium_path(settings: BaseSettings) -> str | None:
    """The Chromium Playwright launches (``CHROMIUM_PATH`` fills this key)."""
    path = settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS").get("executable_path")
    return str(path) if path else None


@functools.lru_cache(maxsize=8)
def chromium_version(path: str | None) -> str:
    """``<chromium> --version``'s version (cached per process), or ConfigurationError."""
    fix = (
        "install Debian's chromium, point CHROMIUM_PATH at a Chromium, set "
        "BROWSER_VERSION (e.g. 156.0.8078.114) to present that version without one, "
        "or set FETCH_IDENTITY=crawler"
    )
    if not path:
        raise ConfigurationError(
            f"FETCH_IDENTITY=browser presents the installed Chromium, but none was found: {fix}"
        )
    try:
        # stdout only and no timeout: read straight from the pipe, with no poll() loop,
        # which libfaketime (a worker whose clock is tested behind) made fail with EINVAL.
        done = subprocess.run(
            [path, "--version"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigurationError(
            f"FETCH_IDENTITY=browser presents the installed Chromium, but {path} does not "
            f"run ({type(exc).__name__}: {exc}): {fix}"
        ) from None
    match = _VERSION.search(done.stdout)
    if done.returncode or match is None:
        raise ConfigurationError(
            f"FETCH_IDENTITY=browser presents the installed Chromium, but `{path} --version` "
            f"gave no version ({done.stdout.strip()[:80]!r}): {fix}"
        )
    return match.group(0)


def crawl_identity(settings: BaseSettings) -> BrowserIdentity:
    """The crawl's identity: ``BROWSER_VERSION``, else the installed Chromium's version."""
    version = settings.get("BROWSER_VERSION") or chromium_version(chromium_path(settings))
    if not re.fullmatch(r"\d+(\.\d+){0,3}", str(version)):
        raise ConfigurationError(
            f"BROWSER_VERSION={version!r} is not a Chromium version: set it like "
            "`-s BROWSER_VERSION=156.0.8078.114`, or unset it"
        )
    return BrowserIdentity.chromium(
        str(version), accept_language=str(settings.get("BROWSER_ACCEPT_LANGUAGE"))
    )


def check_identity(settings: BaseSettings, *, probe: bool = True) -> None:
    """ConfigurationError (one line) for an identity setting the crawl cannot honour;
    with ``probe``, the browser identity is derived (the installed Chromium asked)."""
    mode = settings.get("FETCH_IDENTITY")
    if mode is None:
        return  # not the platform's settings (the add-on's defaults set it)
    if mode not in FETCH_IDENTITIES:
        raise ConfigurationError(
            f"FETCH_IDENTITY={mode!r} is not one of {', '.join(FETCH_IDENTITIES)}: set it like "
            "`-s FETCH_IDENTITY=browser`"
        )
    if mode == "browser" and probe:
        crawl_identity(settings)


def identity_of(request: Request, default: BrowserIdentity) -> BrowserIdentity:
    """The request's session identity (an object, or its dict after a disk queue), else
    the crawl's."""
    own = request.meta.get(IDENTITY_META)
    if isinstance(own, BrowserIdentity):
        return own
    if isinstance(own, Mapping):
        return BrowserIdentity.from_dict(own)
    return default


# -- the middleware -----------------------------------------------------------------------------


def identity_for(crawler: Crawler) -> BrowserIdentity:
    """The crawl's identity, derived once per crawler (the middleware and the handlers):
    a component of its services."""
    return CrawlServices.of(crawler).component(BrowserIdentity)


class IdentityMiddleware:
    """Downloader middleware: a plain request's headers are the identity's.

    After every middleware that adds a header (cookies 700, validators 745, proxy
    credentials 750), so it orders them all. Rendered requests are left alone: Chromium
    sends its own (``PLAYWRIGHT_PROCESS_REQUEST_HEADERS = None``).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.get("FETCH_IDENTITY"):  # a project without the platform's settings
            raise NotConfigured("FETCH_IDENTITY is not set")
        check_identity(settings)
        self.mode = str(settings.get("FETCH_IDENTITY"))
        self.identity = identity_for(crawler) if self.mode == "browser" else None
        self.user_agent = str(settings.get("USER_AGENT"))
        # FETCH_IDENTITY=crawler: what Scrapy itself sent (its DEFAULT_REQUEST_HEADERS and
        # USER_AGENT), now that the platform's DEFAULT_REQUEST_HEADERS is empty.
        self.crawler_headers = {
            **default_settings.DEFAULT_REQUEST_HEADERS,
            "User-Agent": self.user_agent,
        }

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IdentityMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if request.meta.get("playwright"):
            return
        if self.identity is None:
            for name, value in self.crawler_headers.items():
                request.headers.setdefault(name, value)
            return
        identity = identity_of(request, self.identity)
        headers = browser_headers(
            identity,
            method=request.method,
            url=request.url,
            headers=request_pairs(request),
            dest=request.meta.get(FETCH_DEST_META),
        )
        request.headers.clear()
        for name, value in headers:
            request.headers.appendlist(name, value)
