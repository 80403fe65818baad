"""Fetch a site's sample pages through the platform's normal fetch stack.

``fetch_sample`` runs ``python -m fingerprints.sampling.fetch`` as a subprocess (Scrapy's
reactor cannot restart in one process). The child loads the project settings and the
site's own spider class, so the site profile's settings (politeness, robots.txt,
rendering, proxies) and any middleware the project configures apply exactly as in a
real crawl. It swaps in a ``start`` that yields only the sample requests and a callback
that records each response.

What the sampler must never do: touch the frontier or store anything. ``REDIS_URL`` is
removed from its environment (so Scrapy's own scheduler runs), item pipelines and feeds
are switched off, and results travel back over stdout: no files are written.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.project import get_project_settings

from core.config import REPO_ROOT
from crawlers.profiles import PROFILES_DIR, SiteProfile
from crawlers.runtime.sidecrawl import isolate
from crawlers.spiders.base import SiteSpider
from crawlers.spiders.generic import GenericSpider, generic_spider

RECORD_PREFIX = "FPSAMPLE "
PAGE_TYPE_META = "fingerprint_page_type"
# Statuses that reach the callback (so they can be classified) instead of being dropped by
# HttpErrorMiddleware; redirects stay with RedirectMiddleware, retries with RetryMiddleware.
_HANDLED_STATUSES = [*range(400, 600)]
_SCRUBBED_ENV = ("REDIS_URL",)


@dataclass(frozen=True)
class Page:
    """One page of the sample: fetched live, or read from a fixture file."""

    url: str
    page_type: str
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None  # set when no response was received
    path: str = ""  # the requested path (live) or fixture file

    @property
    def content_type(self) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == "content-type":
                return value
        return None


class SamplerError(RuntimeError):
    """The sampler subprocess failed or returned nothing usable."""


def fetch_sample(
    site: str,
    sample: Mapping[str, Sequence[str]],
    *,
    base_url: str | None = None,
    timeout: float = 300.0,
    settings: Mapping[str, Any] | None = None,
    profiles_dir: Path | None = None,
) -> list[Page]:
    """One ``Page`` per requested path (an ``error`` page when nothing came back).

    ``settings`` (JSON values) are set on the sampler's crawl as ``-s NAME=value`` would
    be; they cannot switch the frontier or an item store back on. ``profiles_dir``: the
    site's profile is read from there (a site kept outside this repository), by the
    site's spider if the project has one, else by a plain spider with its settings.
    """
    plan = {
        "site": site,
        "base_url": base_url,
        "sample": {k: list(v) for k, v in sample.items()},
        "settings": dict(settings or {}),
        "profiles_dir": str(profiles_dir.resolve()) if profiles_dir else None,
    }
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env["SCRAPY_SETTINGS_MODULE"] = "crawlers.settings"
    python_path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{REPO_ROOT}{os.pathsep}{python_path}" if python_path else str(REPO_ROOT)
    process = subprocess.Popen(
        [sys.executable, "-m", "fingerprints.sampling.fetch"],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a timeout kills the whole group (browsers included)
    )
    try:
        stdout, stderr = process.communicate(json.dumps(plan).encode(), timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise SamplerError(f"sampler timed out after {timeout:.0f}s") from exc
    records = [
        json.loads(line[len(RECORD_PREFIX) :])
        for line in stdout.decode("utf-8", errors="replace").splitlines()
        if line.startswith(RECORD_PREFIX)
    ]
    if process.returncode != 0 and not records:
        tail = "\n".join(stderr.decode("utf-8", errors="replace").splitlines()[-15:])
        raise SamplerError(f"sampler exited with {process.returncode}:\n{tail}")
    by_request = {(r["page_type"], r["path"]): r for r in records}
    pages = []
    for page_type, paths in sample.items():
        for path in paths:
            record = by_request.get((page_type, path))
            if record is None:
                error = "no response: the sampler ended before this page"
                pages.append(Page(path, page_type, 0, {}, b"", error, path))
                continue
            pages.append(
                Page(
                    url=record.get("url") or path,
                    page_type=page_type,
                    status=int(record.get("status") or 0),
                    headers=dict(record.get("headers") or {}),
                    body=base64.b64decode(record.get("body") or ""),
                    error=record.get("error"),
                    path=path,
                )
            )
    return pages


# -- the child process -------------------------------------------------------------------------


def _emit(record: Mapping[str, Any]) -> None:
    sys.stdout.write(RECORD_PREFIX + json.dumps(record) + "\n")
    sys.stdout.flush()


class _SamplerMixin:
    """Put before the site's spider class: same settings and request building, new start."""

    sample_plan: Mapping[str, Sequence[str]] = {}

    async def start(self) -> AsyncIterator[Any]:
        base = str(getattr(self, "base_url", "") or "").rstrip("/")
        for page_type, paths in self.sample_plan.items():
            for path in paths:
                meta = {
                    PAGE_TYPE_META: page_type,
                    "fingerprint_path": path,
                    "handle_httpstatus_list": _HANDLED_STATUSES,
                }
                entry: dict[str, Any] = {
                    # A path of the site, or an absolute URL (a callback's follow-up).
                    "url": path if "://" in path else base + path,
                    "callback": "sample_page",
                    "errback": "sample_failed",
                    "dont_filter": True,
                    "meta": meta,
                }
                if hasattr(self, "make_request_from_entry"):
                    # The site spider's own request builder (job tag, render/proxy meta).
                    yield self.make_request_from_entry(entry)
                else:
                    yield Request(
                        entry["url"],
                        callback=self.sample_page,
                        errback=self.sample_failed,
                        dont_filter=True,
                        meta=meta,
                    )

    def start_requests(self) -> list[Any]:
        return []

    def sample_page(self, response: Any) -> None:
        _emit(_record(response.meta, response.url, response))

    def sample_failed(self, failure: Any) -> None:
        request = failure.request
        # A middleware that gives up on a block page (HttpError, or a block/retry
        # middleware's own exception) may still carry the response: keep it, so the gate
        # reports "blocked" rather than an anonymous fetch failure.
        response = getattr(failure.value, "response", None)
        error = f"{failure.type.__name__}: {failure.getErrorMessage()}"
        _emit(_record(request.meta, request.url, response, error))


def _record(
    meta: Mapping[str, Any], url: str, response: Any | None, error: str | None = None
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "page_type": meta[PAGE_TYPE_META],
        "path": meta["fingerprint_path"],
        "url": getattr(response, "url", None) or url,
    }
    if response is None:
        record["error"] = error or "no response"
        return record
    try:
        record |= {
            "status": response.status,
            "headers": dict(response.headers.to_unicode_dict()),
            "body": base64.b64encode(response.body).decode("ascii"),
        }
        if error:
            record["note"] = error
    except Exception as exc:  # a page must never vanish silently from the sample
        record["error"] = f"sampler could not record the response: {exc!r}"
    return record


def _spider_class(
    site: str, settings: Any, sample: Mapping[str, Sequence[str]], profiles_dir: Path = PROFILES_DIR
) -> type:
    try:
        base: type = get_spider_loader(settings).load(site)
    except KeyError:
        base = _profile_spider(site, Spider, profiles_dir)
    if profiles_dir != PROFILES_DIR and not _has_own_module(base):
        # A profile-driven site: its callbacks are the pages of the other directory's profile.
        profile = SiteProfile.load(site, profiles_dir)
        if profile.pages:
            base = generic_spider(profile)
    attrs: dict[str, Any] = {"name": site, "sample_plan": sample}
    if issubclass(base, SiteSpider) and profiles_dir != PROFILES_DIR:
        # SiteSpider.load_profile keeps a profile whose site is the spider's name: the
        # project's spider, configured by the profile from the other directory.
        attrs["_profile"] = SiteProfile.load(site, profiles_dir)
    return type(f"{base.__name__}Sampler", (_SamplerMixin, base), attrs)


def _has_own_module(spider: type) -> bool:
    return issubclass(spider, SiteSpider) and not issubclass(spider, GenericSpider)


def _profile_spider(site: str, spider: type, profiles_dir: Path = PROFILES_DIR) -> type:
    """A plain spider with the site profile's settings, for a site without a spider yet."""
    profile = SiteProfile.load(site, profiles_dir)

    class ProfileSpider(spider):
        name = site
        base_url = profile.base_url

        @classmethod
        def update_settings(cls, settings: Any) -> None:
            super().update_settings(settings)
            settings.setdict(profile.scrapy_settings(), priority="spider")

    return ProfileSpider


def main() -> int:
    plan = json.load(sys.stdin)
    settings = get_project_settings()
    settings.setdict(plan.get("settings") or {}, priority="cmdline")
    # Belt and braces on top of the scrubbed environment: never the shared frontier,
    # never an item store.
    isolate(settings)
    profiles_dir = Path(plan["profiles_dir"]) if plan.get("profiles_dir") else PROFILES_DIR
    spider_class = _spider_class(plan["site"], settings, plan["sample"], profiles_dir)
    kwargs: dict[str, Any] = {}
    if plan.get("base_url"):
        kwargs["base_url"] = plan["base_url"]
    if issubclass(spider_class, SiteSpider):
        kwargs["job_id"] = f"fingerprint-{plan['site']}"
    process = CrawlerProcess(settings)
    process.crawl(spider_class, **kwargs)
    process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
