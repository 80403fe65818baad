"""Every response gets one verdict (``core.fetch.blocks.classify``), counted once per crawl.

The ban policy of the rotating proxies and the block/retry middleware both need the
verdict of the same response; ``ResponseClassifier.of(crawler)`` is shared between them
and remembers verdicts per response object, so a response is classified and counted
exactly once whichever asks first.

Stats (integers, so the frontier pushes them into the job's stats hash):

- ``responses/classified``: every classified response; ``responses/ok``, ``responses/error``
- ``blocks/total`` = blocked + captcha + throttled; ``blocks/blocked``, ``blocks/captcha``,
  ``blocks/throttled``; ``blocks/reason/<rule>`` (e.g. ``datadome_challenge``, ``http_403``)
- ``responses/error_status/<code>``
- ``responses/robots_txt``: robots.txt fetches (classified too, but not pages)
- ``responses/robots_txt_missing``: robots.txt answered 4xx (Scrapy's RobotsTxtMiddleware
  fetch; a site without robots.txt is normal, every path is then allowed): not an
  error, so ``responses/error`` counts only the pages the crawl asked for
- ``blocks/rate`` (float, local only) = blocks/total / responses/classified
"""

from __future__ import annotations

import json
import re
import weakref
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings

from core.fetch.blocks import BlockRules, Verdict, classify
from crawlers.runtime.services import CrawlServices

_SLUG = re.compile(r"[^a-z0-9]+")
_SCOPE_SUFFIX = re.compile(r" (?:in <title>|on a thin page)$")


def rules_from_settings(settings: BaseSettings) -> BlockRules:
    """The site's block rules: the generic markers plus the profile's ``BLOCK_MARKERS``."""
    values: dict[str, Any] = {}
    markers = settings.get("BLOCK_MARKERS")
    if isinstance(markers, str):
        # From `-s BLOCK_MARKERS=...`: a JSON list, or one pattern.
        markers = json.loads(markers) if markers.lstrip().startswith("[") else [markers]
    if markers:
        values["BLOCK_MARKERS"] = list(markers)
    for name in ("BLOCK_THIN_TEXT_CHARS", "BLOCK_MIN_HTML_BYTES"):
        if settings.get(name) is not None:
            values[name] = settings.getint(name)
    return BlockRules.from_settings(values)


def reason_slug(verdict: Verdict) -> str:
    """``"HTTP 429 (Retry-After: 1)"`` -> ``http_429``; ``"access denied in <title>"`` ->
    ``access_denied``: stable, low-cardinality stat names."""
    reason = _SCOPE_SUFFIX.sub("", verdict.reason.split(" (", 1)[0])
    return _SLUG.sub("_", reason.lower()).strip("_") or "unknown"


def is_robots_txt_fetch(request: Request) -> bool:
    """Scrapy's RobotsTxtMiddleware's own request (``dont_obey_robotstxt``, ``/robots.txt``)."""
    return bool(request.meta.get("dont_obey_robotstxt")) and (
        urlsplit(request.url).path == "/robots.txt"
    )


class ResponseClassifier:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.rules = rules_from_settings(crawler.settings)
        self._verdicts: weakref.WeakKeyDictionary[Response, Verdict] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, crawler: Crawler) -> ResponseClassifier:
        """The crawl's one classifier (a component of its services): every middleware
        that asks sees each response classified and counted once."""
        return CrawlServices.of(crawler).component(cls)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResponseClassifier:
        return cls(crawler)

    def verdict(self, request: Request, response: Response) -> Verdict:
        """The response's verdict; classified and counted on the first call only."""
        known = self._verdicts.get(response)
        if known is not None:
            return known
        verdict = classify(response.status, response.headers, response.body, rules=self.rules)
        self._verdicts[response] = verdict
        self.count(verdict, robots_txt=is_robots_txt_fetch(request))
        return verdict

    def count(self, verdict: Verdict, *, robots_txt: bool = False) -> None:
        """Count one classified response: a response object's through ``verdict``; a
        document a browser left by itself (a challenge it passed) through here."""
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("responses/classified")
        if robots_txt:
            stats.inc_value("responses/robots_txt")  # not a page of the site's
        if verdict.is_block:
            stats.inc_value("blocks/total")
            stats.inc_value(f"blocks/{verdict.kind}")
            stats.inc_value(f"blocks/reason/{reason_slug(verdict)}")
        elif robots_txt and verdict.kind == "error" and 400 <= verdict.status < 500:
            stats.inc_value("responses/robots_txt_missing")
        else:
            stats.inc_value(f"responses/{verdict.kind}")
            if verdict.kind == "error":
                stats.inc_value(f"responses/error_status/{verdict.status}")
        classified = stats.get_value("responses/classified", 0)
        blocks = stats.get_value("blocks/total", 0)
        stats.set_value("blocks/rate", round(blocks / classified, 4) if classified else 0.0)
