"""The truth matrix's machinery: its services and one crawl run as production runs it.

``Services``: the demo shop, Redis and an Elasticsearch node on loopback, shared by every
scenario of ``bench.outcomes`` and reset between them (behaviours, frontier, items).
``crawl`` enqueues a job (``python -m crawlers.cli.producer``) and runs ``scrapy crawl``
workers on the Redis frontier into Elasticsearch, each closing itself once the frontier
is idle; a worker still running at the scenario's budget is hung (killed, counted).
What it returns is the run's word (each worker's close reason, its log's last line, its
exit status), the job's report figures (``core.jobs.index.job_document`` over the job's
counters) and the truth: documents in the site's items index and the product pages the
stand-in answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from core.config import ENVIRONMENT, REPO_ROOT
from core.jobs.index import job_counters, job_document
from core.keys import SiteKeys
from core.store import spill_size
from crawlers.runtime.jobs import new_job_id
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer

PRODUCT_PATH = "/product/"
# A worker closes itself once the frontier stayed empty this long (its idle close).
WORKER_SETTINGS: dict[str, object] = {
    "FRONTIER_IDLE_CLOSE_SECONDS": 2,
    "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
    "FRONTIER_HEARTBEAT_TTL": 3,
    "STORE_FLUSH_INTERVAL": 0.5,
    "LOG_LEVEL": "INFO",
    "RETRY_BACKOFF_BASE": 0.2,
    "RETRY_BACKOFF_MAX": 1.0,
    "PART_RETRY_TIMES": 0,
}
_LAST_WORD = re.compile(r"finish_reason (\S+): (.*)$")
_STAT = re.compile(r"'([^']+)': (\d+)[,}]")


class Services:
    """Demo shop (``products``), Redis and an ES node under ``run_dir``."""

    def __init__(self, run_dir: Path, products: int) -> None:
        self.run_dir = run_dir
        self.products = products
        self.site = DemoSite(products=products, run_dir=run_dir, seed=7, name="outcomes-site")
        self.redis = RedisServer(run_dir=run_dir)
        self.es_node = ElasticsearchNode(
            run_dir=run_dir, settings={"action.destructive_requires_name": "false"}
        )

    def __enter__(self) -> Services:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            for service in (self.site, self.redis, self.es_node):
                service.start()
        except BaseException:
            self.stop()
            raise
        self.client = self.redis.client(socket_timeout=30)
        self.es = Elasticsearch(self.es_node.url, request_timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for service in (self.es_node, self.redis, self.site):
            with contextlib.suppress(Exception):
                service.stop()

    def reset(self) -> None:
        """A clean slate: no behaviour, no frontier or records, no item or job document."""
        self.client.flushall()
        self.es.indices.delete(
            index="items-*,chunks-*,platform-jobs*", ignore_unavailable=True, allow_no_indices=True
        )
        self.site.reset()
        self.site.control(layout="v1")

    def stored(self, site: str) -> int:
        """Documents in ``site``'s items indices now."""
        self.es.indices.refresh(index=f"items-{site}*", ignore_unavailable=True)
        found = self.es.count(
            index=f"items-{site}*", ignore_unavailable=True, allow_no_indices=True
        )
        return int(found["count"])


def crawl_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any platform variable: a crawl is configured by
    its settings (and ``extra``) only, as the tests' crawls are."""
    names = {v.name for v in ENVIRONMENT} | {"SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT"}
    env = {k: v for k, v in os.environ.items() if k.upper() not in names}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return {**env, **(extra or {})}


@dataclass
class Worker:
    number: int
    log: Path
    process: subprocess.Popen[bytes]
    killed: bool = False

    @property
    def code(self) -> int | None:
        return self.process.poll()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def last_word(self) -> tuple[str, str]:
        """(close reason, its line) from the log's last ``finish_reason`` line."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        for line in reversed(text.splitlines()):
            if match := _LAST_WORD.search(line):
                return match[1], match[2]
        return "(none)", "no finish_reason line"

    def stats(self) -> dict[str, int]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        dump = text.rsplit("Dumping Scrapy stats:", 1)
        return {k: int(v) for k, v in _STAT.findall(dump[1])} if len(dump) == 2 else {}


@dataclass
class Run:
    """One job's run: its workers' words and figures, the report's, the truth's."""

    site: str
    job_id: str
    workers: list[Worker] = field(default_factory=list)
    hung: bool = False
    seconds: float = 0.0
    report: dict[str, Any] = field(default_factory=dict)  # the job document
    stored: int = 0  # documents in the items index after the run
    served: int = 0  # product pages the stand-in answered 200 (distinct paths)
    product_answers: int = 0  # product page answers, any status

    @property
    def ended(self) -> list[Worker]:
        """The workers that ended by themselves (not killed by the scenario)."""
        return [w for w in self.workers if not w.killed]

    def word(self) -> str:
        """``reason/exit`` of the workers that ended by themselves (distinct, sorted)."""
        words = sorted({f"{w.last_word()[0]}/{w.code}" for w in self.ended})
        return ", ".join(words) or "(no worker ended)"

    def line(self) -> str:
        return self.ended[-1].last_word()[1] if self.ended else ""

    def stat(self, name: str) -> int:
        return sum(w.stats().get(name, 0) for w in self.ended)

    def counter(self, name: str) -> int:
        return int((self.report.get("counters") or {}).get(name) or 0)


def settings_argv(settings: Mapping[str, object]) -> list[str]:
    argv: list[str] = []
    for name, value in settings.items():
        if isinstance(value, bool):
            value = str(value)
        elif isinstance(value, list):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, dict):
            value = json.dumps(value)
        argv += ["-s", f"{name}={value}"]
    return argv


def crawl(
    services: Services,
    run_dir: Path,
    *,
    site: str = "demo",
    base_url: str | None = None,
    settings: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
    workers: int = 1,
    budget: float = 150.0,
    during: Callable[[Run, Callable[[], Worker]], None] | None = None,
    frontier: bool = True,
) -> Run:
    """A job of ``site`` on the frontier, ``workers`` workers, bounded by ``budget``
    seconds; ``during(run, start_worker)`` is called once while they run (a fault).
    ``frontier=False``: one ``scrapy crawl`` in local mode (no Redis: its own scheduler,
    the spill a file), the report its closing stats."""
    run_dir.mkdir(parents=True, exist_ok=True)
    base_url = base_url or services.site.url
    job_id = new_job_id(site)
    environment = crawl_environment(env)
    if frontier:
        producer = [sys.executable, "-m", "crawlers.cli.producer", site, "--job-id", job_id]
        producer += ["--base-url", base_url, "--redis-url", services.redis.url]
        done = subprocess.run(
            producer, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120
        )
        if done.returncode:
            raise RuntimeError(f"producer failed: {done.stderr.strip()[-500:]}")
    merged = {
        **WORKER_SETTINGS,
        **({"REDIS_URL": services.redis.url} if frontier else {}),
        "ELASTICSEARCH_URL": services.es_node.url,
        "PLATFORM_RUN_DIR": str(run_dir),
        "STORE_SPILL_DIR": str(run_dir / "spill"),
        **(settings or {}),
    }
    since = len(services.site.access_log())
    run = Run(site, job_id)

    def start_worker() -> Worker:
        number = len(run.workers) + 1
        log = run_dir / f"worker-{number}.log"
        argv = [sys.executable, "-m", "scrapy", "crawl", site, "-a", f"job_id={job_id}"]
        argv += ["-a", f"base_url={base_url}"]
        argv += settings_argv({**merged, "LOG_FILE": str(log)})
        stderr = (run_dir / f"worker-{number}.stderr").open("wb")
        process = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=environment, stderr=stderr, start_new_session=True
        )
        worker = Worker(number, log, process)
        run.workers.append(worker)
        return worker

    started = time.monotonic()
    for _ in range(workers):
        start_worker()
    try:
        if during is not None:
            during(run, start_worker)
        while any(w.code is None for w in run.workers):
            if time.monotonic() - started > budget:
                run.hung = True
                break
            time.sleep(0.3)
    finally:
        for worker in run.workers:
            if worker.code is None:
                worker.kill()
    run.seconds = time.monotonic() - started
    counters: Mapping[str, Any] = (
        job_counters(services.client, site, job_id) if frontier else run.workers[0].stats()
    )
    # As the flow's report step writes it (orchestration.scrape_tasks.report_task).
    spill = spill_size(services.client, site) if frontier else None
    run.report = job_document(
        site, job_id, "completed", None, None, counters, spill_remaining=spill
    )
    run.stored = services.stored(site)
    answers = [e for e in services.site.access_log(since) if e["path"].startswith(PRODUCT_PATH)]
    run.product_answers = len(answers)
    run.served = len({e["path"] for e in answers if e["status"] == 200})
    return run


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def spill_items(services: Services, site: str) -> int:
    """Items waiting in the site's spill on Redis (a frontier worker's)."""
    return int(services.client.llen(SiteKeys(site).store_spill))


def spill_lines(run_dir: Path) -> int:
    """Items waiting in the run's spill files (a local-mode crawl's)."""
    total = 0
    for path in (run_dir / "spill").glob("*.jsonl"):
        if path.is_file():
            total += sum(1 for line in path.read_text().splitlines() if line.strip())
    return total


def write_profile(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.toml").write_text(text)
    return directory


def kill_first_when(
    services: Services, site: str, at_least: int, timeout: float = 90.0
) -> Callable[[Run, Callable[[], Worker]], None]:
    """A fault: SIGKILL worker 1 once ``at_least`` documents are stored, then start a
    replacement (as the flow's supervision does)."""

    def fault(run: Run, start_worker: Callable[[], Worker]) -> None:
        wait_for(lambda: services.stored(site) >= at_least, timeout)
        first = run.workers[0]
        if first.code is None:
            first.killed = True
            first.kill()
        start_worker()

    return fault


def distinct(values: Sequence[str]) -> list[str]:
    return sorted(set(values))
