"""Helpers for the production-site tests: saved real pages, fixtures, replay crawls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse

from core.fetch.blocks import BlockRules, Verdict, classify
from crawlers.profiles import SiteProfile, profile_sites
from harness.replay_site import ReplaySite

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL_PAGES = REPO_ROOT.parent / "shared" / "real-pages"
SITES_DIR = REPO_ROOT / "fingerprints" / "sites"
# The production sites: every profile whose fixtures are replayed (fingerprints/sites/
# <site>/replay.json). The demo shop is served by standins.demo_site, not replayed.
SITES = tuple(site for site in profile_sites() if (SITES_DIR / site / "replay.json").is_file())


def real_page(name: str) -> Path:
    """A saved real page; skips the test when the shared folder is not there."""
    path = REAL_PAGES / name
    if not REAL_PAGES.is_dir():
        pytest.skip(f"saved real pages not found at {REAL_PAGES} (not part of the repository)")
    if not path.is_file():
        pytest.skip(f"saved real page {name} not found under {REAL_PAGES}")
    return path


def response(path: Path, url: str, body: bytes | None = None) -> HtmlResponse:
    data = body if body is not None else path.read_bytes()
    return HtmlResponse(url=url, body=data, encoding="utf-8")


def real_response(name: str, url: str) -> HtmlResponse:
    return response(real_page(name), url)


def fixture(site: str, relative: str) -> Path:
    return SITES_DIR / site / relative


def fixture_response(site: str, relative: str, url: str) -> HtmlResponse:
    return response(fixture(site, relative), url)


def site_rules(site: str) -> BlockRules:
    """The site's block rules, as the fetch middleware builds them from its profile."""
    return BlockRules.from_settings(SiteProfile.load(site).settings)


def verdict(site: str, body: bytes, status: int = 200) -> Verdict:
    headers = {"Content-Type": "text/html; charset=utf-8"}
    return classify(status, headers, body, rules=site_rules(site))


@dataclass
class CrawlResult:
    returncode: int
    items: list[dict[str, Any]]
    log: str

    def errors(self) -> list[str]:
        return [line for line in self.log.splitlines() if " ERROR: " in line]

    def stat(self, name: str) -> int | None:
        for line in self.log.splitlines():
            stripped = line.strip().rstrip(",")
            if stripped.startswith(f"'{name}':"):
                return int(stripped.split(":", 1)[1].strip().rstrip("}"))
        return None


def crawl(
    site: str,
    replay: ReplaySite,
    out_dir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> CrawlResult:
    """``scrapy crawl <site> -a base_url=<replay>`` as operators run it, no services."""
    out = out_dir / f"{site}-items.jsonl"
    base_env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    base_env.update(env or {})
    command = [sys.executable, "-m", "scrapy", "crawl", site, "-O", str(out)]
    for name, value in replay.crawl_settings().items():
        command += ["-s", f"{name}={value}"]
    # No politeness overrides: spiders crawl a loopback replay without delays themselves.
    command += ["-a", f"base_url={replay.url}", *args]
    result = subprocess.run(
        command, cwd=REPO_ROOT, env=base_env, capture_output=True, text=True, timeout=timeout
    )
    items = []
    if out.exists():
        items = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return CrawlResult(result.returncode, items, result.stderr)
