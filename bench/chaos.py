"""Fault injection: one demo crawl through the Redis frontier under a schedule of faults,
then every report figure against the truth in Elasticsearch (``bench.truth``).

``run_chaos(plan, run_dir)`` starts the stack (``bench.stack``), produces a job and runs
``plan.workers`` always-on workers while it kills workers, restarts Redis, stops the ES
node, serves slow pages and 503 bursts, and kills the spill drainer (measuring the
takeover); faults not reached fire when the frontier empties, one never injected fails
the run. Then it waits for the drain as the flow does, writes the job's document and
compares it with the truth. Used by ``bench.soak``. The rules it keeps: docs/operations.md
"The chaos soak (``python -m bench.soak``, ``bench/chaos.py``)".
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from scrapy.utils.project import get_project_settings

from bench.stack import SITE, ChaosStack, Exit, WorkerPool
from bench.truth import (
    Check,
    Truth,
    checks,
    expected_products,
    item_key,
    read_docs,
    report_document,
    tally,
)
from core.frontier.drain import drain_state
from core.frontier.queue import RedisFrontier
from core.frontier.workers import WorkerRegistry
from core.jobs.index import job_counters, job_started_at
from core.keys import REDIS_ERRORS, SiteKeys
from core.store import spill_size
from crawlers import defaults
from crawlers.addon import drain_window
from crawlers.cli.producer import produce
from crawlers.profiles import SiteProfile
from crawlers.runtime.jobs import new_job_id
from standins.demo_site.behaviours import BLOCKS

Log = Callable[[str], None]
CATCH_ATTEMPTS = 3  # drainers caught, in case one releases the lock as the kill lands
# A spill of this many store batches waits for ES to take writes promptly before the kill.
WARM_SPILL_BATCHES = 3
PROBE_INDEX = "bench-chaos-probe"  # the write that tells a warm node (not the site's items)
# Counters shown next to the verdict: how hard the faults hit (never enforced).
SHOWN_COUNTERS = (
    "item_scraped_count",
    "demo/products",
    "demo/reviews_failed",
    "demo/request_failed",
    "fetch/gave_up/error",
    "store/indexed",
    "store/spilled",
    "store/spill_drained",
    "store/outages",
    "store/dead_letter",
)


@dataclass(frozen=True)
class Burst:
    """503 on every request (of ``paths``, if given) for ``seconds``, from ``at`` of the crawl.

    A burst shorter than the retry window of a request (RETRY_TIMES backoffs, at least
    1.75 s with the defaults) costs retries but no page; a longer one on the reviews API
    uses up the retries of the parts fetched in it.
    """

    at: float
    seconds: float
    paths: tuple[str, ...] | None = None

    def describe(self) -> str:
        where = ", ".join(self.paths) if self.paths else "every path"
        return f"503 burst {self.seconds:g}s on {where}"


@dataclass(frozen=True)
class FaultPlan:
    products: int = 5000
    workers: int = 3
    seed: int = 7
    kill_every: tuple[float, float] | None = (6.0, 10.0)  # seconds between worker kills
    redis_restart_at: float | None = 0.25
    es_stop_at: float | None = 0.35
    es_down_seconds: float = 35.0
    bursts: tuple[Burst, ...] = (
        Burst(0.10, 1.5),
        Burst(0.50, 5.0, ("/api/",)),
        Burst(0.80, 1.5),
    )
    slow_rate: float = 0.5  # fraction of paths served slowly ...
    slow_ms: int = 1500  # ... this late (the crawl's pace: workers x 16 in flight)
    captcha_rate: float = 0.0  # product pages answered once with a CAPTCHA (blocks)
    dead_parts: int = 0  # products whose reviews API answers 503 for the whole job
    drainer_kill: bool = True
    # Seconds from the drainer kill until another worker drains (the spill shrinks): the
    # lock's lease (6 s) and a spill check (5 s) of the store, then one bulk.
    takeover_limit: float = 15.0
    takeover_timeout: float = 300.0  # how long the spill is watched after that kill
    drain_timeout: float | None = None  # None: the demo profile's drain timeout
    recrawl: bool = True  # then a second job, no faults: every item complete, figures exact
    partitions: int = 1  # FRONTIER_PARTITIONS of the jobs (the producer records it)

    def quiet(self) -> FaultPlan:
        """The same crawl without any fault (the recrawl)."""
        return replace(
            self,
            kill_every=None,
            redis_restart_at=None,
            es_stop_at=None,
            bursts=(),
            slow_rate=0.0,
            captcha_rate=0.0,
            dead_parts=0,
            drainer_kill=False,
            recrawl=False,
        )


@dataclass
class Event:
    at: float  # seconds since the job was produced
    what: str


@dataclass
class Takeover:
    """The drainer kill and what followed (seconds from the kill)."""

    targeted: bool  # the lock named the drainer's pid
    lock_value: str
    killed: list[int]
    spill_at_kill: int
    shrink_seconds: float | None = None  # spill below its size at the kill
    lock_seconds: float | None = None  # lock released or held by another token
    empty_seconds: float | None = None  # spill empty


@dataclass
class ChaosResult:
    plan: FaultPlan
    job_id: str
    run_dir: Path
    events: list[Event]
    document: dict[str, Any]
    truth: Truth
    checks: list[Check]
    counters: dict[str, int]
    served: dict[str, int]
    exits: list[Exit]
    takeover: Takeover | None
    crawl_seconds: float | None  # first to last request the shop served
    drain_seconds: float | None  # producer to drained (None: timed out)
    dead_parts: list[str] = field(default_factory=list)  # item keys
    es_unavailable: float | None = None  # seconds from the ES stop to ready again
    recrawl: ChaosResult | None = None  # the second, quiet job

    @property
    def failures(self) -> list[Check]:
        """The enforced checks that failed (``info`` rows never count)."""
        own = [check for check in self.checks if check.failed]
        return own + (self.recrawl.failures if self.recrawl else [])

    def table(self) -> str:
        return format_result(self)

    def to_dict(self) -> dict[str, Any]:
        """Everything measured, for ``result.json`` in the run directory."""
        return {
            "job_id": self.job_id,
            "plan": asdict(self.plan),
            "checks": [asdict(check) | {"ok": check.ok} for check in self.checks],
            "document": self.document,
            "counters": self.counters,
            "served": self.served,
            "truth": asdict(self.truth),
            "takeover": asdict(self.takeover) if self.takeover else None,
            "crawl_seconds": self.crawl_seconds,
            "drain_seconds": self.drain_seconds,
            "events": [asdict(event) for event in self.events],
            "exits": [asdict(exit_) for exit_ in self.exits],
            "dead_parts": self.dead_parts,
            "es_unavailable": self.es_unavailable,
            "recrawl": self.recrawl.to_dict() if self.recrawl else None,
        }


class ChaosRun:
    def __init__(
        self, plan: FaultPlan, stack: ChaosStack, log: Log, *, label: str = "", t0: float
    ) -> None:
        self.plan = plan
        self.stack = stack
        self.log = log
        self.label = label  # check names of a second job start with it
        self.rng = random.Random(plan.seed)
        self.server = stack.redis_client()
        self.keys = SiteKeys(SITE)
        self.job_id = new_job_id(SITE)
        self.events: list[Event] = []
        self.t0 = t0  # events are timed from the first job's producer
        self.started = t0  # this job's producer
        self.dead_parts: list[str] = []
        self.pool = WorkerPool(
            self.job_id,
            run_dir=stack.run_dir,
            settings={
                "REDIS_URL": stack.redis.url,
                "ELASTICSEARCH_URL": stack.es.url,
                "DEMO_SITE_URL": stack.site.url,
                "PLATFORM_RUN_DIR": str(stack.run_dir),
            },
            base_url=stack.site.url,
        )
        self.takeover: Takeover | None = None
        self.injected: dict[str, bool] = {}
        self.drain_timeout = plan.drain_timeout or float(SiteProfile.load(SITE).timeouts.drain)
        self.errors: list[str] = []  # from the fault threads
        self.es_unavailable: float | None = None  # ES stop to ready again, seconds
        self._kills_paused = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- bookkeeping ------------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self.t0

    def event(self, what: str) -> None:
        what = f"{self.label}{what}"
        self.events.append(Event(self.now(), what))
        self.log(f"[{self.now():7.1f}s] {what}")

    def _safe(self, read: Callable[[], Any], default: Any) -> Any:
        try:
            return read()
        except REDIS_ERRORS:
            return default

    def progress(self) -> float:
        scraped = self._safe(
            lambda: int(self.server.hget(self.keys.stats(self.job_id), "item_scraped_count") or 0),
            0,
        )
        return scraped / self.plan.products

    def workers_up(self) -> bool:
        """Every worker of the pool sends heartbeats (none is still starting)."""
        pids = set(self.pool.pids)
        registry = WorkerRegistry(self.server, SITE)
        return bool(pids) and self._safe(lambda: pids <= {w.pid for w in registry.live()}, False)

    def frontier_empty(self) -> bool:
        frontier = RedisFrontier(self.server, SITE)
        return bool(self._safe(lambda: frontier.queued() == 0 and frontier.leased() == 0, False))

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> ChaosResult:
        plan, site = self.plan, self.stack.site
        behaviours: dict[str, Any] = {}
        if plan.slow_rate > 0:
            behaviours["slow"] = {"rate": plan.slow_rate, "ms": plan.slow_ms}
        if plan.captcha_rate > 0:
            behaviours["captcha"] = {"rate": plan.captcha_rate, "paths": ["/product/"]}
        if plan.dead_parts:
            dead = self.rng.sample(sorted(p.sku for p in site.catalog().products), plan.dead_parts)
            self.dead_parts = sorted(item_key(sku) for sku in dead)
            paths = [f"/api/products/{sku}/reviews" for sku in sorted(dead)]
            behaviours["unavailable"] = {"attempts": None, "paths": paths}
            self.injected[f"{plan.dead_parts} dead parts"] = True
        if behaviours:
            site.control(**behaviours)
        self.started = time.monotonic()
        settings = get_project_settings()
        settings.set("FRONTIER_PARTITIONS", plan.partitions)
        job = produce(self.server, SITE, job_id=self.job_id, base_url=site.url, settings=settings)
        self.event(f"produced {job.job_id} ({job.entries} start entries)")
        self.pool.start(plan.workers, self.server)
        self.event(f"{plan.workers} workers up (pids {sorted(self.pool.pids)})")
        try:
            self.crawl_under_faults()
            drain_seconds = self.wait_for_drain()
        finally:
            self._kills_paused.set()
            for thread in self._threads:
                thread.join(timeout=plan.takeover_timeout + 180)
            self.pool.stop()
        self.event("workers stopped (SIGTERM)")
        return self.measure(drain_seconds)

    def crawl_under_faults(self) -> None:
        plan = self.plan
        pending_bursts = sorted(plan.bursts, key=lambda b: b.at)
        burst_ends: float | None = None
        next_kill = self.now() + self.rng.uniform(*plan.kill_every) if plan.kill_every else None
        redis_due, es_due = plan.redis_restart_at is not None, plan.es_stop_at is not None
        last_report = 0.0
        while True:
            if self.errors:
                raise RuntimeError("chaos run aborted: " + "; ".join(self.errors))
            for gone in self.pool.reap():
                self.event(f"worker {gone.number} (pid {gone.pid}) exited by itself: {gone.code}")
            progress, empty = self.progress(), self.frontier_empty()
            if self.now() - last_report >= 10:
                last_report = self.now()
                spilled = self._safe(lambda: spill_size(self.server, SITE), -1)
                self.log(f"[{self.now():7.1f}s] progress {progress:.0%}, spill {spilled}")
            if burst_ends is not None and self.now() >= burst_ends:
                self.stack.site.control(error_burst=None)
                self.event("503 burst over")
                burst_ends = None
            due = pending_bursts and (progress >= pending_bursts[0].at or empty)
            if burst_ends is None and due:
                burst = pending_bursts.pop(0)
                spec: dict[str, Any] = {"count": 1_000_000}
                if burst.paths:
                    spec["paths"] = list(burst.paths)
                self.stack.site.control(error_burst=spec)
                self.injected[burst.describe()] = True
                self.event(burst.describe())
                burst_ends = self.now() + burst.seconds
            if redis_due and (progress >= (plan.redis_restart_at or 0) or empty):
                redis_due = False
                self.restart_redis()
            if es_due and (progress >= (plan.es_stop_at or 0) or empty):
                es_due = False
                self._spawn(self.es_outage)
            if next_kill is not None and self.now() >= next_kill and plan.kill_every:
                if empty or self._kills_paused.is_set():
                    next_kill = self.now() + self.rng.uniform(*plan.kill_every)
                elif self.workers_up():
                    pid = self.pool.kill_random(self.rng)
                    self.injected["worker kills"] = True
                    self.event(f"SIGKILL worker pid {pid}; replacement started")
                    next_kill = self.now() + self.rng.uniform(*plan.kill_every)
            busy = any(thread.is_alive() for thread in self._threads)
            if empty and not (pending_bursts or burst_ends or redis_due or es_due or busy):
                self.event("frontier empty, every fault injected")
                return
            time.sleep(0.1)

    def restart_redis(self) -> None:
        with self.pool.hold():  # a worker started on a Redis that is down exits (issue 14)
            self.event("Redis stop (SIGTERM)")
            self.stack.restart_redis()
            self.injected["Redis restart"] = True
            self.event("Redis back (same port, append-only file)")

    def es_outage(self) -> None:
        es = self.stack.es
        self.event("ES node stop")
        stopped = time.monotonic()
        es.stop()
        self.injected[f"ES down {self.plan.es_down_seconds:g}s"] = True
        time.sleep(self.plan.es_down_seconds)
        self.event("ES node start (same data)")
        es.start()  # returns once the node is ready: it answers, the cluster recovered
        self.es_unavailable = time.monotonic() - stopped
        self.event(f"ES node ready ({self.es_unavailable:.1f}s after the stop)")
        if self.plan.drainer_kill:
            # Only now: a kill while ES still recovers would time its recovery, not the
            # spill's takeover by another worker.
            self._spawn(self.kill_drainer)

    def _spawn(self, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except Exception as exc:  # a fault that could not be undone ends the run
                self.errors.append(f"{target.__name__}: {type(exc).__name__}: {exc}")
                self.event(f"{target.__name__} failed: {exc}")

        thread = threading.Thread(target=run, name=target.__name__, daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- the drainer kill -----------------------------------------------------------------
    def kill_drainer(self) -> None:
        """Catch a worker holding the spill lock with items in the spill, SIGKILL it and
        watch the spill: when does another worker take over?"""
        if not self.stack.es.ready():
            self.event("drainer kill not injected: ES is not ready")
            return
        self._wait_for_prompt_writes()
        for _ in range(CATCH_ATTEMPTS):
            caught = self._catch_holder(timeout=60.0)
            if caught is None:
                self.event("drainer kill not injected: never saw the lock held with a spill")
                return
            self._kills_paused.set()  # the measurement is of one kill, not of the schedule
            try:
                if self._kill_holder(*caught):
                    return
            finally:
                self._kills_paused.clear()
        self.event(f"drainer kill not injected: released the lock first {CATCH_ATTEMPTS} times")

    def _wait_for_prompt_writes(self, timeout: float = 60.0) -> None:
        """A node just restarted answers its first writes slowly (JIT, caches: its own
        recovery, not the takeover). With a spill of several batches (one the first batches
        would empty must be caught at once), the kill waits until a write of ours to a probe
        index is answered within a second."""
        _, spilled = self._lock_and_spill()
        if spilled < WARM_SPILL_BATCHES * defaults.STORE_BULK_SIZE:
            return
        deadline = time.monotonic() + timeout
        with Elasticsearch(self.stack.es.url, request_timeout=10, max_retries=0) as es:
            while time.monotonic() < deadline:
                started = time.monotonic()
                with contextlib.suppress(Exception):  # not taking writes yet: again
                    es.index(index=PROBE_INDEX, id="probe", document={"at": time.time()})
                    if time.monotonic() - started < 1.0:
                        self.event(f"ES takes writes promptly (spill {self._lock_and_spill()[1]})")
                        return
                time.sleep(0.5)
        self.event(f"ES still slow to write {timeout:g}s after ready; killing the drainer anyway")

    def _catch_holder(self, *, timeout: float) -> tuple[bytes, int] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value, spilled = self._lock_and_spill()
            if value and spilled:
                return value, spilled
            time.sleep(0.005)
        return None

    def _lock_and_spill(self) -> tuple[bytes, int]:
        def read() -> tuple[bytes, int]:
            with self.server.pipeline(transaction=False) as pipe:
                pipe.get(self.keys.store_spill_lock)
                pipe.llen(self.keys.store_spill)
                value, size = pipe.execute()
            return value or b"", int(size)

        result: tuple[bytes, int] = self._safe(read, (b"", 0))
        return result

    def _kill_holder(self, value: bytes, spilled: int) -> bool:
        """Kill the lock's holder; False if it let go of the lock before the kill landed
        (nothing measured: catch another)."""
        text = value.decode(errors="replace")
        head = text.split(":", 1)[0]
        pid = int(head) if head.isdigit() and ":" in text else None
        with self.pool.lock:
            if pid is not None:
                killed, targeted = ([pid] if self.pool.kill(pid) else []), True
                what = f"SIGKILL spill drainer pid {pid}" if killed else f"holder {pid} was dead"
            else:
                # The lock does not name its holder: kill every worker, the holder among them.
                killed, targeted = sorted(self.pool.pids), False
                for worker in killed:
                    self.pool.kill(worker)
                what = f"lock names no pid: SIGKILL all {len(killed)} workers (the drainer too)"
        killed_at = time.monotonic()
        lock, _ = self._lock_and_spill()
        if lock != value:
            self.event(f"{what}, but the lock was released first; catching another drainer")
            return False
        self.event(f"{what} (lock {text!r}, spill {spilled})")
        self.injected["drainer kill"] = True
        takeover = Takeover(targeted, text, killed, spilled)
        self.takeover = takeover
        while time.monotonic() - killed_at < self.plan.takeover_timeout:
            lock, size = self._lock_and_spill()
            elapsed = time.monotonic() - killed_at
            if takeover.lock_seconds is None and lock != value:
                takeover.lock_seconds = elapsed
            if takeover.shrink_seconds is None and size < spilled:
                takeover.shrink_seconds = elapsed
                self.event(f"spill shrinking again ({size}) {elapsed:.1f}s after the drainer kill")
            if size == 0:
                takeover.empty_seconds = elapsed
                self.event(f"spill empty {elapsed:.1f}s after the drainer kill")
                return True
            time.sleep(0.05)
        self.event(f"spill not empty {self.plan.takeover_timeout:g}s after the drainer kill")
        return True

    # -- drain and measure --------------------------------------------------------------------
    def wait_for_drain(self) -> float | None:
        """Drained as the flow's drain step decides (``orchestration.scrape_tasks.drain_task``: the
        same stability window, and the spill empty); seconds since the producer, or None."""
        window = drain_window()
        timeout = self.drain_timeout
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            for gone in self.pool.reap():
                self.event(f"worker {gone.number} (pid {gone.pid}) exited by itself: {gone.code}")
            with contextlib.suppress(*REDIS_ERRORS):
                state = drain_state(self.server, SITE, self.job_id, stable_window=window)
                if state.drained and spill_size(self.server, SITE) == 0:
                    self.event(f"drained: {state.describe()}")
                    return time.monotonic() - self.started
            time.sleep(1.0)
        self.event(f"not drained after {timeout:g}s: {state.describe() if state else '?'}")
        return None

    def measure(self, drain_seconds: float | None) -> ChaosResult:
        plan, stack = self.plan, self.stack
        counters = job_counters(self.server, SITE, self.job_id)
        started = job_started_at(self.server, SITE, self.job_id)
        expected = expected_products(stack.site.catalog(), stack.site.url)
        with Elasticsearch(stack.es.url, request_timeout=60) as es:
            # The report column: the jobs document as the flow writes it, read back.
            document = report_document(self.server, es, self.job_id)
            docs = read_docs(es, expected)
        truth = tally(
            expected,
            docs,
            job_id=self.job_id,
            started_ms=int(started.timestamp() * 1000) if started else None,
        )
        access = stack.site.access_log()
        served = {
            "requests": len(access),
            "503": sum(1 for entry in access if entry["status"] == 503),
            "blocks": sum(1 for entry in access if _applied(entry) & set(BLOCKS)),
            "slow": sum(1 for entry in access if "slow" in _applied(entry)),
        }
        crawl_seconds = access[-1]["ts"] - access[0]["ts"] if len(access) > 1 else None
        verdict = checks(document, truth, blocks_served=served["blocks"])
        if plan.dead_parts:
            marked = [k for k in self.dead_parts if "reviews" in truth.parts_missing.get(k, [])]
            verdict.append(Check("dead parts marked incomplete", len(marked), plan.dead_parts))
        if not (plan.dead_parts or plan.bursts):
            verdict.append(Check("incomplete (nothing kept parts down)", len(truth.incomplete), 0))
        planned = self._planned_faults()
        if planned:
            injected = sum(1 for fault in planned if self.injected.get(fault))
            verdict.append(Check("faults injected", injected, len(planned)))
        verdict.append(
            Check("time to drain s (vs timeout)", drain_seconds, self.drain_timeout, limit=True)
        )
        if plan.drainer_kill:
            verdict += takeover_checks(self.takeover, plan.takeover_limit)
        if self.label:
            verdict = [replace(check, name=self.label + check.name) for check in verdict]
        return ChaosResult(
            plan=plan,
            job_id=self.job_id,
            run_dir=stack.run_dir,
            events=self.events,
            document=document,
            truth=truth,
            checks=verdict,
            counters=counters,
            served=served,
            exits=list(self.pool.exits),
            takeover=self.takeover,
            crawl_seconds=crawl_seconds,
            drain_seconds=drain_seconds,
            dead_parts=self.dead_parts,
            es_unavailable=self.es_unavailable,
        )

    def _planned_faults(self) -> list[str]:
        plan = self.plan
        planned = [burst.describe() for burst in plan.bursts]
        if plan.dead_parts:
            planned.append(f"{plan.dead_parts} dead parts")
        if plan.kill_every:
            planned.append("worker kills")
        if plan.redis_restart_at is not None:
            planned.append("Redis restart")
        if plan.es_stop_at is not None:
            planned.append(f"ES down {plan.es_down_seconds:g}s")
            if plan.drainer_kill:
                planned.append("drainer kill")
        return planned


def takeover_checks(takeover: Takeover | None, limit: float) -> list[Check]:
    """The drainer kill's rows: the takeover (another worker drains: the spill shrinks
    again) against ``limit``, enforced; the spill empty, shown with the pace of the drain
    (the time grows with the spill's size and Elasticsearch's speed, not the takeover)."""
    taken = takeover.shrink_seconds if takeover else None
    empty = takeover.empty_seconds if takeover else None
    note = ""
    if takeover is not None and empty is not None and taken is not None and empty > taken:
        note = f"{takeover.spill_at_kill} items, {takeover.spill_at_kill / (empty - taken):.0f}/s"
    return [
        Check("spill taken over s after drainer kill", taken, limit, limit=True),
        Check("spill empty s after drainer kill", empty, None, enforced=False, note=note),
    ]


def _applied(entry: dict[str, Any]) -> set[str]:
    return set((entry.get("behaviour") or "").split(",")) - {""}


def run_chaos(
    plan: FaultPlan, run_dir: Path, *, log: Log | None = None, keep_data: bool = False
) -> ChaosResult:
    """One chaos run in ``run_dir`` (logs of every service and worker stay there)."""
    log = log or (lambda line: None)
    with ChaosStack(run_dir, products=plan.products, seed=plan.seed, keep_data=keep_data) as stack:
        first = ChaosRun(plan, stack, log, t0=time.monotonic())
        result = first.run()
        if plan.recrawl:
            # The next run must fetch again what the faults kept out: the shop is healthy.
            stack.site.reset()
            second = ChaosRun(plan.quiet(), stack, log, label="recrawl: ", t0=first.t0)
            result.recrawl = second.run()
            result.events += second.events
    (run_dir / "result.json").write_text(json.dumps(result.to_dict(), indent=1, default=str))
    return result


# -- the report ---------------------------------------------------------------------------------


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def format_result(result: ChaosResult) -> str:
    plan = result.plan
    lines = [
        f"chaos soak: {plan.products} products, {plan.workers} workers, "
        f"{plan.partitions} frontier partition(s), seed {plan.seed} (run dir {result.run_dir})",
        "report: the jobs document the flow writes, read from Elasticsearch's jobs index; "
        "info rows are shown, not enforced",
        f"{'figure':<44} {'report':>9} {'truth':>9}  verdict",
    ]
    for job in (result, result.recrawl):
        if job is not None:
            lines += _job_lines(job)
    failures = result.failures
    lines.append(
        f"RESULT: {'PASS' if not failures else 'FAIL'}"
        + (f" ({len(failures)} checks failed)" if failures else "")
    )
    return "\n".join(lines)


def _job_lines(result: ChaosResult) -> list[str]:
    truth, served = result.truth, result.served
    killed = [e for e in result.exits if e.how == "killed"]
    exited = [e for e in result.exits if e.how == "exited"]
    lines = [
        "",
        f"job {result.job_id}: {len(killed)} workers SIGKILLed, {len(exited)} exited by "
        f"themselves; shop served {served['requests']} requests, {served['503']} x 503, "
        f"{served['slow']} slow, {served['blocks']} block pages",
    ]
    for check in result.checks:
        lines.append(
            f"{check.name:<44} {_fmt(check.report):>9} {_fmt(check.truth):>9}  {check.verdict}"
            + (f"  ({check.note})" if check.note else "")
        )
    lines.append(
        f"expected {truth.expected}, stored {truth.stored}, job docs {truth.job_docs} (new "
        f"{truth.new}, changed {truth.changed}, unchanged {truth.unchanged}), incomplete "
        f"{len(truth.incomplete)} {dict(truth.incomplete_parts) or ''}"
    )
    for label, found in (
        ("missing", truth.missing),
        ("complete without parts", truth.complete_without_parts),
        ("incomplete", truth.incomplete),
        ("product fields differ", truth.wrong_fields),
        ("duplicate sku/url", truth.duplicate_skus + truth.duplicate_urls),
        ("unexpected", truth.unexpected),
        ("dead parts", result.dead_parts),
    ):
        if found:
            lines.append(f"  {label}: {', '.join(found[:5])}{' ...' if len(found) > 5 else ''}")
    lines.append(
        f"crawl {_fmt(result.crawl_seconds)} s (first to last request served), "
        f"time to drain {_fmt(result.drain_seconds)} s (from the producer)"
        + (
            f", ES unavailable {_fmt(result.es_unavailable)} s (stop to ready)"
            if result.es_unavailable is not None
            else ""
        )
    )
    if result.takeover is not None:
        t = result.takeover
        how = "targeted" if t.targeted else f"lock without pid, all {len(t.killed)} killed"
        lines.append(
            f"drainer kill ({how}, spill {t.spill_at_kill}): spill shrinking after "
            f"{_fmt(t.shrink_seconds)} s, lock taken over after {_fmt(t.lock_seconds)} s, "
            f"spill empty after {_fmt(t.empty_seconds)} s"
        )
    lines.append(
        "counters: "
        + ", ".join(f"{name}={result.counters.get(name, 0)}" for name in SHOWN_COUNTERS)
    )
    if exited:
        lines.append("workers that exited by themselves:")
        lines += [f"  #{e.number} pid {e.pid} code {e.code}: {e.log_tail[-300:]}" for e in exited]
    return lines
