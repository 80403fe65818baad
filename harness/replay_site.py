"""Replay a production site from its committed fixtures, on loopback.

``python -m harness.replay_site <site> [--host 127.0.0.1] [--port 0]``

Serves ``fingerprints/sites/<site>/`` by URL path as the site's ``replay.json`` manifest
lists it (hosts rewritten to the replay's URL in every body, query parameters matched,
optional session cookie and first answers), so ``scrapy crawl <site> -a
base_url=<replay URL>``, the structure gate and the ``scrape-<site>`` flow run without the
internet. It also answers absolute-form requests as a forward proxy (for
``needs_proxies`` sites) and keeps an access log at ``/__replay/log``.

Reads: the manifest. Its keys and rules: docs/sites.md "Fixtures, replay and tests (all
sites)", step 2 "Replay".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode, urlsplit

from aiohttp import web

from core.config import REPO_ROOT
from crawlers.profiles import SiteProfile
from harness.base import ManagedProcess
from standins import loopback

SITES_DIR = REPO_ROOT / "fingerprints" / "sites"
MANIFEST = "replay.json"
CONTROL_PREFIX = "/__replay/"


class ManifestError(ValueError):
    """A replay manifest is missing, malformed, or names a file that does not exist."""


@dataclass(frozen=True)
class Route:
    file: Path
    status: int = 200
    content_type: str = "text/html"
    # Served instead of ``file`` for the route's first ``first_times`` requests.
    first: Route | None = None
    first_times: int = 0


@dataclass(frozen=True)
class ReplayManifest:
    site: str
    root: Path
    routes: Mapping[str, Route]
    hosts: tuple[str, ...] = ()
    robots: str = "User-agent: *\nAllow: /\n"
    session_cookie: str | None = None
    login_page: Path | None = None
    ignore_query: frozenset[str] = frozenset()
    # Scrapy settings a crawl of it needs (a test session; never a real credential).
    crawl_settings: Mapping[str, str] = field(default_factory=dict)
    _patterns: tuple[re.Pattern[str], ...] = field(default=(), repr=False)

    @classmethod
    def load(cls, site: str, sites_dir: Path = SITES_DIR) -> ReplayManifest:
        root = sites_dir / site
        path = root / MANIFEST
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ManifestError(f"site {site!r} has no replay manifest: expected {path}") from exc
        except ValueError as exc:
            raise ManifestError(f"{path}: not JSON ({exc})") from exc
        routes: dict[str, Route] = {}
        ignore = frozenset(raw.get("ignore_query") or ())
        for key, spec in (raw.get("routes") or {}).items():
            spec = {"file": spec} if isinstance(spec, str) else dict(spec)
            first = spec.get("first")
            route = _route(root, spec)
            if first is not None:
                first_route = _route(root, first)
                route = replace(route, first=first_route, first_times=int(first.get("times", 1)))
            for file in (route.file, *([route.first.file] if route.first else [])):
                if not file.is_file():
                    raise ManifestError(f"{path}: route {key!r} names a missing file {file}")
            routes[normalise_target(key, ignore=ignore)] = route
        if not routes:
            raise ManifestError(f"{path}: no routes")
        robots = raw.get("robots") or ["User-agent: *", "Allow: /"]
        robots_text = "\n".join([*robots, f"Disallow: {CONTROL_PREFIX}"]) + "\n"
        login = raw.get("login_page")
        hosts = tuple(raw.get("hosts") or ())
        return cls(
            site=site,
            root=root,
            routes=routes,
            hosts=hosts,
            robots=robots_text,
            session_cookie=raw.get("session_cookie"),
            login_page=root / login if login else None,
            ignore_query=ignore,
            crawl_settings={str(k): str(v) for k, v in (raw.get("crawl_settings") or {}).items()},
            _patterns=tuple(_host_pattern(host) for host in hosts),
        )

    def lookup(self, path: str, query: str) -> Route | None:
        found = self.find(path, query)
        return found[1] if found else None

    def find(self, path: str, query: str) -> tuple[str, Route] | None:
        """The route serving ``path?query`` and its key in ``routes``."""
        for key in (
            path + (f"?{query}" if query else ""),
            normalise_target(path, query, ignore=self.ignore_query),
        ):
            route = self.routes.get(key)
            if route is not None:
                return key, route
        return None

    def rewrite(self, body: str, base: str) -> str:
        """Every listed site host in ``body`` pointed at ``base`` (the replay's URL)."""
        netloc = urlsplit(base).netloc
        escaped_base = base.replace("/", "\\/")

        def swap(match: re.Match[str]) -> str:
            if match.group("scheme") is None:
                return match.group("slashes") + netloc  # protocol-relative: keep its form
            return escaped_base if "\\" in match.group("slashes") else base

        for pattern in self._patterns:
            body = pattern.sub(swap, body)
        return body


def _route(root: Path, spec: Mapping[str, Any]) -> Route:
    return Route(
        file=root / spec["file"],
        status=int(spec.get("status", 200)),
        content_type=str(spec.get("content_type", "text/html")),
    )


def normalise_target(
    path: str, query: str | None = None, *, ignore: frozenset[str] = frozenset()
) -> str:
    """``/p?b=2&a=1`` -> ``/p?a=1&b=2``: query parameters in a canonical order."""
    if query is None:
        path, _, query = path.partition("?")
    pairs = sorted(p for p in parse_qsl(query, keep_blank_values=True) if p[0] not in ignore)
    return path + (f"?{urlencode(pairs)}" if pairs else "")


def _host_pattern(host: str) -> re.Pattern[str]:
    netloc = urlsplit(host).netloc or host
    # Plain, JSON-escaped (https:\/\/host) and protocol-relative (//host) forms; never a
    # longer host that merely starts with this one.
    return re.compile(
        r"(?P<scheme>https?:)?(?P<slashes>\\?/\\?/)" + re.escape(netloc) + r"(?![\w.-])"
    )


# -- the server ----------------------------------------------------------------------------

_LOG = web.AppKey("replay_log", list)
_SERVED = web.AppKey("replay_served", Counter)
_SITE = web.AppKey("replay_site", ReplayManifest)


def _base(request: web.Request) -> str:
    # The Host header (with its port): right for direct and absolute-form (proxied)
    # requests; aiohttp's request.host drops the port of an absolute-form target.
    return f"{request.scheme}://{request.headers.get('Host') or request.host}"


def _has_session(request: web.Request, name: str) -> bool:
    cookie = SimpleCookie()
    with contextlib.suppress(Exception):
        cookie.load(request.headers.get("Cookie", ""))
    return name in cookie and bool(cookie[name].value)


async def handle(request: web.Request) -> web.StreamResponse:
    manifest = request.app[_SITE]
    path = request.path
    if path.startswith(CONTROL_PREFIX):
        return await control(request)
    entry: dict[str, Any] = {
        "method": request.method,
        "path": path + (f"?{request.query_string}" if request.query_string else ""),
        "proxied": request.raw_path.startswith(("http://", "https://")),
        "user_agent": request.headers.get("User-Agent", ""),
        "client": request.headers.get("X-Demo-Client", ""),
    }
    request.app[_LOG].append(entry)
    if path == "/robots.txt":
        entry["status"] = 200
        return web.Response(text=manifest.robots, content_type="text/plain")
    found = manifest.find(path, request.query_string)
    if found is None:
        entry["status"] = 404
        return web.Response(
            text="<html><body>not in the replay</body></html>",
            status=404,
            content_type="text/html",
        )
    key, route = found
    served = request.app[_SERVED]
    served[key] += 1
    if route.first is not None and served[key] <= route.first_times:
        route = route.first
    file, status = route.file, route.status
    if manifest.session_cookie and not _has_session(request, manifest.session_cookie):
        entry["session"] = False
        if manifest.login_page is not None:
            file, status = manifest.login_page, 200  # what a logged-out browser gets
    body = manifest.rewrite(file.read_text(encoding="utf-8"), _base(request))
    entry["status"] = status
    entry["file"] = file.relative_to(manifest.root).as_posix()
    return web.Response(text=body, status=status, content_type=route.content_type, charset="utf-8")


async def control(request: web.Request) -> web.StreamResponse:
    if request.path == CONTROL_PREFIX + "log":
        if request.method == "DELETE":
            request.app[_LOG].clear()
            return web.json_response({"cleared": True})
        return web.json_response(request.app[_LOG])
    return web.json_response({"error": "unknown control path"}, status=404)


def create_app(manifest: ReplayManifest) -> web.Application:
    app = web.Application()
    app[_SITE] = manifest
    app[_LOG] = []
    app[_SERVED] = Counter()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


# -- the harness ---------------------------------------------------------------------------


class ReplaySite(ManagedProcess):
    """``python -m harness.replay_site <site>`` as a supervised subprocess."""

    start_timeout = 20.0
    stop_timeout = 5.0

    def __init__(
        self,
        site: str,
        *,
        port: int | None = None,
        run_dir: Path | None = None,
        sites_dir: Path = SITES_DIR,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.site = site
        self.name = f"replay-{site}"
        self.sites_dir = sites_dir
        self.manifest = ReplayManifest.load(site, sites_dir)  # fail here, not in the child

    def command(self) -> Sequence[str]:
        argv = [sys.executable, "-m", "harness.replay_site", self.site]
        argv += ["--host", self.host, "--port", str(self.port)]
        if self.sites_dir != SITES_DIR:
            argv += ["--sites-dir", str(self.sites_dir)]
        return argv

    def environment(self) -> Mapping[str, str]:
        path = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def ready(self) -> bool:
        return bool(self._call("GET", "log") is not None)

    def start(self) -> Self:
        super().start()
        self.clear_log()  # readiness probes are not traffic anyone asked for
        return self

    def _call(self, method: str, name: str) -> Any:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        url = self.url + CONTROL_PREFIX + name
        request = urllib.request.Request(url, method=method)  # noqa: S310 - our loopback URL
        with opener.open(request, timeout=5) as response:
            return json.loads(response.read())

    def access_log(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "log")
        return result

    def clear_log(self) -> None:
        self._call("DELETE", "log")

    def crawl_settings(self) -> dict[str, str]:
        """Scrapy settings a crawl of this replay needs (a proxy, a session).

        A site whose profile requires proxies gets the replay itself as its proxy; a
        site that needs a logged-in session gets the replay's test session, from the
        manifest's ``crawl_settings`` (never a real credential).
        """
        settings: dict[str, str] = {}
        if SiteProfile.load(self.site).needs_proxies:
            settings["ROTATING_PROXY_LIST"] = self.url
        settings.update(self.manifest.crawl_settings)
        return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.replay_site", description=__doc__)
    parser.add_argument("site")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--sites-dir", type=Path, default=SITES_DIR)
    args = parser.parse_args(argv)
    try:
        manifest = ReplayManifest.load(args.site, args.sites_dir)
    except ManifestError as exc:
        parser.error(str(exc))
    loopback.run(
        create_app(manifest),
        args.host,
        args.port,
        lambda port: (
            f"Replay of {manifest.site} ready at http://{args.host}:{port}/ "
            f"({len(manifest.routes)} routes from {manifest.root})"
        ),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
