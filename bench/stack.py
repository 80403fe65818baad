"""The services and workers of a chaos run, each killable and restartable on its own.

``ChaosStack``: the demo shop, a persistent Redis (append-only file, so a restart on the
same port and data directory keeps the frontier, as production's AOF does) and an
Elasticsearch node on a kept data directory (a restart finds its indices), all under one
run directory. ``WorkerPool``: always-on ``scrapy crawl demo`` workers, the flow's local
mode's own (``harness.scrapy_worker.ScrapyWorker``: one process group and log per
worker), that can be SIGKILLed one at a time and replaced.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from core.keys import REDIS_ERRORS
from core.redis_client import connect
from harness.base import ServiceError, stop_all
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from harness.scrapy_worker import ScrapyWorker, wait_for_heartbeats

SITE = "demo"


class ChaosStack:
    """Demo shop + persistent Redis + ES node on kept data, in ``run_dir``."""

    def __init__(self, run_dir: Path, *, products: int, seed: int, keep_data: bool) -> None:
        self.run_dir = run_dir
        self.keep_data = keep_data
        self.site = DemoSite(
            seed=seed, products=products, run_dir=run_dir, access_log=run_dir / "demo-access.jsonl"
        )
        self.redis = RedisServer(run_dir=run_dir, persistent=True)
        self.es = ElasticsearchNode(run_dir=run_dir, data_dir=run_dir / "es-home")

    def __enter__(self) -> Self:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            for service in (self.site, self.redis, self.es):
                service.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        for service in (self.es, self.redis, self.site):
            with contextlib.suppress(Exception):
                service.stop()
        if not self.keep_data:
            shutil.rmtree(self.run_dir / "es-home", ignore_errors=True)
            shutil.rmtree(self.redis.data_dir, ignore_errors=True)

    def redis_client(self) -> redis.Redis:
        """A client that rides out a restart: reconnects, retrying a few times."""
        return connect(
            self.redis.url,
            socket_timeout=5,
            socket_connect_timeout=2,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
            retry_on_error=list(REDIS_ERRORS),
        )

    def restart_redis(self) -> None:
        """SIGTERM (Redis fsyncs its append-only file on shutdown), then start again on the
        same port and data directory."""
        self.redis.stop()
        self.redis.start()


@dataclass
class Exit:
    """A worker that ended: by our SIGKILL, by itself, or at the final stop."""

    number: int
    pid: int
    code: int | None
    at: float  # monotonic
    how: str  # killed | exited | stopped
    log_tail: str = ""


class WorkerPool:
    """Always-on ``scrapy crawl`` workers (``harness.scrapy_worker.ScrapyWorker``, as the
    flow's local mode starts them), each in its own process group and log file.

    Thread-safe: the fault schedule, the drainer watcher and the main loop share it.
    ``hold()`` keeps replacements from starting (while Redis restarts).
    """

    def __init__(
        self,
        job_id: str,
        *,
        run_dir: Path,
        settings: Mapping[str, str],
        base_url: str,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.job_id = job_id
        self.run_dir = run_dir
        self.settings = dict(settings)
        self.base_url = base_url
        # The endpoints travel as settings; none comes from the caller's environment.
        self.env = {
            name: value
            for name, value in (env if env is not None else os.environ).items()
            if name not in ("REDIS_URL", "ELASTICSEARCH_URL", "DEMO_SITE_URL")
        }
        self.live: dict[int, ScrapyWorker] = {}
        self.exits: list[Exit] = []
        self.started = 0
        self.lock = threading.RLock()
        self._held = 0
        self._owed = 0  # replacements deferred while held

    def worker(self, number: int) -> ScrapyWorker:
        return ScrapyWorker(
            SITE,
            number,
            job_id=self.job_id,
            run_dir=self.run_dir,
            env=self.env,
            settings=self.settings,
            base_url=self.base_url,
        )

    def log_path(self, number: int) -> Path:
        return self.worker(number).log_path

    def argv(self, number: int) -> list[str]:
        return self.worker(number).command()

    @property
    def pids(self) -> dict[int, int]:
        """pid -> worker number, of the workers running now."""
        with self.lock:
            return {w.pid: number for number, w in self.live.items() if w.pid is not None}

    def start_one(self) -> int:
        with self.lock:
            if self._held:
                self._owed += 1
                return 0
            self.started += 1
            number = self.started
            self.live[number] = self.worker(number).spawn()
            return number

    def start(self, count: int, server: redis.Redis, *, timeout: float = 90.0) -> None:
        """``count`` workers, returning once each sends heartbeats."""
        numbers = [self.start_one() for _ in range(count)]
        workers = [self.live[number] for number in numbers if number in self.live]
        try:
            wait_for_heartbeats(workers, server, timeout=timeout)
        except ServiceError as exc:
            raise RuntimeError(str(exc)) from None

    def kill(self, pid: int, *, replace: bool = True) -> bool:
        """SIGKILL the worker ``pid`` (its process group); start a replacement."""
        with self.lock:
            number = self.pids.get(pid)
            if number is None:
                return False
            code = self.live.pop(number).kill()
            self.exits.append(Exit(number, pid, code, time.monotonic(), "killed"))
            if replace:
                self.start_one()
            return True

    def kill_random(self, rng: random.Random) -> int | None:
        with self.lock:
            if not self.live:
                return None
            pid = rng.choice(sorted(self.pids))
            self.kill(pid)
            return pid

    def reap(self) -> list[Exit]:
        """Workers that exited on their own (not killed by us): recorded and replaced."""
        found: list[Exit] = []
        with self.lock:
            for number, worker in list(self.live.items()):
                code = worker.returncode
                if code is None or worker.pid is None:
                    continue
                del self.live[number]
                tail = worker.log_tail(3)
                found.append(Exit(number, worker.pid, code, time.monotonic(), "exited", tail))
            self.exits += found
            for _ in found:
                self.start_one()
        return found

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No worker starts inside (replacements owed are started on leaving)."""
        with self.lock:
            self._held += 1
        try:
            yield None
        finally:
            with self.lock:
                self._held -= 1
                owed, self._owed = (self._owed, 0) if not self._held else (0, self._owed)
            for _ in range(owed):
                self.start_one()

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM every worker (graceful: leases released, stats pushed), as the flow does
        after the drain; SIGKILL whatever is still running after ``timeout``."""
        with self.lock:
            workers = dict(self.live)
            self.live.clear()
        pids = {number: worker.pid for number, worker in workers.items()}
        codes = stop_all(list(workers.values()), timeout)
        for (number, pid), code in zip(pids.items(), codes, strict=True):
            self.exits.append(Exit(number, pid or 0, code, time.monotonic(), "stopped"))
