"""Run real ``scrapy crawl`` / ``scrapy runspider`` processes and read back what they did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.statscollectors import MemoryStatsCollector, StatsT

from standins.demo_site.catalog import Catalog
from tests.argv import command_line, descendants

REPO_ROOT = Path(__file__).resolve().parents[3]
STATS_PATH_SETTING = "TEST_STATS_PATH"


class JsonStatsCollector(MemoryStatsCollector):
    """Scrapy's default collector, which also writes the final stats to a JSON file."""

    def _persist_stats(self, stats: StatsT) -> None:
        super()._persist_stats(stats)
        path = self._crawler.settings.get(STATS_PATH_SETTING)
        if path:
            Path(path).write_text(json.dumps(stats, default=str, sort_keys=True))


@dataclass
class Crawl:
    """A crawl subprocess and where it writes."""

    process: subprocess.Popen[bytes]
    items_path: Path
    stats_path: Path
    log_path: Path
    started: float

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self, timeout: float) -> CrawlResult:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"crawl did not finish within {timeout}s:\n{self.log_tail()}"
            ) from None
        items = []
        if self.items_path.exists():
            items = [json.loads(line) for line in self.items_path.read_text().splitlines()]
        stats = json.loads(self.stats_path.read_text()) if self.stats_path.exists() else {}
        log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return CrawlResult(code, items, stats, log, time.monotonic() - self.started)

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return "<no log>"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class CrawlResult:
    returncode: int
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    log: str
    duration: float

    def stat(self, name: str, default: Any = 0) -> Any:
        return self.stats.get(name, default)

    def stats_under(self, prefix: str) -> dict[str, Any]:
        return {k: v for k, v in self.stats.items() if k.startswith(prefix)}

    def log_lines(self, marker: str) -> list[str]:
        return [line for line in self.log.splitlines() if marker in line]


def start_crawl(
    tmp_path: Path,
    *,
    base_url: str,
    spider: str = "demo",
    spider_file: Path | None = None,
    proxies: Sequence[str] = (),
    settings: Mapping[str, object] | None = None,
) -> Crawl:
    """``scrapy crawl <spider>`` (or ``runspider <file>``) against ``base_url``.

    Proxies travel in the environment (``PROXY_LIST``), never on the command line, where
    any local user could read their credentials.
    """
    items_path = tmp_path / "items.jsonl"
    stats_path = tmp_path / "stats.json"
    log_path = tmp_path / "crawl.log"
    merged: dict[str, object] = {
        "STATS_CLASS": "tests.crawlers.fetch.support.JsonStatsCollector",
        STATS_PATH_SETTING: str(stats_path),
        "LOG_FILE": str(log_path),
        "LOG_LEVEL": "INFO",
        # The store pipelines are another suite's subject; these tests read the feed.
        "ITEM_PIPELINES": "{}",
        **(settings or {}),
    }
    if spider_file is not None:
        argv = [sys.executable, "-m", "scrapy", "runspider", str(spider_file)]
    else:
        argv = [sys.executable, "-m", "scrapy", "crawl", spider]
    argv += ["-a", f"base_url={base_url}", "-O", str(items_path)]
    for name, value in merged.items():
        argv += ["-s", f"{name}={value}"]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "ELASTICSEARCH_URL", "PROXY_LIST", "PROXY_LIST_FILE")
    }
    if proxies:
        env["PROXY_LIST"] = ",".join(proxies)
    process = subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return Crawl(process, items_path, stats_path, log_path, time.monotonic())


def run_crawl(tmp_path: Path, *, timeout: float = 180, **kwargs: Any) -> CrawlResult:
    return start_crawl(tmp_path, **kwargs).wait(timeout)


def parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])  # the name may contain spaces


def is_chromium(pid: int) -> bool:
    # Chromium's children rewrite their command line into one space-separated string.
    argv = " ".join(command_line(pid)).split()
    return bool(argv) and "chrom" in Path(argv[0]).name


def browser_pids(crawler_pid: int) -> list[int]:
    """Chromium's browser processes under a crawl: the Chromium processes whose parent
    is not Chromium (the driver launched them); renderers and zygotes are their children."""
    chromium = [pid for pid in descendants(crawler_pid) if is_chromium(pid)]
    return [pid for pid in chromium if parent_pid(pid) not in chromium]


def expected_products(catalog: Catalog, base_url: str, skus: set[str] | None = None) -> dict:
    """What the crawl must yield, by SKU (all products, or those in ``skus``)."""
    return {
        product.sku: product.to_dict(base_url)
        for product in catalog.products
        if skus is None or product.sku in skus
    }


def mismatches(items: list[dict[str, Any]], expected: dict[str, dict]) -> dict[str, Any]:
    """Per SKU, the fields that differ from the catalog (job_id is the crawl's own)."""
    wrong: dict[str, Any] = {}
    for item in items:
        want = expected.get(item["sku"])
        if want is None:
            wrong[item["sku"]] = "not expected"
            continue
        diff = {k: (item.get(k), v) for k, v in want.items() if item.get(k) != v}
        if diff:
            wrong[item["sku"]] = diff
    return wrong


def assert_no_secret(secret: str, *texts: str | dict | list) -> None:
    for text in texts:
        blob = text if isinstance(text, str) else json.dumps(text, default=str)
        assert secret not in blob, "a proxy credential leaked"
