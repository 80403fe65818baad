"""Many workers, measured: 1, 2, 4 and 8 full-path demo workers on one Redis or a Redis Cluster.

    .venv/bin/python -m bench.scaling [--workers 1 2 4 8] [--products 1200] [--rounds 1]
        [--latency-ms 200] [--concurrency 4] [--redis single|cluster|both] [--run-dir DIR]

``N`` always-on workers on the whole production path crawl the demo shop answering
``--latency-ms`` late, each with ``--concurrency`` requests in flight: latency-bound, so N
workers should come close to N times one. Steady-state pages/s from the shop's access
log, CPU and peak RSS per worker; medians over ``--rounds``, ratios of this run. Method:
docs/frontier.md "Many workers: ``python -m bench.scaling``".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from bench import smoke
from bench.stack import SITE, WorkerPool
from core.config import get_settings
from core.figures.stats import JobStats
from core.frontier.queue import RedisFrontier
from crawlers.cli.producer import produce
from crawlers.runtime.jobs import new_job_id
from harness import redis_server
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from standins.demo_site.catalog import Catalog
from standins.demo_site.pages import page_count

GOALS = {4: 3.5, 8: 6.5}  # workers -> scaling ratio vs one worker (issue 17)
ITEM_INDEX = f"items-{SITE}"
CLK_TCK = os.sysconf("SC_CLK_TCK")
Log = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    workers: tuple[int, ...] = (1, 2, 4, 8)
    products: int = 1200
    seed: int = 7
    latency_ms: int = 200
    concurrency: int = 4
    rounds: int = 1
    trim: float = 0.1  # fraction of the pages left out at each end of the steady window

    @property
    def ceiling(self) -> float:
        """Pages/s one worker can reach at most: its requests in flight / the latency."""
        return self.concurrency * 1000 / self.latency_ms

    def worker_settings(self) -> dict[str, str]:
        """Pinned concurrency: nothing but the latency limits a worker."""
        return {
            "CONCURRENT_REQUESTS": str(self.concurrency),
            "CONCURRENT_REQUESTS_PER_DOMAIN": str(self.concurrency),
            "AUTOTHROTTLE_ENABLED": "False",
            "DOWNLOAD_DELAY": "0",
            "LOG_LEVEL": "INFO",
        }


def catalogue_pages(catalog: Catalog) -> int:
    """Pages a full crawl fetches: home, every listing page, each product and its reviews."""
    listings = sum(page_count(len(products)) for products in catalog.by_category.values())
    return 1 + listings + 2 * len(catalog.products)


@dataclass
class RedisTarget:
    """The Redis under test: a client the bench uses, the URL and settings workers get."""

    mode: str  # single | cluster
    url: str
    client: Any  # redis.Redis, or redis.cluster.RedisCluster
    pids: list[int]
    settings: dict[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def start_redis(mode: str, run_dir: Path) -> Iterator[RedisTarget]:
    """A fresh single Redis, or a Redis Cluster of three masters (the service harness)."""
    if mode == "single":
        with redis_server.RedisServer(run_dir=run_dir) as server:
            client = server.client(socket_timeout=30)
            yield RedisTarget(mode, server.url, client, [server.pid or 0])
            client.close()
        return
    cluster = redis_server.RedisCluster(run_dir=run_dir, masters=3)
    cluster.start()
    try:
        client = cluster.client()
        pids = [node.pid or 0 for node in cluster.nodes]
        yield RedisTarget(mode, cluster.url, client, pids, {"REDIS_CLUSTER": "True"})
        client.close()
    finally:
        cluster.stop()


# -- /proc sampling -----------------------------------------------------------------------


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of ``pid`` so far; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(values[:8])  # guest time is already inside user and nice
    return total - values[3] - values[4], total  # idle and iowait are not busy


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


@dataclass
class Sample:
    at: float  # time.time(), the clock of the shop's access log
    cpu: dict[int, float]
    busy: float
    total: float


class CpuSampler:
    """Samples the CPU of some processes and of the machine every ``interval`` seconds."""

    def __init__(self, pids: Callable[[], Sequence[int]], interval: float = 0.25) -> None:
        self.pids = pids
        self.interval = interval
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        cpu = {pid: v for pid in self.pids() if (v := process_cpu(pid)) is not None}
        busy, total = machine_cpu()
        self.samples.append(Sample(time.time(), cpu, busy, total))

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval):
                self.sample()
                return

    def _value(self, at: float, read: Callable[[Sample], float | None]) -> float:
        """``read`` at time ``at``, interpolated between the samples around it."""
        points = [(s.at, v) for s in self.samples if (v := read(s)) is not None]
        before = [p for p in points if p[0] <= at] or points[:1]
        after = [p for p in points if p[0] >= at] or points[-1:]
        (t0, v0), (t1, v1) = before[-1], after[0]
        return v0 if t1 == t0 else v0 + (v1 - v0) * (at - t0) / (t1 - t0)

    def cores(self, pids: Sequence[int], start: float, end: float) -> float:
        """CPU seconds per second of ``pids`` together between ``start`` and ``end``."""
        used = sum(
            self._value(end, lambda s, p=pid: s.cpu.get(p))
            - self._value(start, lambda s, p=pid: s.cpu.get(p))
            for pid in pids
        )
        return used / (end - start)

    def machine(self, start: float, end: float) -> float:
        """Share of the machine's cores busy between ``start`` and ``end``."""
        busy = self._value(end, lambda s: s.busy) - self._value(start, lambda s: s.busy)
        total = self._value(end, lambda s: s.total) - self._value(start, lambda s: s.total)
        return busy / total if total else 0.0


# -- one configuration --------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    workers: int
    pages: int  # pages the shop served (robots.txt aside)
    repeats: int  # of those, fetches of a page already fetched
    expected_pages: int  # pages of the catalogue
    items: int  # documents in the item index after the crawl
    scraped: int  # the job's item_scraped_count, summed over workers
    crawl_seconds: float  # first to last page
    steady_pages: int
    steady_seconds: float
    worker_cores: float  # the workers' CPU seconds per second, steady window
    machine_cpu: float  # share of all cores busy, steady window
    service_cores: dict[str, float]  # shop, redis, es: CPU seconds per second
    rss_mb: tuple[float, ...]  # each worker's peak RSS
    wall_seconds: float  # the whole configuration, start-up and stop included

    @property
    def rate(self) -> float:
        """Steady-state pages/s."""
        return self.steady_pages / self.steady_seconds

    @property
    def crawl_rate(self) -> float:
        """Pages/s from the first to the last page."""
        return self.pages / self.crawl_seconds


class Bench:
    """The shop and the ES node of a run, and the Redis of the mode being measured."""

    def __init__(
        self, plan: Plan, site: DemoSite, es: ElasticsearchNode, run_dir: Path, log: Log
    ) -> None:
        self.plan = plan
        self.site = site
        self.es_node = es
        self.run_dir = run_dir
        self.log = log
        self.expected_pages = catalogue_pages(site.catalog())

    def reset(self, target: RedisTarget, es: Elasticsearch) -> None:
        """A first crawl: nothing in Redis, no item index, the shop's log and state cleared."""
        target.client.flushall()
        es.indices.delete(index="items-*", ignore_unavailable=True, allow_no_indices=True)
        self.site.reset()
        self.site.control(slow={"rate": 1.0, "ms": self.plan.latency_ms})

    def measure(self, target: RedisTarget, workers: int, label: str) -> Measurement:
        plan = self.plan
        began = time.monotonic()
        run_dir = self.run_dir / label
        run_dir.mkdir(parents=True, exist_ok=True)
        with Elasticsearch(self.es_node.url, request_timeout=60) as es:
            self.reset(target, es)
            job_id = new_job_id(SITE)
            pool = WorkerPool(
                job_id,
                run_dir=run_dir,
                settings={
                    "REDIS_URL": target.url,
                    "ELASTICSEARCH_URL": self.es_node.url,
                    "DEMO_SITE_URL": self.site.url,
                    "PLATFORM_RUN_DIR": str(run_dir),
                    **target.settings,
                    **plan.worker_settings(),
                },
                base_url=self.site.url,
                env={k: v for k, v in os.environ.items() if k != "REDIS_CLUSTER"},
            )
            services = {
                "shop": [self.site.pid or 0],
                "redis": target.pids,
                "es": [self.es_node.pid or 0],
            }
            everything = [pid for pids in services.values() for pid in pids]
            try:
                pool.start(workers, target.client)  # idle until the job is produced
                worker_pids = sorted(pool.pids)
                with CpuSampler(lambda: [*worker_pids, *everything]) as sampler:
                    produce(target.client, SITE, job_id=job_id, base_url=self.site.url)
                    entries = self.crawl(target, es, pool, workers)
                rss = tuple(peak_rss_mb(pid) or 0.0 for pid in worker_pids)
            finally:
                pool.stop()
            items = _count(es)
        scraped = JobStats(target.client, SITE).get(job_id).get("item_scraped_count", 0)
        times = sorted(entry["ts"] for entry in entries)
        cut = int(len(times) * plan.trim)
        start, end = times[cut], times[len(times) - 1 - cut]
        return Measurement(
            workers=workers,
            pages=len(times),
            repeats=len(entries) - len({entry["path"] for entry in entries}),
            expected_pages=self.expected_pages,
            items=items,
            scraped=scraped,
            crawl_seconds=times[-1] - times[0],
            steady_pages=len(times) - 1 - 2 * cut,
            steady_seconds=end - start,
            worker_cores=sampler.cores(worker_pids, start, end),
            machine_cpu=sampler.machine(start, end),
            service_cores={
                name: sampler.cores(pids, start, end) for name, pids in services.items()
            },
            rss_mb=rss,
            wall_seconds=time.monotonic() - began,
        )

    def crawl(
        self, target: RedisTarget, es: Elasticsearch, pool: WorkerPool, workers: int
    ) -> list[dict[str, Any]]:
        """The shop's log of the crawl (robots.txt aside), once every page was fetched, the
        frontier is empty and every product is in the item index."""
        plan = self.plan
        timeout = 4 * self.expected_pages / (workers * plan.ceiling) + 120
        deadline = time.monotonic() + timeout
        frontier = RedisFrontier(target.client, SITE)
        log: list[dict[str, Any]] = []
        while True:
            log += self.site.access_log(since=len(log))
            pages = [entry for entry in log if entry["path"] != "/robots.txt"]
            if (
                len(pages) >= self.expected_pages
                and frontier.queued() == 0
                and frontier.leased() == 0
                and _count(es) >= plan.products
            ):
                return pages
            for number, worker in pool.live.items():
                if not worker.alive():
                    raise RuntimeError(
                        f"worker {number} exited ({worker.returncode}); see {pool.log_path(number)}"
                    )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{workers} workers: {len(pages)} of {self.expected_pages} pages, "
                    f"{_count(es)} of {plan.products} items after {timeout:.0f}s"
                )
            time.sleep(0.5)

    def run_mode(self, target: RedisTarget) -> ModeResult:
        result = ModeResult(self.plan, target.mode, target.url)
        for round_no in range(1, self.plan.rounds + 1):
            for workers in self.plan.workers:
                label = f"{target.mode}-round{round_no}-{workers}w"
                measured = self.measure(target, workers, label)
                result.measurements.setdefault(workers, []).append(measured)
                self.log(
                    f"  [{target.mode}] round {round_no}, {workers} workers: {measured.pages}/"
                    f"{measured.expected_pages} pages ({measured.repeats} repeated), "
                    f"{measured.items} items, "
                    f"{measured.rate:.1f} pages/s steady ({measured.crawl_rate:.1f} first to "
                    f"last), {measured.wall_seconds:.0f}s wall"
                )
        return result


def _count(es: Elasticsearch) -> int:
    try:
        es.indices.refresh(index=ITEM_INDEX)
        return int(es.count(index=ITEM_INDEX)["count"])
    except NotFoundError:
        return 0


# -- the report ---------------------------------------------------------------------------


@dataclass
class ModeResult:
    plan: Plan
    mode: str
    url: str
    measurements: dict[int, list[Measurement]] = field(default_factory=dict)

    def median(self, workers: int, figure: Callable[[Measurement], float]) -> float:
        return statistics.median(figure(m) for m in self.measurements[workers])

    def rate(self, workers: int) -> float:
        return self.median(workers, lambda m: m.rate)

    def ratio(self, workers: int) -> float:
        """Median pages/s of ``workers`` over the median of the fewest workers measured."""
        return self.rate(workers) / self.rate(min(self.measurements))

    def share(self, workers: int) -> float:
        """Share of the ceiling: pages/s over workers x one worker's ceiling."""
        return self.rate(workers) / (workers * self.plan.ceiling)

    def goals(self) -> list[tuple[int, float, float, bool]]:
        """(workers, ratio, goal, met) for each goal whose configuration was measured."""
        if 1 not in self.measurements:
            return []
        return [
            (workers, self.ratio(workers), goal, self.ratio(workers) >= goal)
            for workers, goal in GOALS.items()
            if workers in self.measurements
        ]

    def table(self) -> str:
        plan = self.plan
        base = min(self.measurements)
        some = self.measurements[base][0]
        lines = [
            f"Redis {self.mode} ({self.url}): {plan.products} products = "
            f"{some.expected_pages} pages, {plan.latency_ms} ms latency, {plan.concurrency} "
            f"requests/worker (ceiling {plan.ceiling:g} pages/s/worker), "
            f"{plan.rounds} round(s), medians",
            f"{'workers':>7} {'pages/s':>8} {'1st-last':>8} {'ratio':>6} {'ceiling':>8} "
            f"{'share':>6} {'wrk CPU':>8} {'machine':>8} {'RSS MB':>7}  "
            "CPU cores of shop / redis / es",
        ]
        for workers in sorted(self.measurements):
            ms = self.measurements[workers]
            services = " / ".join(
                f"{self.median(workers, lambda m, n=name: m.service_cores[n]):.2f}"
                for name in ("shop", "redis", "es")
            )
            lines.append(
                f"{workers:>7} {self.rate(workers):>8.1f} "
                f"{self.median(workers, lambda m: m.crawl_rate):>8.1f} "
                f"{self.ratio(workers):>5.2f}x {workers * plan.ceiling:>8.0f} "
                f"{self.share(workers):>6.0%} "
                f"{self.median(workers, lambda m: m.worker_cores):>8.2f} "
                f"{self.median(workers, lambda m: m.machine_cpu):>8.0%} "
                f"{max(max(m.rss_mb) for m in ms):>7.0f}  {services}"
            )
        if base != 1:
            lines.append(f"ratios are against {base} workers")
        for workers, ratio, goal, met in self.goals():
            lines.append(
                f"goal: {workers} workers >= {goal:g}x one worker: {ratio:.2f}x "
                f"{'met' if met else 'MISSED'}"
            )
        return "\n".join(lines)


def run(
    plan: Plan, modes: Sequence[str], run_dir: Path, *, log: Log | None = None
) -> list[ModeResult]:
    """The shop and an ES node for the run; each mode on a Redis of its own."""
    log = log or (lambda line: None)
    results = []
    settings = {"action.destructive_requires_name": "false"}  # items-* deleted between runs
    with (
        DemoSite(run_dir=run_dir, products=plan.products, seed=plan.seed) as site,
        ElasticsearchNode(run_dir=run_dir, settings=settings) as es,
    ):
        bench = Bench(plan, site, es, run_dir, log)
        for mode in modes:
            with start_redis(mode, run_dir) as target:
                results.append(bench.run_mode(target))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    default = Plan()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=list(default.workers))
    parser.add_argument("--products", type=int, default=default.products)
    parser.add_argument("--rounds", type=int, default=default.rounds)
    parser.add_argument("--latency-ms", type=int, default=default.latency_ms)
    parser.add_argument("--concurrency", type=int, default=default.concurrency)
    parser.add_argument("--trim", type=float, default=default.trim, help="0 <= trim < 0.5")
    parser.add_argument("--seed", type=int, default=default.seed)
    parser.add_argument("--redis", choices=("single", "cluster", "both"), default="both")
    parser.add_argument("--run-dir", type=Path, help="default: a new directory in the run dir")
    args = smoke.parse_args(
        parser, argv, workers=[1, 2], products=24, latency_ms=50, redis="single"
    )
    if min(args.workers) < 1 or args.products < 1 or args.rounds < 1:
        parser.error("--workers, --products and --rounds must be positive")
    if args.latency_ms < 1 or args.concurrency < 1 or not 0 <= args.trim < 0.5:
        parser.error("--latency-ms and --concurrency must be positive, --trim in [0, 0.5)")
    plan = Plan(
        workers=tuple(sorted(set(args.workers))),
        products=args.products,
        seed=args.seed,
        latency_ms=args.latency_ms,
        concurrency=args.concurrency,
        rounds=args.rounds,
        trim=args.trim,
    )
    modes = ("single", "cluster") if args.redis == "both" else (args.redis,)
    run_root = get_settings().platform_run_dir
    run_root.mkdir(parents=True, exist_ok=True)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="scaling-", dir=run_root))
    started = time.monotonic()
    results = run(plan, modes, run_dir, log=lambda line: print(line, file=sys.stderr, flush=True))
    for result in results:
        print()
        print(result.table())
    print(f"\nrun time {time.monotonic() - started:.0f}s; logs in {run_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
