"""The sampling crawl of ``python -m crawlers.scaffold``: a few dozen pages of a new site,
fetched through the platform's own fetch settings.

``sample_site`` runs ``python -m crawlers.scaffold.sample`` in a subprocess (Scrapy's
reactor cannot restart in one process, and the CLI stays testable without one). The
child loads the project settings (the platform add-on: block detection, retries,
proxies, rendering) but never the shared frontier or an item store: the scheduler and
dupefilter are Scrapy's own, REDIS_URL, ITEM_PIPELINES and FEEDS are switched off.

The crawl starts at the URL and the site's sitemaps (robots.txt ``Sitemap:`` lines, else
``/sitemap.xml`` and ``/sitemap_index.xml``; an index is followed one level), stays on
the URL's host, obeys robots.txt and fetches a few pages at a time. Of the links found it
fetches next the one whose URL shape (``_shape``: path segments and the first) was fetched
least, then the shallowest: a balanced, breadth-first sample. Sitemap URLs take at most a
third of it. Each page is written as one JSON line to the plan's output file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.project import get_project_settings
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from core.config import REPO_ROOT
from core.fetch.blocks import classify as block_verdict
from crawlers.runtime.sidecrawl import isolate
from crawlers.scaffold.page import Page
from crawlers.spiders.common import is_loopback
from crawlers.spiders.generic import read_sitemap

# Statuses that reach the callback (recorded and reported) instead of being dropped.
_HANDLED_STATUSES = list(range(400, 600))
SITEMAP_PROBES = ("/sitemap.xml", "/sitemap_index.xml")
MAX_CHILD_SITEMAPS = 5
IN_FLIGHT = 4  # pages fetched at a time: a modest, polite sample


class SampleError(RuntimeError):
    """The sampling crawl failed or fetched nothing (one line, for the operator)."""


@dataclass(frozen=True)
class Sample:
    pages: list[Page]
    sitemaps: list[str]  # sitemap URLs that answered with a sitemap
    errors: dict[str, str]  # URL -> why it got no response
    skipped: list[str] = field(default_factory=list)  # URLs robots.txt forbids


def sample_site(
    url: str,
    pages: int,
    *,
    out: Path,
    settings: Mapping[str, Any] | None = None,
    timeout: float = 600.0,
) -> Sample:
    """Sample up to ``pages`` pages from ``url`` in a subprocess; its records land in
    ``out`` (JSON lines), read back here."""
    plan = {"url": url, "pages": pages, "out": str(out), "settings": dict(settings or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "crawlers.scaffold.sample"],
        cwd=REPO_ROOT,  # its scrapy.cfg names the project settings
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a timeout kills the whole group (browsers included)
    )
    try:
        _, stderr = process.communicate(json.dumps(plan).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise SampleError(f"the sampling crawl took over {timeout:.0f}s; try --pages") from None
    records = read_records(out) if out.exists() else []
    if process.returncode != 0 and not records:
        tail = stderr.decode("utf-8", errors="replace").strip().splitlines()[-1:] or ["?"]
        raise SampleError(f"the sampling crawl failed (exit {process.returncode}): {tail[0]}")
    return to_sample(records)


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def to_sample(records: list[dict[str, Any]]) -> Sample:
    pages, sitemaps, errors, skipped = [], [], {}, []
    for record in records:
        if record.get("skipped"):
            skipped.append(record["url"])
        elif record.get("kind") == "sitemap":
            if not record.get("depth"):  # an index's sitemaps are the index's to name
                sitemaps.append(record["url"])
        elif record.get("error") and not record.get("html"):
            errors[record["url"]] = record["error"]
        else:
            pages.append(
                Page(
                    url=record["url"],
                    status=int(record.get("status") or 0),
                    html=record.get("html") or "",
                    source=record.get("source") or "crawl",
                    blocked=record.get("blocked"),
                )
            )
    return Sample(pages, list(dict.fromkeys(sitemaps)), errors, skipped)


# -- the child process -------------------------------------------------------------------------


class SampleSpider(Spider):
    """Fetches ``budget`` pages of one host, balanced over URL shapes (see the module)."""

    name = "scaffold_sample"

    def __init__(self, url: str, budget: int, out: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = url
        parts = urlsplit(url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.host = parts.netloc
        self.allowed_domains = [parts.hostname or ""]
        self.budget = budget
        self.sitemap_budget = budget // 3
        self.out_path = Path(out)
        self.out: IO[str] | None = None  # opened by the first record, closed with the spider
        self.seen: set[str] = {url}
        self.candidates: list[tuple[str, int, str]] = []  # (url, depth, source)
        self.shapes: Counter[str] = Counter()
        self.scheduled = 0
        self.from_sitemaps = 0
        self.in_flight = 0
        self.sitemap_requests = 0
        # Same host by netloc (LinkExtractor's allow_domains would compare a port too).
        self.extractor = LinkExtractor()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SampleSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.closed_out, signal=signals.spider_closed)
        return spider

    async def start(self) -> Any:
        self.scheduled += 1
        self.in_flight += 1
        yield self._page_request(self.start_url, 0, "start")
        self.sitemap_requests += 1
        yield Request(
            self.origin + "/robots.txt",
            callback=self.parse_robots,
            errback=self.robots_failed,
            meta={"handle_httpstatus_all": True, "dont_obey_robotstxt": True},
            priority=10,
        )

    # -- pages -----------------------------------------------------------------------------

    def _page_request(self, url: str, depth: int, source: str) -> Request:
        self.shapes[_shape(url)] += 1
        return Request(
            url,
            callback=self.parse_page,
            errback=self.page_failed,
            meta={"depth_": depth, "source": source, "handle_httpstatus_list": _HANDLED_STATUSES},
            dont_filter=True,
        )

    def parse_page(self, response: Response) -> Iterator[Request]:
        self.in_flight -= 1
        meta = response.meta
        html = response.text if isinstance(response, TextResponse) else ""
        headers = response.headers.to_unicode_dict()
        verdict = block_verdict(response.status, headers, response.body)
        self._write(
            {
                "url": response.url,
                "status": response.status,
                "html": html,
                "source": meta.get("source"),
                "blocked": None if verdict.ok else str(verdict),
            }
        )
        if isinstance(response, TextResponse) and html and verdict.ok:
            depth = meta.get("depth_", 0) + 1
            for link in self.extractor.extract_links(response):
                target = link.url.split("#", 1)[0]
                if link.nofollow or target in self.seen or urlsplit(target).netloc != self.host:
                    continue
                self.seen.add(target)
                self.candidates.append((target, depth, "crawl"))
        yield from self._take()

    def page_failed(self, failure: Any) -> Iterator[Request]:
        self.in_flight -= 1
        request = failure.request
        if failure.check(IgnoreRequest) and "robots.txt" in failure.getErrorMessage():
            # Never fetched: a page robots.txt forbids costs the sample nothing.
            self.scheduled -= 1
            self._write({"url": request.url, "skipped": "robots.txt"})
            yield from self._take()
            return
        response = getattr(failure.value, "response", None)
        record: dict[str, Any] = {
            "url": request.url,
            "error": f"{failure.type.__name__}: {failure.getErrorMessage()}",
            "source": request.meta.get("source"),
        }
        if response is not None and isinstance(response, TextResponse):
            record |= {"status": response.status, "html": response.text, "blocked": "refused"}
        self._write(record)
        yield from self._take()

    def _take(self) -> Iterator[Request]:
        """The next candidates, least-sampled URL shape and shallowest first."""
        while self.candidates and self.in_flight < IN_FLIGHT and self.scheduled < self.budget:
            # Sitemap URLs may still come (or wait): keep their share for them until then.
            sitemaps_due = self.sitemap_requests > 0 or any(
                c[2] == "sitemap" for c in self.candidates
            )
            reserve = max(0, self.sitemap_budget - self.from_sitemaps) if sitemaps_due else 0
            crawl_open = self.scheduled - self.from_sitemaps < self.budget - reserve
            sitemap_open = self.from_sitemaps < self.sitemap_budget
            open_to = [
                c for c in self.candidates if (sitemap_open if c[2] == "sitemap" else crawl_open)
            ]
            if not open_to:
                return
            best = min(open_to, key=lambda c: (self.shapes[_shape(c[0])], c[1]))
            self.candidates.remove(best)
            self.scheduled += 1
            self.in_flight += 1
            if best[2] == "sitemap":
                self.from_sitemaps += 1
            yield self._page_request(*best)

    def idle(self) -> None:
        requests = list(self._take())
        for request in requests:
            self.crawler.engine.crawl(request)
        if requests:
            raise DontCloseSpider

    # -- sitemaps --------------------------------------------------------------------------

    def parse_robots(self, response: Response) -> Iterator[Request]:
        self.sitemap_requests -= 1
        found = []
        if response.status == 200 and isinstance(response, TextResponse):
            found = list(sitemap_urls_from_robots(response.body, self.origin))
        for url in found or [self.origin + path for path in SITEMAP_PROBES]:
            yield self._sitemap_request(url, depth=0)
        yield from self._take()

    def robots_failed(self, failure: Any) -> Iterator[Request]:
        self.sitemap_requests -= 1
        for path in SITEMAP_PROBES:
            yield self._sitemap_request(self.origin + path, depth=0)

    def _sitemap_request(self, url: str, depth: int) -> Request:
        self.sitemap_requests += 1
        return Request(
            url,
            callback=self.parse_sitemap,
            errback=self.sitemap_failed,
            meta={"sitemap_depth": depth, "handle_httpstatus_all": True},
            dont_filter=True,
        )

    def parse_sitemap(self, response: Response) -> Iterator[Request]:
        self.sitemap_requests -= 1
        sitemap = _sitemap(response)
        if sitemap is not None:
            depth = response.meta["sitemap_depth"]
            self._write({"kind": "sitemap", "url": response.url, "depth": depth})
            locs = [entry["loc"] for entry in sitemap if entry.get("loc")]
            if sitemap.type == "sitemapindex":
                if depth == 0:
                    for url in _spread(locs, MAX_CHILD_SITEMAPS):
                        yield self._sitemap_request(url, depth=1)
            else:
                same_host = [u for u in locs if urlsplit(u).netloc == self.host]
                for url in _spread(same_host, 3 * max(1, self.sitemap_budget)):
                    if url not in self.seen:
                        self.seen.add(url)
                        self.candidates.append((url, 1, "sitemap"))
        yield from self._take()

    def sitemap_failed(self, failure: Any) -> Iterator[Request]:
        self.sitemap_requests -= 1
        yield from self._take()

    # -- output ----------------------------------------------------------------------------

    def _write(self, record: Mapping[str, Any]) -> None:
        if self.out is None:
            self.out = self.out_path.open("a", encoding="utf-8")
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()

    def closed_out(self, spider: Spider) -> None:
        if self.out is not None:
            self.out.close()


def _sitemap(response: Response) -> Sitemap | None:
    if response.status != 200:
        return None
    try:
        return read_sitemap(response.body)
    except ValueError:  # a probed path that is no sitemap: nothing to sample from it
        return None


def _spread(items: list[str], n: int) -> list[str]:
    """Up to ``n`` items evenly spread over ``items`` (first and last included)."""
    if len(items) <= n:
        return items
    step = (len(items) - 1) / max(1, n - 1)
    return list(dict.fromkeys(items[round(i * step)] for i in range(n)))


def _shape(url: str) -> str:
    """A URL's shape for balancing the sample: its number of path segments and its first
    one (``/c/bikes`` and ``/c/tents`` are one shape, ``/p/red-tent-5003`` another), so a
    menu of a hundred categories does not fill the sample before one product is read."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    first = segments[0] if len(segments) > 1 else ""
    return f"{len(segments)}:{first}:{'?' if parts.query else ''}"


def main() -> int:
    plan = json.load(sys.stdin)
    settings = get_project_settings()
    settings.setdict(
        {
            # A polite sample: robots.txt obeyed, a few requests at a time (loopback sites
            # are our own: no delay).
            "ROBOTSTXT_OBEY": True,
            "CONCURRENT_REQUESTS_PER_DOMAIN": IN_FLIGHT,
            "DOWNLOAD_DELAY": 0.0 if is_loopback(plan["url"]) else 0.5,
            "LOG_LEVEL": "INFO",
        },
        priority="spider",
    )
    settings.setdict(plan.get("settings") or {}, priority="cmdline")
    # Never the shared frontier, never an item store: Scrapy's own scheduler and
    # dupefilter, no Redis, no pipelines, no feeds.
    isolate(settings)
    process = CrawlerProcess(settings)
    process.crawl(SampleSpider, url=plan["url"], budget=int(plan["pages"]), out=plan["out"])
    process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
