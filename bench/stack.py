"""The services and workers of a chaos run, each killable and restartable on its own.

``ChaosStack``: the demo shop, a persistent Redis (append-only file, so a restart on the
same port and data directory keeps the frontier, as production's AOF does) and an
Elasticsearch node on a kept data directory (a restart finds its indices), all under one
run directory. ``WorkerPool``: always-on ``scrapy crawl demo`` workers, started the way
the flow's local mode starts them (``orchestration.steps.LocalWorkers``: same argv, one
process group and log per worker), that can be SIGKILLed one at a time and replaced.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
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

from core.config import REPO_ROOT
from core.keys import REDIS_ERRORS
from core.redis_client import connect
from core.workers import WorkerRegistry
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer

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
    """Always-on ``scrapy crawl`` workers, each in its own process group and log file.

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
        self.live: dict[int, subprocess.Popen[bytes]] = {}
        self.exits: list[Exit] = []
        self.started = 0
        self.lock = threading.RLock()
        self._held = 0
        self._owed = 0  # replacements deferred while held

    def log_path(self, number: int) -> Path:
        return self.run_dir / f"worker-{SITE}-{number}.log"

    def argv(self, number: int) -> list[str]:
        """The argv of ``LocalWorkers.argv`` (orchestration.steps; bench may not import it)."""
        argv = [
            sys.executable, "-m", "scrapy", "crawl", SITE,
            "-a", f"job_id={self.job_id}",
            "-a", "always_on=true",
            "-a", f"base_url={self.base_url}",
        ]  # fmt: skip
        for name, value in {**self.settings, "LOG_FILE": str(self.log_path(number))}.items():
            argv += ["-s", f"{name}={value}"]
        return argv

    @property
    def pids(self) -> dict[int, int]:
        """pid -> worker number, of the workers running now."""
        with self.lock:
            return {process.pid: number for number, process in self.live.items()}

    def start_one(self) -> int:
        with self.lock:
            if self._held:
                self._owed += 1
                return 0
            self.started += 1
            number = self.started
            # What never reaches the log file (a crash before logging is set up) lands
            # next to it.
            with self.log_path(number).with_suffix(".stderr").open("ab") as stderr:
                process = subprocess.Popen(
                    self.argv(number),
                    cwd=REPO_ROOT,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=stderr,
                    stderr=stderr,
                    start_new_session=True,
                )
            self.live[number] = process
            return number

    def start(self, count: int, server: redis.Redis, *, timeout: float = 90.0) -> None:
        """``count`` workers, returning once each sends heartbeats."""
        numbers = [self.start_one() for _ in range(count)]
        registry = WorkerRegistry(server, SITE)
        deadline = time.monotonic() + timeout
        while True:
            pids = {self.live[n].pid for n in numbers if n in self.live}
            with contextlib.suppress(*REDIS_ERRORS):
                if pids <= {worker.pid for worker in registry.live()}:
                    return
            dead = [n for n in numbers if self.live[n].poll() is not None]
            if dead or time.monotonic() > deadline:
                tail = _tail(self.log_path(dead[0])) if dead else "(no heartbeat in time)"
                raise RuntimeError(f"{SITE} workers did not come up:\n{tail}")
            time.sleep(0.2)

    def kill(self, pid: int, *, replace: bool = True) -> bool:
        """SIGKILL the worker ``pid`` (its process group); start a replacement."""
        with self.lock:
            number = self.pids.get(pid)
            if number is None:
                return False
            process = self.live.pop(number)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            code = process.wait()
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
            for number, process in list(self.live.items()):
                code = process.poll()
                if code is None:
                    continue
                del self.live[number]
                tail = _tail(self.log_path(number), 3)
                found.append(Exit(number, process.pid, code, time.monotonic(), "exited", tail))
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
            processes = dict(self.live)
            self.live.clear()
        for process in processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for number, process in processes.items():
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
            self.exits.append(Exit(number, process.pid, code, time.monotonic(), "stopped"))


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
