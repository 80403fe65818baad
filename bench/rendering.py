"""Rendered pages/s: one shared browser with contexts vs a browser per page; browser memory.

    .venv/bin/python -m bench.rendering [--runs 3] [--pages 200] [--baseline-pages 15] \\
        [--memory-pages 1000]

**shared**: a Scrapy crawl through the platform's fetch stack (``RENDER_MODE=always``);
**per page**: Playwright and Chromium started for every URL. Both wait for the demo
shop's script-rendered reviews. Pages/s (median of ``--runs``, interleaved, and their
ratio), CPU seconds per page split by process kind (from /proc), and the memory (RSS and
PSS) of the whole process tree over ``--memory-pages``. Method and columns:
docs/fetching.md "Benchmark (``bench/rendering.py``)" and "Rendering cost".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import smoke
from core.config import REPO_ROOT, get_settings
from harness.demo_site import DemoSite

REVIEWS_READY = (
    "() => { const box = document.getElementById('reviews');"
    " return !box || box.dataset.loaded === 'true'; }"
)
CONTEXTS = 4


# -- the workers (run as subprocesses of the driver) ---------------------------------------


def run_shared(urls: list[str], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Render ``urls`` with one Scrapy crawl through the platform's fetch stack."""
    # Heavy third-party imports in the worker only: the driver process never needs them.
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings
    from scrapy_playwright.page import PageMethod

    timings: dict[str, float] = {}
    rendered: list[int] = []

    class RenderBench(scrapy.Spider):
        name = "render_bench"

        async def start(self) -> AsyncIterator[scrapy.Request]:
            timings["start"] = time.monotonic()
            for index, url in enumerate(urls):
                yield scrapy.Request(
                    url,
                    meta={
                        "playwright_context": f"bench-{index % CONTEXTS}",
                        "playwright_page_methods": [PageMethod("wait_for_function", REVIEWS_READY)],
                    },
                    dont_filter=True,
                )

        def parse(self, response: Any) -> Iterator[dict[str, Any]]:
            rendered.append(len(response.css("#reviews .review")))
            timings["end"] = time.monotonic()
            return iter(())

    settings = get_project_settings()
    settings.setdict(
        {
            "RENDER_MODE": "always",
            "ROBOTSTXT_OBEY": False,
            "LOG_LEVEL": "WARNING",
            "ITEM_PIPELINES": {},
            "AUTOTHROTTLE_ENABLED": False,
            "ROTATING_PROXY_LIST": [],
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            **(overrides or {}),
        },
        priority="cmdline",
    )
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(RenderBench)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    return {
        "pages": len(rendered),
        "seconds": timings["end"] - timings["start"],
        "failed": len(urls) - len(rendered),
        "hard_timeouts": stats.get("render/hard_timeouts", 0),
    }


def run_per_page(urls: list[str], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Seed 000's scrape_js_page, once per URL: a Playwright and a browser per page."""
    # In the worker only, like run_shared's imports.
    from playwright.sync_api import sync_playwright

    executable = get_settings().chromium_executable()
    options = {"executable_path": executable, "args": ["--no-sandbox", "--disable-gpu"]}
    started = time.monotonic()
    pages = 0
    for url in urls:
        with sync_playwright() as p:
            browser = p.chromium.launch(**options)
            try:
                page = browser.new_page()
                page.goto(url, timeout=30000)
                page.wait_for_function(REVIEWS_READY)
                content = page.content()
                pages += 'data-loaded="true"' in content
            finally:
                browser.close()
    return {"pages": pages, "seconds": time.monotonic() - started, "failed": len(urls) - pages}


# -- the driver -------------------------------------------------------------------------------


def worker(
    kind: str, urls: list[str], out: Path, overrides: dict[str, Any]
) -> subprocess.Popen[bytes]:
    spec = json.dumps({"kind": kind, "urls": urls, "out": str(out), "settings": overrides})
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    env.pop("PROXY_LIST", None)
    env.pop("PROXY_LIST_FILE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.rendering", "--worker"],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    process.stdin.write(spec.encode())
    process.stdin.close()
    return process


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


PROCESS_KINDS = ("scrapy", "driver", "browser", "renderer", "gpu", "network", "other")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_kind(pid: int, root: int) -> str:
    """Which part of the rendering stack ``pid`` is, from its command line."""
    if pid == root:
        return "scrapy"  # the worker: Scrapy, scrapy-playwright, the Playwright client
    try:
        # Chromium's zygote children rewrite their title: arguments joined by spaces.
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return "other"
    if not args:
        return "other"  # exited, not reaped yet
    if args[0].endswith(b"/node"):
        return "driver"  # Playwright's driver
    kind = next((a[7:] for a in args if a.startswith(b"--type=")), None)
    if kind is None:
        return "browser" if b"chrom" in args[0] else "other"
    if kind in (b"renderer", b"gpu-process"):
        return kind.split(b"-")[0].decode()
    if any(b"NetworkService" in a for a in args):
        return "network"
    return "other"  # zygotes, the storage service


def cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


class ProcessCpu:
    """CPU seconds per process kind of a worker's tree, read from /proc every 0.1 s.

    A process's last reading counts: what it spent in the 0.1 s before it exited is
    missed, so the kinds add up to a little less than the rusage total (``unseen``).
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self._last: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            for pid in tree(self.root):
                seconds = cpu_seconds(pid)
                if seconds is None:
                    continue
                # Classified at every reading: /usr/bin/chromium is a shell script that
                # execs the browser, and an exited process has no command line.
                kind = process_kind(pid, self.root)
                if kind == "other" and pid in self._last:
                    kind = self._last[pid][0]
                self._last[pid] = (kind, seconds)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        totals = dict.fromkeys(PROCESS_KINDS, 0.0)
        for kind, seconds in self._last.values():
            totals[kind] += seconds
        return totals


def run_worker(kind: str, urls: list[str], overrides: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cpu_before = children_cpu()
        process = worker(kind, urls, out, overrides)
        sampler = ProcessCpu(process.pid)
        try:
            if process.wait(timeout=1800) != 0 or not out.exists():
                raise RuntimeError(f"{kind} worker failed (exit {process.returncode})")
        finally:
            by_kind = sampler.stop()
        # The worker and every process it reaped: immune to other load on the machine,
        # unlike wall time. Chromium's processes are not all reaped through the worker
        # (about half of the shared side's CPU went missing), so the /proc readings of
        # the tree count too: the larger of the two.
        reaped = children_cpu() - cpu_before
        result: dict[str, Any] = json.loads(out.read_text())
    if result["failed"]:
        raise RuntimeError(f"{kind}: {result['failed']} pages were not rendered")
    by_kind["unseen"] = max(0.0, reaped - sum(by_kind.values()))
    result["pages_per_s"] = result["pages"] / result["seconds"]
    result["cpu_per_page"] = sum(by_kind.values()) / result["pages"]
    result["cpu_by_kind"] = {k: v / result["pages"] for k, v in by_kind.items()}
    return result


def tree(pid: int) -> list[int]:
    found, todo = [pid], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def memory_kb(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) of ``pids`` in kB."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except (OSError, ValueError):
            continue  # it exited between listing and reading
    return rss, pss


def measure_memory(site: DemoSite, urls: list[str], overrides: dict[str, Any]) -> dict[str, Any]:
    samples: list[tuple[int, int, int, int]] = []  # (pages done, rss kB, pss kB, processes)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        site.reset()
        process = worker("shared", urls, out, overrides)
        done = 0
        seen = 0

        def sample() -> None:
            pids = tree(process.pid)
            rss, pss = memory_kb(pids)
            samples.append((done, rss, pss, len(pids)))

        stop = threading.Event()

        def sampler() -> None:
            while not stop.wait(0.25):
                sample()

        thread = threading.Thread(target=sampler, daemon=True)
        thread.start()
        while process.poll() is None:
            entries = site.access_log(since=seen)
            seen += len(entries)
            done += sum(1 for e in entries if e["path"].startswith("/product/"))
            time.sleep(0.25)
        stop.set()
        thread.join()
        if process.returncode != 0:
            raise RuntimeError("memory run failed")
        result = json.loads(out.read_text())
    live = [s for s in samples if s[3] > 1]
    # Pages rendered so far when sampled: 0 is start-up (no browser yet), not "first 100".
    first = [s for s in live if 0 < s[0] <= 100]
    last = [s for s in live if s[0] >= len(urls) - 100]
    peak = max(live, key=lambda s: s[1])
    peak_pss = max(s[2] for s in live)
    first_rss = statistics.mean(s[1] for s in first)
    last_rss = statistics.mean(s[1] for s in last)
    first_pss = statistics.mean(s[2] for s in first)
    last_pss = statistics.mean(s[2] for s in last)
    checkpoints = []
    for mark in range(100, len(urls) + 1, 100):
        window = [x for x in live if mark - 100 < x[0] <= mark]
        if window:
            checkpoints.append(
                (mark, statistics.mean(x[1] for x in window), statistics.mean(x[2] for x in window))
            )
    return {
        "checkpoints": checkpoints,
        "pages": result["pages"],
        "seconds": result["seconds"],
        "peak_rss_mb": peak[1] / 1024,
        "peak_pss_mb": peak_pss / 1024,
        "processes_at_peak": peak[3],
        "first100_rss_mb": first_rss / 1024,
        "last100_rss_mb": last_rss / 1024,
        "growth_rss_mb": (last_rss - first_rss) / 1024,
        "growth_rss_pct": 100 * (last_rss - first_rss) / first_rss,
        "first100_pss_mb": first_pss / 1024,
        "last100_pss_mb": last_pss / 1024,
        "growth_pss_mb": (last_pss - first_pss) / 1024,
        "samples": len(live),
    }


def print_cpu_by_kind(kinds: dict[str, list[dict[str, float]]]) -> None:
    """Median CPU seconds per rendered page of each process kind, per side."""
    columns = (*PROCESS_KINDS, "unseen")
    print("median CPU s/page by process: " + " | ".join(f"{c:>8}" for c in ("side", *columns)))
    for side, runs in kinds.items():
        cells = [f"{statistics.median(run[c] for run in runs):8.4f}" for c in columns]
        print(f"{'':30}{side:>8} | " + " | ".join(cells))


def product_urls(site: DemoSite, count: int) -> list[str]:
    products = site.catalog().products
    return [f"{site.url}{products[i % len(products)].url}" for i in range(count)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", type=int, default=200, help="per shared run")
    parser.add_argument("--baseline-pages", type=int, default=15, help="per browser-per-page run")
    parser.add_argument("--memory-pages", type=int, default=1000)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a Scrapy setting for the shared side, e.g. --set RENDER_REUSE_PAGES=false",
    )
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = smoke.parse_args(parser, argv, runs=1, pages=8, baseline_pages=2, memory_pages=120)
    if args.worker:
        spec = json.loads(sys.stdin.read())
        run = run_shared if spec["kind"] == "shared" else run_per_page
        Path(spec["out"]).write_text(json.dumps(run(spec["urls"], spec["settings"])))
        return 0
    overrides = {}
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name] = json.loads(value)

    with tempfile.TemporaryDirectory() as tmp, DemoSite(run_dir=Path(tmp)) as site:
        shared: list[float] = []
        per_page: list[float] = []
        shared_cpu: list[float] = []
        per_page_cpu: list[float] = []
        kinds: dict[str, list[dict[str, float]]] = {"shared": [], "per page": []}
        print(
            f"chromium: {get_settings().chromium_executable()}; cores: {os.cpu_count()}; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        if overrides:
            print(f"shared side settings: {overrides}")
        for run in range(1, (0 if args.skip_throughput else args.runs) + 1):
            a = run_worker("shared", product_urls(site, args.pages), overrides)
            b = run_worker("per_page", product_urls(site, args.baseline_pages), {})
            shared.append(a["pages_per_s"])
            per_page.append(b["pages_per_s"])
            shared_cpu.append(a["cpu_per_page"])
            per_page_cpu.append(b["cpu_per_page"])
            kinds["shared"].append(a["cpu_by_kind"])
            kinds["per page"].append(b["cpu_by_kind"])
            print(
                f"run {run}: shared {a['pages']} pages in {a['seconds']:.1f}s = "
                f"{a['pages_per_s']:.2f} pages/s ({a['cpu_per_page']:.3f} CPU s/page); "
                f"per page {b['pages']} pages in {b['seconds']:.1f}s = "
                f"{b['pages_per_s']:.2f} pages/s ({b['cpu_per_page']:.3f} CPU s/page)",
                flush=True,
            )
        if shared:
            shared_median = statistics.median(shared)
            per_page_median = statistics.median(per_page)
            print(
                f"median rendered pages/s: shared browser + contexts {shared_median:.2f}, "
                f"browser per page {per_page_median:.2f}; "
                f"ratio {shared_median / per_page_median:.1f}x"
            )
            shared_cost = statistics.median(shared_cpu)
            per_page_cost = statistics.median(per_page_cpu)
            print(
                f"median CPU seconds per rendered page (all processes): shared "
                f"{shared_cost:.3f}, browser per page {per_page_cost:.3f}; "
                f"ratio {per_page_cost / shared_cost:.1f}x"
            )
            print_cpu_by_kind(kinds)
            print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        if args.skip_memory:
            return 0
        memory = measure_memory(site, product_urls(site, args.memory_pages), overrides)
        print(
            f"memory over {memory['pages']} rendered pages ({memory['seconds']:.0f}s, "
            f"{memory['samples']} samples, Scrapy + driver + Chromium, "
            f"{memory['processes_at_peak']} processes at peak): "
            f"peak RSS {memory['peak_rss_mb']:.0f} MB (PSS {memory['peak_pss_mb']:.0f} MB); "
            f"first 100 pages {memory['first100_rss_mb']:.0f} MB, last 100 "
            f"{memory['last100_rss_mb']:.0f} MB: growth {memory['growth_rss_mb']:+.0f} MB "
            f"({memory['growth_rss_pct']:+.1f}%); PSS {memory['first100_pss_mb']:.0f} -> "
            f"{memory['last100_pss_mb']:.0f} MB ({memory['growth_pss_mb']:+.0f} MB)"
        )
        series = ", ".join(
            f"{mark}: {rss / 1024:.0f}/{pss / 1024:.0f}" for mark, rss, pss in memory["checkpoints"]
        )
        print(f"mean RSS/PSS MB by pages rendered (window of 100): {series}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
