"""Frontier throughput at equal work and equal politeness: Scrapy, the frontier, the full
production path and crawlee, each as a share of the latency ceiling.

    .venv/bin/python -m bench.frontier [--rounds 2] [--products 1200] [--latency-ms 0 50]

Rows: bare Scrapy, the frontier (1 and 2 workers), the full path (1 and 2 workers; 1 also
through Scrapy's HTTP/1.1 handler, and with AutoThrottle at a latency), crawlee's
ParselCrawler, all with the demo spider's extraction at the same pinned concurrency.
Pages/s from the shop's access log, worker CPU per page from /proc, the items check by
``bench.equal_work``; configurations interleaved, medians over rounds, ratios of this run.
Rows, columns and goals: docs/frontier.md "Throughput".
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from elasticsearch import Elasticsearch, NotFoundError

from bench import smoke
from bench.crawlee_env import CRAWLEE_SCRIPT, crawlee_python, ensure_crawlee
from bench.equal_work import DIGEST_DIR_SETTING, combined, read_digests
from bench.scaling import ITEM_INDEX, CpuSampler, Sample, catalogue_pages, machine_cpu
from bench.stack import SITE, WorkerPool
from core.config import REPO_ROOT, get_settings
from core.frontier.queue import RedisFrontier
from crawlers.cli.producer import produce
from crawlers.runtime.jobs import new_job_id
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer

CONCURRENCY = 16
DEFAULT_ROUNDS = 2
# Goals of issue 18 (medians of one run).
CEILING_SHARE_GOAL = 0.9  # full path, 1 worker, at a latency: share of its ceiling
BARE_RATIO_GOAL = 0.9  # full path, 1 worker, at 0 ms: pages/s vs bare Scrapy
SCALING_GOAL = 1.8  # full path, 2 workers vs 1, at a latency
Log = Callable[[str], None]

BARE = "bare Scrapy (memory scheduler)"
FRONTIER_1 = "frontier, 1 worker"
FRONTIER_2 = "frontier, 2 workers"
FULL_1 = "full path, 1 worker, browser identity (curl_cffi)"
FULL_1_HTTP11 = "full path, 1 worker, HTTP/1.1 handler"
FULL_2 = "full path, 2 workers"
FULL_THROTTLED = "full path, 1 worker, AutoThrottle on (project default)"
CRAWLEE = "crawlee ParselCrawler"


@dataclass(frozen=True)
class Config:
    name: str
    kind: str  # bare | frontier | full | crawlee
    processes: int = 1
    autothrottle: bool = False  # the project's AutoThrottle default instead of pinned
    identity: str | None = None  # FETCH_IDENTITY; None: the project's default (browser)

    def scrapy_settings(self, concurrency: int) -> dict[str, str]:
        """Equal politeness: pinned concurrency (AutoThrottle only where the row says so)."""
        settings = {
            "CONCURRENT_REQUESTS": str(concurrency),
            "CONCURRENT_REQUESTS_PER_DOMAIN": str(concurrency),
            "LOG_LEVEL": "INFO",
            "ITEM_PROCESSOR": "bench.equal_work.DigestingPipelines",
        }
        if not self.autothrottle:
            settings |= {"AUTOTHROTTLE_ENABLED": "False", "DOWNLOAD_DELAY": "0"}
        if self.kind in ("bare", "frontier"):
            settings["ITEM_PIPELINES"] = "{}"
        if self.identity is not None:
            settings["FETCH_IDENTITY"] = self.identity
        return settings


def configurations(latency_ms: int, crawlee: bool) -> list[Config]:
    configs = [
        Config(BARE, "bare"),
        Config(FRONTIER_1, "frontier"),
        Config(FRONTIER_2, "frontier", 2),
        Config(FULL_1, "full"),
        Config(FULL_1_HTTP11, "full", identity="crawler"),
        Config(FULL_2, "full", 2),
    ]
    if latency_ms:
        configs.append(Config(FULL_THROTTLED, "full", autothrottle=True))
    if crawlee:
        configs.append(Config(CRAWLEE, "crawlee"))
    return configs


# -- one run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    products: int = 1200
    seed: int = 7
    rounds: int = DEFAULT_ROUNDS
    latencies: tuple[int, ...] = (0, 50)
    concurrency: int = CONCURRENCY

    def ceiling(self, latency_ms: int, processes: int) -> float | None:
        """Pages/s the processes can reach at most: requests in flight / latency; None
        without latency (the CPU is the limit)."""
        return self.concurrency * 1000 / latency_ms * processes if latency_ms else None


@dataclass(frozen=True)
class Run:
    pages: int  # requests the shop served, robots.txt aside
    distinct: int  # of those, different paths
    seconds: float  # first to last request
    cpu_seconds: float  # the configuration's processes, over the same window
    items: int
    digest: str  # bench.equal_work.combined of the items' digests

    @property
    def rate(self) -> float:
        return self.pages / self.seconds

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_seconds / self.pages


class Bench:
    """The shop, Redis and the ES node of a run; one configuration at a time."""

    def __init__(
        self,
        plan: Plan,
        site: DemoSite,
        redis: RedisServer,
        es: ElasticsearchNode,
        workdir: Path,
        crawlee: Path | None,
    ) -> None:
        self.plan = plan
        self.site = site
        self.redis = redis
        self.client = redis.client(socket_timeout=30)
        self.es_node = es
        self.es = Elasticsearch(es.url, request_timeout=60)
        self.workdir = workdir
        self.crawlee = crawlee
        self.expected_pages = catalogue_pages(site.catalog())

    def close(self) -> None:
        self.client.close()
        self.es.close()

    def reset(self, latency_ms: int) -> None:
        """A first crawl: nothing in Redis, no item index, the shop's log and state cleared."""
        self.client.flushall()
        self.es.indices.delete(index="items-*", ignore_unavailable=True, allow_no_indices=True)
        self.site.reset()
        if latency_ms:
            self.site.control(slow={"rate": 1.0, "ms": latency_ms})

    def measure(self, config: Config, latency_ms: int, label: str) -> Run:
        self.reset(latency_ms)
        run_dir = self.workdir / label
        shutil.rmtree(run_dir, ignore_errors=True)  # a reused --run-dir: no stale digests
        digests = run_dir / "digests"
        digests.mkdir(parents=True)
        if config.kind == "bare":
            pids, sampler = self.run_bare(config, run_dir, digests)
        elif config.kind == "crawlee":
            pids, sampler = self.run_crawlee(run_dir, digests)
        else:
            pids, sampler = self.run_workers(config, run_dir, digests)
        entries = [e for e in self.site.access_log() if e["path"] != "/robots.txt"]
        if len(entries) < 2:
            raise RuntimeError(f"{config.name}: the crawl fetched nothing; see {run_dir}")
        start, end = entries[0]["ts"], entries[-1]["ts"]
        found = read_digests(digests)
        return Run(
            pages=len(entries),
            distinct=len({e["path"] for e in entries}),
            seconds=end - start,
            cpu_seconds=sampler.cores(pids, start, end) * (end - start),
            items=len(found),
            digest=combined(found),
        )

    def run_bare(
        self, config: Config, run_dir: Path, digests: Path
    ) -> tuple[list[int], CpuSampler]:
        settings = {
            **config.scrapy_settings(self.plan.concurrency),
            DIGEST_DIR_SETTING: str(digests),
            "LOG_FILE": str(run_dir / "scrapy.log"),
        }
        argv = [sys.executable, "-m", "scrapy", "crawl", SITE, "-a", f"base_url={self.site.url}"]
        for name, value in settings.items():
            argv += ["-s", f"{name}={value}"]
        env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
        return run_to_end(argv, env=env, cwd=REPO_ROOT, output=run_dir / "stdout.log")

    def run_crawlee(self, run_dir: Path, digests: Path) -> tuple[list[int], CpuSampler]:
        assert self.crawlee is not None
        argv = [str(self.crawlee), str(CRAWLEE_SCRIPT), self.site.url, str(self.plan.concurrency)]
        env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
        # The repository's code (the demo spider's extraction) on crawlee's side too.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p
        )
        # cwd: crawlee may write its storage directory there.
        return run_to_end(
            [*argv, str(digests)], env=env, cwd=run_dir, output=run_dir / "stdout.log"
        )

    def run_workers(
        self, config: Config, run_dir: Path, digests: Path
    ) -> tuple[list[int], CpuSampler]:
        """Always-on workers started idle; the job produced once they heartbeat; stopped
        (gracefully: items digested at close) once the crawl is whole."""
        settings = {
            **config.scrapy_settings(self.plan.concurrency),
            DIGEST_DIR_SETTING: str(digests),
            "REDIS_URL": self.redis.url,
            "DEMO_SITE_URL": self.site.url,
            "PLATFORM_RUN_DIR": str(run_dir),
        }
        if config.kind == "full":
            settings["ELASTICSEARCH_URL"] = self.es_node.url
        job_id = new_job_id(SITE)
        pool = WorkerPool(
            job_id,
            run_dir=run_dir,
            settings=settings,
            base_url=self.site.url,
            env={k: v for k, v in os.environ.items() if k != "REDIS_CLUSTER"},
        )
        try:
            pool.start(config.processes, self.client)  # idle until the job is produced
            pids = sorted(pool.pids)
            with CpuSampler(lambda: pids, interval=SAMPLE_INTERVAL) as sampler:
                produce(self.client, SITE, job_id=job_id, base_url=self.site.url)
                self.wait_crawled(pool, stored=config.kind == "full")
        finally:
            pool.stop()
        return pids, sampler

    def wait_crawled(self, pool: WorkerPool, *, stored: bool, timeout: float = 900) -> None:
        """Every page of the catalogue fetched, nothing queued or leased (every response's
        items done) and, with the store, every product in the item index."""
        deadline = time.monotonic() + timeout
        frontier = RedisFrontier(self.client, SITE)
        log: list[dict[str, object]] = []
        while True:
            log += self.site.access_log(since=len(log))
            pages = sum(entry["path"] != "/robots.txt" for entry in log)
            if (
                pages >= self.expected_pages
                and frontier.queued() == 0
                and frontier.leased() == 0
                and (not stored or self.stored() >= self.plan.products)
            ):
                return
            for number, worker in pool.live.items():
                if not worker.alive():
                    raise RuntimeError(f"worker {number} exited; see {pool.log_path(number)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{pages} of {self.expected_pages} pages after {timeout:.0f}s")
            time.sleep(0.2)

    def stored(self) -> int:
        try:
            return int(self.es.count(index=ITEM_INDEX)["count"])
        except NotFoundError:
            return 0


SERVICE_VARIABLES = ("REDIS_URL", "ELASTICSEARCH_URL", "DEMO_SITE_URL", "REDIS_CLUSTER")
SAMPLE_INTERVAL = 0.1


def run_to_end(
    argv: list[str], *, env: dict[str, str], cwd: Path, output: Path
) -> tuple[list[int], CpuSampler]:
    """Run a crawl process to its end, its CPU sampled from /proc and, at its exit, read
    exactly from its rusage (the last /proc sample may be older than its last request)."""
    with output.open("wb") as out:
        process = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    with CpuSampler(lambda: [process.pid], interval=SAMPLE_INTERVAL) as sampler:
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        cpu = {process.pid: usage.ru_utime + usage.ru_stime}
        sampler.samples.append(Sample(time.time(), cpu, *machine_cpu()))
    process.returncode = os.waitstatus_to_exitcode(status)
    sampler.samples.sort(key=lambda sample: sample.at)
    if process.returncode:
        tail = "\n".join(output.read_text(errors="replace").splitlines()[-20:])
        raise RuntimeError(f"{argv[0]} exited {process.returncode}; see {cwd}:\n{tail}")
    return [process.pid], sampler


# -- the table ------------------------------------------------------------------------------


@dataclass
class Table:
    """One latency's runs, and what the table says of them."""

    plan: Plan
    latency_ms: int
    expected_pages: int
    configs: list[Config]
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def add(self, config: Config, run: Run) -> None:
        self.runs.setdefault(config.name, []).append(run)

    def config(self, name: str) -> Config:
        return next(config for config in self.configs if config.name == name)

    def rate(self, name: str) -> float:
        return statistics.median(run.rate for run in self.runs[name])

    def ratio(self, name: str) -> float:
        return self.rate(name) / self.rate(BARE)

    def ceiling(self, name: str) -> float | None:
        return self.plan.ceiling(self.latency_ms, self.config(name).processes)

    def share(self, name: str) -> float | None:
        ceiling = self.ceiling(name)
        return None if ceiling is None else self.rate(name) / ceiling

    def cpu_ms(self, name: str) -> float:
        return statistics.median(run.cpu_ms_per_page for run in self.runs[name])

    @property
    def reference(self) -> Run:
        """Bare Scrapy's first run: the items every configuration must reproduce."""
        return self.runs[BARE][0]

    def check(self, name: str) -> str:
        """``ok``: every run fetched each page of the catalogue once and produced every
        product, the same items as bare Scrapy; else what differed."""
        problems: list[str] = []
        for run in self.runs[name]:
            found = []
            if run.pages != self.expected_pages or run.distinct != self.expected_pages:
                found.append(f"pages {run.pages} ({run.distinct} distinct)/{self.expected_pages}")
            if run.items != self.plan.products:
                found.append(f"items {run.items}/{self.plan.products}")
            elif run.digest != self.reference.digest:
                found.append(f"items differ ({run.digest})")
            problems += [problem for problem in found if problem not in problems]
        return "; ".join(problems) or "ok"

    def goals(self) -> list[tuple[str, bool]]:
        """Issue 18's goals that this latency measures: (what was found, met)."""
        if FULL_1 not in self.runs:
            return []
        full = self.rate(FULL_1)
        if not self.latency_ms:
            ratio = full / self.rate(BARE)
            return [(f"full path 1 worker >= {BARE_RATIO_GOAL}x bare Scrapy: {ratio:.2f}x",
                     ratio >= BARE_RATIO_GOAL)]  # fmt: skip
        share = self.share(FULL_1) or 0.0
        goals = [
            (f"full path 1 worker >= {CEILING_SHARE_GOAL:.0%} of its ceiling: {share:.0%}",
             share >= CEILING_SHARE_GOAL),
        ]  # fmt: skip
        if CRAWLEE in self.runs:
            crawlee = self.rate(CRAWLEE)
            goals.append(
                (f"full path 1 worker >= crawlee: {full:.0f} vs {crawlee:.0f} pages/s "
                 f"({full / crawlee:.2f}x)", full >= crawlee)
            )  # fmt: skip
        if FULL_2 in self.runs:
            scaling = self.rate(FULL_2) / full
            goals.append(
                (f"full path 2 workers >= {SCALING_GOAL}x 1 worker: {scaling:.2f}x",
                 scaling >= SCALING_GOAL)
            )  # fmt: skip
        return goals

    def render(self) -> str:
        reference = self.reference
        width = max(len(name) for name in self.runs)
        lines = [
            f"server latency {self.latency_ms} ms, concurrency {self.plan.concurrency} per "
            f"process, {self.plan.products} products = {self.expected_pages} pages, "
            f"{len(self.runs[BARE])} round(s), medians; items: "
            f"{reference.items}, digest {reference.digest} (bare Scrapy)",
            f"{'configuration':<{width}}  {'pages/s':>8}  {'vs bare':>7}  {'ceiling':>7}  "
            f"{'share':>5}  {'CPU ms/page':>11}  items check",
        ]
        for name in self.runs:
            ceiling, share = self.ceiling(name), self.share(name)
            lines.append(
                f"{name:<{width}}  {self.rate(name):>8.1f}  {self.ratio(name):>6.2f}x  "
                f"{'-' if ceiling is None else f'{ceiling:.0f}':>7}  "
                f"{'-' if share is None else f'{share:.0%}':>5}  "
                f"{self.cpu_ms(name):>11.2f}  {self.check(name)}"
            )
        if FULL_1_HTTP11 in self.runs and FULL_1 in self.runs:
            ours, scrapys = self.cpu_ms(FULL_1), self.cpu_ms(FULL_1_HTTP11)
            lines.append(
                f"browser identity (curl_cffi) vs HTTP/1.1 handler, full path 1 worker: "
                f"{ours:.2f} vs {scrapys:.2f} CPU ms/page ({ours / scrapys:.2f}x), "
                f"{self.rate(FULL_1) / self.rate(FULL_1_HTTP11):.2f}x the pages/s"
            )
        if FULL_THROTTLED in self.runs and FULL_1 in self.runs:
            cost = self.rate(FULL_THROTTLED) / self.rate(FULL_1)
            lines.append(
                f"AutoThrottle on (project default) vs pinned, full path 1 worker: {cost:.2f}x"
            )
        lines += [f"goal: {text} {'met' if met else 'MISSED'}" for text, met in self.goals()]
        return "\n".join(lines)


def run(plan: Plan, workdir: Path, *, crawlee: Path | None, log: Log = print) -> list[Table]:
    """Every latency's table; the shop, Redis and an ES node for the whole run."""
    tables = []
    settings = {"action.destructive_requires_name": "false"}  # items-* deleted between runs
    with (
        DemoSite(run_dir=workdir, products=plan.products, seed=plan.seed) as site,
        RedisServer(run_dir=workdir) as redis,
        ElasticsearchNode(run_dir=workdir, settings=settings) as es,
    ):
        bench = Bench(plan, site, redis, es, workdir, crawlee)
        try:
            for latency in plan.latencies:
                tables.append(measure_latency(bench, latency, log))
        finally:
            bench.close()
    return tables


def measure_latency(bench: Bench, latency_ms: int, log: Log) -> Table:
    """The configurations of one latency, interleaved in each round."""
    configs = configurations(latency_ms, bench.crawlee is not None)
    table = Table(bench.plan, latency_ms, bench.expected_pages, configs)
    for round_no in range(1, bench.plan.rounds + 1):
        for number, config in enumerate(configs):
            began = time.monotonic()
            measured = bench.measure(config, latency_ms, f"{latency_ms}ms-r{round_no}-{number}")
            table.add(config, measured)
            log(
                f"  [{latency_ms} ms, round {round_no}] {config.name}: {measured.pages} pages in "
                f"{measured.seconds:.2f}s, {measured.rate:.0f} pages/s, "
                f"{measured.cpu_ms_per_page:.2f} CPU ms/page, {measured.items} items "
                f"({time.monotonic() - began:.0f}s wall)"
            )
    return table


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    default = Plan()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=default.rounds)
    parser.add_argument("--products", type=int, default=default.products)
    parser.add_argument("--latency-ms", type=int, nargs="+", default=list(default.latencies))
    parser.add_argument("--seed", type=int, default=default.seed)
    parser.add_argument("--run-dir", type=Path, help="default: a new directory in the run dir")
    parser.add_argument(
        "--no-crawlee-setup",
        action="store_true",
        help="use .venv-crawlee only as it is (never install); without it, no crawlee row",
    )
    # The smoke run installs nothing (tests never download): crawlee's row runs when its
    # venv is set up at the current requirements.
    args = smoke.parse_args(
        parser, argv, rounds=1, products=24, latency_ms=[0], no_crawlee_setup=True
    )
    if args.rounds < 1 or args.products < 1 or min(args.latency_ms) < 0:
        parser.error("--rounds and --products must be positive, --latency-ms >= 0")
    plan = Plan(
        products=args.products,
        seed=args.seed,
        rounds=args.rounds,
        latencies=tuple(args.latency_ms),
    )
    run_root = get_settings().platform_run_dir
    run_root.mkdir(parents=True, exist_ok=True)
    workdir = args.run_dir or Path(tempfile.mkdtemp(prefix="frontier-", dir=run_root))
    crawlee = crawlee_python() if args.no_crawlee_setup else ensure_crawlee()
    if crawlee is None:
        print("no crawlee row: .venv-crawlee is not set up at the current requirements")
    started = time.monotonic()
    print(f"load average at start: {load_average()}")
    tables = run(
        plan, workdir, crawlee=crawlee, log=lambda line: print(line, file=sys.stderr, flush=True)
    )
    for table in tables:
        print()
        print(table.render())
    print(
        f"\nrun time {time.monotonic() - started:.0f}s; load average at end: {load_average()}; "
        f"logs in {workdir}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
