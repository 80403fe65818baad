"""Frontier throughput: bare Scrapy vs the leased Redis frontier (1 and 2 workers) vs crawlee.

    .venv/bin/python -m bench.frontier [--rounds 3] [--products 1200] [--latency-ms 0 50]

Every configuration crawls the whole demo site (home, listings, products, reviews API)
at the same per-process concurrency. Throughput is pages/s measured on the *site's*
access log, from the first to the last request of the crawl, so process start-up and
the workers' idle-close wait do not count. Configurations are interleaved in each
round; the report gives the median of the rounds and ratios computed in this run.
``--latency-ms`` adds a server-side delay per page, as a remote site has; 0 measures
the CPU-bound case where the site shares the 2 cores with the crawlers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.config import REPO_ROOT
from crawlers.producer import produce
from services.demo_site import DemoSite
from services.redis_server import RedisServer

CRAWLEE_VENV = REPO_ROOT / ".venv-crawlee"
CRAWLEE_REQUIREMENT = "crawlee[parsel]==1.11.0"
CONCURRENCY = 16


def ensure_crawlee() -> Path | None:
    """crawlee in its own venv (its pins differ from ours); None if it cannot be installed."""
    python = CRAWLEE_VENV / "bin" / "python"
    if python.exists():
        return python
    try:
        subprocess.run([sys.executable, "-m", "venv", str(CRAWLEE_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", CRAWLEE_REQUIREMENT], check=True)
    except subprocess.CalledProcessError as exc:
        print(f"crawlee unavailable ({exc}); its column is skipped", file=sys.stderr)
        shutil.rmtree(CRAWLEE_VENV, ignore_errors=True)
        return None
    return python


def crawl_window(site: DemoSite) -> tuple[int, float]:
    """Pages fetched and seconds from the first to the last request (site's access log)."""
    entries = [e for e in site.access_log() if e["path"] != "/robots.txt"]
    if len(entries) < 2:
        raise RuntimeError("the crawl fetched nothing")
    return len(entries), entries[-1]["ts"] - entries[0]["ts"]


def scrapy_env(redis_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def scrapy_argv(site: DemoSite, log: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "demo",
        "-a", f"base_url={site.url}",
        "-s", f"CONCURRENT_REQUESTS={CONCURRENCY}",
        "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={CONCURRENCY}",
        "-s", "LOG_LEVEL=INFO",
        "-s", f"LOG_FILE={log}",
        *extra,
    ]  # fmt: skip


def run_bare(site: DemoSite, workdir: Path, redis: RedisServer) -> None:
    done = subprocess.run(scrapy_argv(site, workdir / "bare.log"), env=scrapy_env(None))
    if done.returncode:
        raise RuntimeError(f"bare scrapy failed; see {workdir / 'bare.log'}")


def run_frontier(workers: int) -> Callable[[DemoSite, Path, RedisServer], None]:
    def run(site: DemoSite, workdir: Path, redis: RedisServer) -> None:
        client = redis.client()
        client.flushdb()
        job = produce(client, "demo", base_url=site.url)
        job_args = ("-a", f"job_id={job.job_id}", "-s", "FRONTIER_IDLE_CLOSE_SECONDS=1")
        procs = [
            subprocess.Popen(
                scrapy_argv(site, workdir / f"frontier{workers}-{n}.log", *job_args),
                env=scrapy_env(redis.url),
            )
            for n in range(workers)
        ]
        if any(proc.wait() for proc in procs):
            raise RuntimeError(f"a frontier worker failed; see {workdir}")

    return run


def run_crawlee(python: Path) -> Callable[[DemoSite, Path, RedisServer], None]:
    def run(site: DemoSite, workdir: Path, redis: RedisServer) -> None:
        script = REPO_ROOT / "bench" / "crawlee_demo.py"
        done = subprocess.run(
            [str(python), str(script), site.url, str(CONCURRENCY)],
            capture_output=True,
            text=True,
            cwd=workdir,
        )
        if done.returncode:
            raise RuntimeError(f"crawlee failed: {done.stderr[-2000:]}")
        if json.loads(done.stdout.strip().splitlines()[-1])["items"] == 0:
            raise RuntimeError("crawlee produced no items")

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--products", type=int, default=1200)
    parser.add_argument("--latency-ms", type=int, nargs="+", default=[0, 50])
    args = parser.parse_args(argv)

    configs: dict[str, Callable[[DemoSite, Path, RedisServer], None]] = {
        "bare scrapy (memory scheduler)": run_bare,
        "frontier, 1 worker": run_frontier(1),
        "frontier, 2 workers": run_frontier(2),
    }
    crawlee = ensure_crawlee()
    if crawlee is not None:
        configs["crawlee ParselCrawler"] = run_crawlee(crawlee)

    with tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmp:
        workdir = Path(tmp)
        with (
            DemoSite(run_dir=workdir, products=args.products) as site,
            RedisServer(run_dir=workdir) as redis,
        ):
            for latency in args.latency_ms:
                rates: dict[str, list[float]] = {name: [] for name in configs}
                for _ in range(args.rounds):
                    for name, run in configs.items():
                        site.reset()
                        if latency:
                            site.control(slow={"rate": 1.0, "ms": latency})
                        started = time.monotonic()
                        run(site, workdir, redis)
                        pages, seconds = crawl_window(site)
                        rates[name].append(pages / seconds)
                        print(
                            f"  [{latency} ms] {name}: {pages} pages in {seconds:.2f}s "
                            f"({time.monotonic() - started:.1f}s wall)",
                            file=sys.stderr,
                        )
                report(rates, latency, args.rounds)
    return 0


def report(rates: dict[str, list[float]], latency: int, rounds: int) -> None:
    medians = {name: statistics.median(values) for name, values in rates.items()}
    bare = medians["bare scrapy (memory scheduler)"]
    one = medians["frontier, 1 worker"]
    print(f"\nserver latency {latency} ms, concurrency {CONCURRENCY}/process, {rounds} rounds")
    print(f"{'configuration':<34}{'median pages/s':>16}{'vs bare':>10}")
    for name, median in medians.items():
        print(f"{name:<34}{median:>16.0f}{median / bare:>9.2f}x")
    print(f"frontier 1 worker / bare scrapy : {one / bare:.2f}x (target >= 0.85x)")
    print(
        f"frontier 2 workers / 1 worker   : {medians['frontier, 2 workers'] / one:.2f}x "
        "(target >= 1.5x)"
    )
    if "crawlee ParselCrawler" in medians:
        print(
            f"frontier 1 worker / crawlee     : {one / medians['crawlee ParselCrawler']:.2f}x "
            "(goal > 1x)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
