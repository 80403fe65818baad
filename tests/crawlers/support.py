"""Helpers for tests that run real ``scrapy crawl`` workers on the Redis frontier."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis
from itemadapter import ItemAdapter
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from scrapy.crawler import Crawler

from core.config import ENVIRONMENT
from core.frontier.queue import RedisFrontier
from core.frontier.workers import WorkerRegistry
from core.redis_client import connect
from crawlers import defaults

REPO_ROOT = Path(__file__).resolve().parents[2]
SINK_KEY_SETTING = "TEST_ITEM_SINK_KEY"
# For workers of a test where none dies, instead of the helpers' 3 s heartbeat TTL (quick
# reclaims after a kill): a loaded machine's reactor stall must not pass for a death, or
# live leases are reclaimed and their pages fetched twice.
NO_DEATHS = {"FRONTIER_HEARTBEAT_TTL": defaults.FRONTIER_HEARTBEAT_TTL}


# Crawl processes the helpers started: one a failed test leaves running would take the
# next test's work from the same Redis (tests/crawlers/conftest.py stops them).
_STARTED: list[subprocess.Popen[bytes]] = []


def tracked(process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """``process``, stopped after its test if it is still running then."""
    _STARTED.append(process)
    return process


def stop_leftover_workers() -> list[int]:
    """SIGKILL the tracked processes still running (a frozen one too); their pids."""
    left = [process for process in _STARTED if process.poll() is None]
    for process in left:
        process.kill()
        process.wait(timeout=10)
    _STARTED.clear()
    return [process.pid for process in left]


# Set by Scrapy in this process once anything read the project's settings: a crawl
# subprocess must find its own project from its cwd's scrapy.cfg instead.
SCRAPY_PROJECT_VARIABLES = {"SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT"}


def crawl_env() -> dict[str, str]:
    """The process environment without any platform variable (core.config.ENVIRONMENT)
    nor Scrapy's project pointer: a test crawl is configured by its ``-s NAME=value``
    settings and the scrapy.cfg of its cwd only."""
    names = {variable.name for variable in ENVIRONMENT} | SCRAPY_PROJECT_VARIABLES
    return {k: v for k, v in os.environ.items() if k.upper() not in names}


def settings_argv(settings: dict[str, object]) -> list[str]:
    """``-s NAME=value`` arguments (dicts and lists as JSON, as Scrapy parses them)."""
    argv: list[str] = []
    for name, value in settings.items():
        text = json.dumps(value) if isinstance(value, dict | list) else str(value)
        argv += ["-s", f"{name}={text}"]
    return argv


class RedisItemSink:
    """Item pipeline for tests: every item is RPUSHed to a Redis list before it returns.

    So an item counts as kept exactly when the frontier could ack its request. It rides
    out a Redis restart by retrying (blocking this worker, which could not progress
    without Redis anyway).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.key = crawler.settings[SINK_KEY_SETTING]
        self.settings = crawler.settings
        self._server: redis.Redis | None = None

    @property
    def server(self) -> redis.Redis:
        # Built on first use: a Redis Cluster client connects as it is built, and the
        # worker may start before the cluster does.
        if self._server is None:
            self._server = connect(  # type: ignore[assignment]
                self.settings["REDIS_URL"],
                cluster=self.settings.getbool("REDIS_CLUSTER"),
                retry=Retry(ExponentialBackoff(cap=1.0, base=0.1), retries=60),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
        return self._server  # type: ignore[return-value]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisItemSink:
        return cls(crawler)

    def process_item(self, item: object) -> object:
        self.server.rpush(self.key, json.dumps(ItemAdapter(item).asdict()))
        return item


class FailOncePipeline:
    """Item pipeline for tests: the first time a sku is seen (in Redis, across workers) the
    item fails with an exception, as a store that gave up would (``item_error``)."""

    def __init__(self, crawler: Crawler) -> None:
        self.key = f"{crawler.settings[SINK_KEY_SETTING]}:failed_once"
        settings = crawler.settings
        self.server = connect(settings["REDIS_URL"], cluster=settings.getbool("REDIS_CLUSTER"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FailOncePipeline:
        return cls(crawler)

    def process_item(self, item: object) -> object:
        if self.server.sadd(self.key, str(ItemAdapter(item).get("sku"))):
            raise RuntimeError("the store gave up on this item (test)")
        return item


def sunk_items(server: redis.Redis, key: str) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in server.lrange(key, 0, -1)]


def start_worker(
    *,
    redis_url: str,
    job_id: str,
    base_url: str,
    sink_key: str,
    log_path: Path,
    settings: dict[str, object] | None = None,
    arguments: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """A ``scrapy crawl demo`` worker process on the frontier at ``redis_url``."""
    merged: dict[str, object] = {
        "REDIS_URL": redis_url,
        # Replaces the add-on's pipelines (a whole dict from -s): items go to the sink only.
        "ITEM_PIPELINES": {"tests.crawlers.support.RedisItemSink": 100},
        SINK_KEY_SETTING: sink_key,
        "FRONTIER_IDLE_CLOSE_SECONDS": 2,
        "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
        "FRONTIER_HEARTBEAT_TTL": 3,
        "LOG_FILE": str(log_path),
        "LOG_LEVEL": "INFO",
        **(settings or {}),
    }
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"job_id={job_id}"]
    argv += ["-a", f"base_url={base_url}"]
    for name, value in (arguments or {}).items():
        argv += ["-a", f"{name}={value}"]
    argv += settings_argv(merged)
    return tracked(subprocess.Popen(argv, cwd=REPO_ROOT, env=crawl_env()))


def start_workers(
    count: int, log_dir: Path, **options: Any
) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    """``count`` workers of one job (``start_worker``'s options), logging to
    ``log_dir/worker-<n>.log``; the processes and their log files."""
    logs = [log_dir / f"worker-{n}.log" for n in range(1, count + 1)]
    return [start_worker(log_path=log, **options) for log in logs], logs


def kill_holding_leases(
    server: redis.Redis,
    site: str,
    victim: subprocess.Popen[bytes],
    *,
    leases: int,
    also: Callable[[], bool],
    timeout: float,
) -> int:
    """SIGKILL ``victim`` while it holds at least ``leases`` leases in Redis and ``also()``
    holds (``also`` may assert the crawl is still mid-way); the number of leases it held.

    The victim is frozen (SIGSTOP) before its lease set is read, so it cannot ack them
    between the count and the kill: a heartbeat's ``in_flight`` is older than that."""
    registry = WorkerRegistry(server, site)
    held = 0

    def frozen_holding() -> bool:
        nonlocal held
        if not also():
            return False
        ids = [w.worker_id for w in registry.live() if w.pid == victim.pid]
        if not ids:
            return False
        os.kill(victim.pid, signal.SIGSTOP)
        held = len(RedisFrontier(server, site).leases_of(ids[0]))
        if held >= leases:
            return True
        os.kill(victim.pid, signal.SIGCONT)
        return False

    wait_for(frozen_holding, timeout, f"worker {victim.pid} to hold {leases} lease(s)")
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    return held


def wait_all(workers: Sequence[subprocess.Popen[bytes]], timeout: float) -> list[int]:
    """The workers' exit codes; all killed, and the first one still running named with
    its log's last lines, when they are not done within ``timeout``."""
    deadline = time.monotonic() + timeout
    codes = []
    for worker in workers:
        try:
            codes.append(worker.wait(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for other in workers:
                other.kill()
            log = _log_file(worker)
            excerpt = log_excerpt(log) if log is not None else "<no LOG_FILE>"
            raise AssertionError(
                f"worker {worker.pid} still running after {timeout}s (killed); "
                f"its log {log}:\n{excerpt}"
            ) from None
    return codes


def _log_file(worker: subprocess.Popen[bytes]) -> Path | None:
    """The ``LOG_FILE`` a crawl process was started with (``-s LOG_FILE=...``)."""
    for arg in worker.args if isinstance(worker.args, list | tuple) else []:
        if str(arg).startswith("LOG_FILE="):
            return Path(str(arg).removeprefix("LOG_FILE="))
    return None


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def log_excerpt(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


def final_stats(log: Path) -> dict[str, Any]:
    """The integer counters of Scrapy's closing stats dump in a worker's log."""
    dump = log.read_text().split("Dumping Scrapy stats:", 1)[1]
    return {name: int(value) for name, value in re.findall(r"'([^']+)': (\d+)[,}]", dump)}


def run_producer(
    site: str, *, job_id: str, base_url: str, redis_url: str, cwd: Path = REPO_ROOT
) -> str:
    """``python -m crawlers.cli.producer`` in the Scrapy project at ``cwd``; its output
    line."""
    argv = [sys.executable, "-m", "crawlers.cli.producer", site, "--job-id", job_id]
    argv += ["--base-url", base_url, "--redis-url", redis_url]
    result = subprocess.run(argv, cwd=cwd, env=crawl_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()
