"""Getting the pages past bot defenses: the demo shop behind the bot-defense stand-in, at
each of its levels, crawled the full production way by each fetch configuration.

    .venv/bin/python -m bench.access [--products 1200] [--levels 0 1 2 3 4]
        [--rows http11 identity sessions auto render] [--rounds 1] [--open-rounds 2]
        [--cap 600] [--run-dir DIR]

Levels 0-4 of ``harness.bot_defense`` (docs/bot-defense.md); rows: the HTTP/1.1 handler,
the browser identity, identity + sessions + escalation, sessions + ``RENDER_MODE=auto``,
render every page; then ``auto`` against the open shop beside the defaults. Each row's
blocks are checked against the stand-in's log. Exit status 1 when a goal or check fails.
Columns, checks and goals: docs/fetching.md "Measuring it: ``python -m bench.access``".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from bench.rendering import ProcessCpu, cpu_seconds, tree
from bench.scaling import ITEM_INDEX
from bench.stack import SITE, WorkerPool
from core.frontier.queue import RedisFrontier
from core.jobs.index import job_counters, job_document
from core.keys import SiteKeys
from crawlers.cli.producer import produce
from crawlers.runtime.jobs import new_job_id
from harness.bot_defense import BotDefense
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer

LEVELS = (0, 1, 2, 3, 4)
OPEN = -1  # the "level" of the open site: the demo shop without the stand-in
LEVEL_NAMES = {
    OPEN: "open site",
    0: "none",
    1: "headers",
    2: "+ TLS",
    3: "+ challenge",
    4: "+ rate/CAPTCHA",
}
# The stand-in's per-session rate (requests per window) and the sessions row's budget:
# below it, as a site's profile sets it below what the site tolerates.
DEFENSE_SESSION_RATE = 40
DEFENSE_RATE_WINDOW = 10.0
ROWS: dict[str, dict[str, Any]] = {
    "http11": {"FETCH_IDENTITY": "crawler"},
    "identity": {"FETCH_IDENTITY": "browser"},
    "sessions": {
        "FETCH_IDENTITY": "browser",
        "SESSIONS_ENABLED": True,
        "SESSION_POOL_SIZE": 4,
        "SESSION_MAX_RATE": 3.8,
        "SESSION_MAX_USES": 0,
    },
    "render": {"FETCH_IDENTITY": "browser", "RENDER_MODE": "always"},
}
ROWS["auto"] = {**ROWS["sessions"], "RENDER_MODE": "auto"}
# The open site's baseline: the profile's own settings (browser identity, nothing else).
DEFAULTS = "defaults"
ROWS[DEFAULTS] = {}
ROW_NAMES = {
    "http11": "HTTP/1.1 handler",
    "identity": "browser identity",
    "sessions": "identity + sessions + escalation",
    "auto": "sessions + RENDER_MODE=auto",
    "render": "render every page",
    DEFAULTS: "defaults",
}
MEASURED = ("http11", "identity", "sessions", "auto", "render")  # the levels' rows
GOAL_ROWS = ("sessions", "auto")
COMMON: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "AUTOTHROTTLE_ENABLED": False,
    "RETRY_BACKOFF_BASE": 0.2,
    "RETRY_BACKOFF_MAX": 2.0,
    "LOG_LEVEL": "INFO",
    "RECRAWL_CARD_SKIP": False,
}
PRODUCTS_GOAL = 0.999
RENDERED_GOAL = 0.05
CPU_RATIO_GOAL = 1.5
OPEN_RATIO_GOAL = 1.2
STABLE_SECONDS = 3.0  # the frontier empty and nothing leased this long: the crawl is over
BROWSER_ONLY = frozenset({"/favicon.ico"})  # Chromium asks for it, the crawl does not


@dataclass
class Row:
    level: int
    config: str
    learnt: bool = False  # the site's render choices kept from an earlier job
    products: int = 0  # stored whole
    incomplete: int = 0  # stored without a part (the reviews the API refused)
    expected: int = 0
    pages: int = 0
    rendered: int = 0
    seconds: float = 0.0  # the stand-in's first to last request (the open site: wall)
    wall: float = 0.0  # the job's production to its end
    cpu_seconds: float = 0.0
    blocks: dict[str, int] = field(default_factory=dict)  # the report's, by kind
    defense: Counter[str] = field(default_factory=Counter)  # the stand-in's decisions
    challenges_passed: int = 0
    sessions_created: int = 0
    sessions_retired: int = 0
    ended: str = ""
    cpu_by_kind: dict[str, float] = field(default_factory=dict)  # process kind -> seconds
    checks: list[str] = field(default_factory=list)  # failed checks

    @property
    def share(self) -> float:
        return self.products / self.expected if self.expected else 0.0

    @property
    def rendered_share(self) -> float:
        return self.rendered / self.pages if self.pages else 0.0

    @property
    def cpu_per_1000(self) -> float | None:
        return 1000 * self.cpu_seconds / self.products if self.products else None

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0


class Bench:
    def __init__(self, workdir: Path, products: int, cap: float) -> None:
        self.workdir = workdir
        self.products = products
        self.cap = cap
        self.site = DemoSite(products=products, run_dir=workdir, seed=7)
        self.redis = RedisServer(run_dir=workdir)
        # items-* deleted between crawls.
        self.es_node = ElasticsearchNode(
            run_dir=workdir, settings={"action.destructive_requires_name": "false"}
        )

    def __enter__(self) -> Bench:
        for service in (self.site, self.redis, self.es_node):
            service.start()
        self.client = self.redis.client(socket_timeout=30)
        self.es = Elasticsearch(self.es_node.url, request_timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
            self.es.close()
        for service in (self.es_node, self.redis, self.site):
            with contextlib.suppress(Exception):
                service.stop()

    def defense(self, level: int) -> BotDefense:
        return BotDefense(
            upstream=self.site.url,
            level=level,
            run_dir=self.workdir / f"defense-{level}",
            session_rate=DEFENSE_SESSION_RATE,
            rate_window=DEFENSE_RATE_WINDOW,
        )

    def reset(self, defense: BotDefense | None, *, keep_choices: bool = False) -> None:
        choices = SiteKeys(SITE).render_choice
        kept = self.client.hgetall(choices) if keep_choices else {}
        self.client.flushall()
        if kept:
            self.client.hset(choices, mapping=kept)
        self.es.indices.delete(index="items-*", ignore_unavailable=True, allow_no_indices=True)
        self.site.reset()
        if defense is not None:
            defense.clear_log()

    def stored(self, *, complete: bool = False) -> int:
        """Products in the item index (``complete``: those with every part, reviews
        included)."""
        query = {"bool": {"must_not": {"exists": {"field": "incomplete"}}}} if complete else None
        try:
            self.es.indices.refresh(index=ITEM_INDEX)
            return int(self.es.count(index=ITEM_INDEX, query=query)["count"])
        except NotFoundError:
            return 0

    def measure(
        self, level: int, config: str, defense: BotDefense | None, *, learnt: bool = False
    ) -> Row:
        """One crawl of ``config`` through ``defense`` (None: the open demo shop);
        ``learnt``: the render choices of the crawl before are kept."""
        self.reset(defense, keep_choices=learnt)
        name = "open" if defense is None else f"level{level}"
        name += "-learnt" if learnt else ""
        run_dir = self.workdir / f"{name}-{config}"
        run_dir.mkdir(parents=True, exist_ok=True)
        job_id = new_job_id(SITE)
        base_url = defense.url if defense is not None else self.site.url
        settings = {
            **COMMON,
            **ROWS[config],
            "REDIS_URL": self.redis.url,
            "ELASTICSEARCH_URL": self.es_node.url,
            "PLATFORM_RUN_DIR": str(run_dir),
        }
        pool = WorkerPool(
            job_id,
            run_dir=run_dir,
            settings={k: str(v) for k, v in settings.items()},
            base_url=base_url,
            env={k: v for k, v in os.environ.items() if k != "REDIS_CLUSTER"},
        )
        row = Row(level, config, learnt, expected=self.products)
        pool.start(1, self.client)
        (pid,) = pool.pids
        cpu = ProcessCpu(pid)
        # From the job's start: the worker's own start-up is not the crawl's cost.
        idle = sum(seconds for p in tree(pid) if (seconds := cpu_seconds(p)) is not None)
        started = time.monotonic()
        try:
            produce(self.client, SITE, job_id=job_id, base_url=base_url)
            row.ended = self.wait(pool, started)
            row.wall = time.monotonic() - started
        finally:
            pool.stop()
            by_kind = cpu.stop()
        row.cpu_seconds = sum(by_kind.values()) - idle
        row.cpu_by_kind = {kind: seconds for kind, seconds in by_kind.items() if seconds}
        row.cpu_by_kind["scrapy"] = row.cpu_by_kind.get("scrapy", 0.0) - idle
        self.read_figures(row, job_id, defense)
        return row

    def wait(self, pool: WorkerPool, started: float) -> str:
        frontier = RedisFrontier(self.client, SITE)
        quiet_since: float | None = None
        while True:
            now = time.monotonic()
            if self.stored() >= self.products:
                return "all stored"
            exited = [w for w in pool.live.values() if not w.alive()]
            if exited:
                return f"worker exited {exited[0].returncode}"
            if frontier.queued() == 0 and frontier.leased() == 0:
                quiet_since = quiet_since or now
                if now - quiet_since >= STABLE_SECONDS:
                    return "drained"
            else:
                quiet_since = None
            if now - started > self.cap:
                return f"cap {self.cap:.0f}s"
            time.sleep(0.25)

    def read_figures(self, row: Row, job_id: str, defense: BotDefense | None) -> None:
        time.sleep(2.5)  # the store's last flush and the workers' last stats push
        row.products = self.stored(complete=True)
        row.incomplete = self.stored() - row.products
        counters = job_counters(self.client, SITE, job_id)
        document = job_document(SITE, job_id, "completed", None, None, counters)
        row.pages = int(document["pages"])
        row.rendered = int(document["pages_rendered"])
        row.blocks = {
            kind: int(document[f"blocks_{kind}"])
            for kind in ("blocked", "challenge", "captcha", "throttled")
        }
        row.challenges_passed = int(document["challenges_passed"])
        row.sessions_created = int(document["sessions_created"])
        row.sessions_retired = int(document["sessions_retired"])
        if defense is None:
            row.seconds = row.wall
            return
        records = [r for r in defense.log_records() if r["path"] not in BROWSER_ONLY]
        row.defense = Counter(r["decision"] for r in records)
        times = [r["ts"] for r in records if r["decision"] != "internal"]
        row.seconds = (max(times) - min(times)) if len(times) > 1 else 0.0
        if row.config == "render":
            # The browser's own sub-resource requests are the stand-in's to count, not
            # the crawl's pages: no exact comparison for this row.
            return
        # The report against the stand-in's own log.
        expect = {
            "blocked": row.defense["headers"] + row.defense["tls"],
            "challenge": row.defense["challenge"],
            "captcha": row.defense["captcha"],
        }
        for kind, served in expect.items():
            if row.blocks[kind] != served:
                row.checks.append(f"{kind}: report {row.blocks[kind]} != stand-in {served}")
        if row.challenges_passed != row.defense["verified"]:
            row.checks.append(
                f"challenges passed: report {row.challenges_passed} "
                f"!= stand-in {row.defense['verified']}"
            )


def print_table(rows: Sequence[Row]) -> None:
    header = (
        f"{'level':<18} {'configuration':<38} {'products':>14} {'incompl.':>8} {'blocked':>8} "
        f"{'challenge':>9} {'captcha':>8} {'passed':>7} {'sessions':>8} {'rendered':>15} "
        f"{'CPU s/1k prod':>13} {'pages/s':>8} {'wall s':>7}  ended"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        cpu = "n/a" if row.cpu_per_1000 is None else f"{row.cpu_per_1000:.1f}"
        rendered = f"{row.rendered} ({100 * row.rendered_share:.1f}%)"
        name = ROW_NAMES[row.config] + (" (learnt)" if row.learnt else "")
        print(
            f"{row.level if row.level != OPEN else '-'} {LEVEL_NAMES[row.level]:<16} "
            f"{name:<38} {row.products:>6}/{row.expected:<6} "
            f"{row.incomplete:>8} {row.blocks.get('blocked', 0):>8} "
            f"{row.blocks.get('challenge', 0):>9} {row.blocks.get('captcha', 0):>8} "
            f"{row.challenges_passed:>7} {row.sessions_created:>8} {rendered:>15} "
            f"{cpu:>13} {row.pages_per_s:>8.1f} {row.wall:>7.1f}  {row.ended}"
        )
    print()
    print("CPU seconds by process (the worker's tree, from the job's start):")
    for row in rows:
        parts = ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in row.cpu_by_kind.items())
        name = ROW_NAMES[row.config] + (" (learnt)" if row.learnt else "")
        print(f"  {LEVEL_NAMES[row.level]}, {name}: {parts}")


def median_of(
    rows: Sequence[Row], level: int, config: str, value: str, *, learnt: bool = False
) -> float | None:
    values = [
        v
        for r in rows
        if r.level == level
        and r.config == config
        and r.learnt == learnt
        and (v := getattr(r, value)) is not None
    ]
    return statistics.median(values) if values else None


def goals(rows: Sequence[Row]) -> list[str]:
    failed = [f"{LEVEL_NAMES[r.level]} {r.config}: {c}" for r in rows for c in r.checks]
    for row in (r for r in rows if r.config in GOAL_ROWS and r.level != OPEN):
        where = f"level {row.level} {row.config}"
        if row.share < PRODUCTS_GOAL:
            failed.append(f"{where}: {row.share:.2%} of products < 99.9%")
        if row.rendered_share > RENDERED_GOAL:
            failed.append(f"{where}: {row.rendered_share:.1%} rendered > 5%")
    base = median_of(rows, 0, "sessions", "cpu_per_1000")
    challenged = median_of(rows, 3, "sessions", "cpu_per_1000")
    if base and challenged:
        ratio = challenged / base
        print(
            f"sessions row, CPU s per 1,000 products (medians): level 0 {base:.2f}, "
            f"level 3 {challenged:.2f}: {ratio:.2f}x (goal <= {CPU_RATIO_GOAL}x)"
        )
        if ratio > CPU_RATIO_GOAL:
            failed.append(f"challenge level CPU {ratio:.2f}x level 0 > {CPU_RATIO_GOAL}x")
    for value, what in (("cpu_seconds", "CPU seconds"), ("wall", "wall seconds")):
        default = median_of(rows, OPEN, DEFAULTS, value)
        first = median_of(rows, OPEN, "auto", value)
        learnt = median_of(rows, OPEN, "auto", value, learnt=True)
        if not default or first is None or learnt is None:
            continue
        ratio = learnt / default
        print(
            f"open site, {what} (medians): defaults {default:.2f}; sessions + auto "
            f"{learnt:.2f}: {ratio:.2f}x (goal <= {OPEN_RATIO_GOAL}x), its site's first job "
            f"(page types learnt) {first:.2f}: {first / default:.2f}x"
        )
        if ratio > OPEN_RATIO_GOAL:
            failed.append(f"open site: sessions + auto {what} {ratio:.2f}x the defaults")
    for row in (r for r in rows if r.level == OPEN and r.share < PRODUCTS_GOAL):
        failed.append(f"open site {row.config}: {row.share:.2%} of products < 99.9%")
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.access", description=__doc__)
    parser.add_argument("--products", type=int, default=1200)
    parser.add_argument("--levels", type=int, nargs="*", default=list(LEVELS))
    parser.add_argument("--rows", nargs="+", default=list(MEASURED), choices=list(MEASURED))
    parser.add_argument("--rounds", type=int, default=1, help="medians over this many")
    parser.add_argument(
        "--open-rounds", type=int, default=2, help="rounds of the open-site comparison (0: none)"
    )
    parser.add_argument("--cap", type=float, default=600.0, help="seconds per crawl at most")
    parser.add_argument("--run-dir", type=Path, help="keep logs here (default: a temp dir)")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        workdir = args.run_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        bench = stack.enter_context(Bench(workdir, args.products, args.cap))
        rows: list[Row] = []
        for n in range(1, args.rounds + 1):
            for level in args.levels:
                with bench.defense(level) as defense:
                    for config in args.rows:
                        print(f"round {n}: level {level}, {ROW_NAMES[config]} ...", flush=True)
                        rows.append(bench.measure(level, config, defense))
        for n in range(1, args.open_rounds + 1):
            for config, learnt in ((DEFAULTS, False), ("auto", False), ("auto", True)):
                what = ROW_NAMES[config] + (" (page types learnt)" if learnt else "")
                print(f"open site, round {n}: {what} ...", flush=True)
                rows.append(bench.measure(OPEN, config, None, learnt=learnt))
        print()
        print_table(rows)
        failed = goals(rows)
        load = os.getloadavg()
        print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        for line in failed:
            print(f"FAILED: {line}")
        return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
