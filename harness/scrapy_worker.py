"""``scrapy crawl <site>`` workers as supervised processes: the flow's local mode
(``orchestration.steps.LocalWorkers``) and the benchmarks start them the same way.

Scrapy's reactor cannot be restarted in one process, so each worker is its own process
(``harness.base.SupervisedProcess``: its own session, PID file, stopped by PID). A worker
runs always-on on the Redis frontier and counts as up once it sends heartbeats
(``core.frontier.workers.WorkerRegistry``). Configuration travels the Scrapy way: ``settings``
become ``-s NAME=value``; secrets must not (argv is visible in ``ps``) and stay in
``env``, the only environment the worker gets.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.config import REPO_ROOT
from core.frontier.workers import WorkerRegistry
from core.keys import REDIS_ERRORS
from core.redis_client import Client
from harness.base import ServiceError, SupervisedProcess

STOP_GRACE = 60.0  # a graceful stop releases leases and pushes stats: give it time


class ScrapyWorker(SupervisedProcess):
    """Worker ``number`` of ``site`` for job ``job_id``; Scrapy writes its log itself
    (``LOG_FILE``), what never reaches it (a crash before logging) goes to ``.stderr``."""

    stop_timeout = STOP_GRACE
    inherit_environment = False

    def __init__(
        self,
        site: str,
        number: int,
        *,
        job_id: str,
        run_dir: Path,
        env: Mapping[str, str],
        settings: Mapping[str, str] | None = None,
        base_url: str | None = None,
    ) -> None:
        super().__init__(run_dir=run_dir)
        self.site = site
        self.number = number
        self.name = f"worker-{site}-{number}"
        self.job_id = job_id
        self.env = dict(env)
        self.settings = dict(settings or {})
        self.base_url = base_url

    @property
    def output_path(self) -> Path:
        return self.log_path.with_suffix(".stderr")

    def command(self) -> list[str]:
        """The worker's command line (no secret on it)."""
        argv = [
            sys.executable, "-m", "scrapy", "crawl", self.site,
            "-a", f"job_id={self.job_id}",
            "-a", "always_on=true",
        ]  # fmt: skip
        if self.base_url:
            argv += ["-a", f"base_url={self.base_url}"]
        for name, value in {**self.settings, "LOG_FILE": str(self.log_path)}.items():
            argv += ["-s", f"{name}={value}"]
        return argv

    def environment(self) -> Mapping[str, str]:
        return self.env

    def working_directory(self) -> Path:
        return REPO_ROOT

    def log_tail(self, lines: int = 30) -> str:
        return super().log_tail(lines) or "(no log)"


def wait_for_heartbeats(workers: Sequence[ScrapyWorker], server: Client, *, timeout: float) -> None:
    """Return once every worker of ``workers`` sends heartbeats; ``ServiceError`` with the
    log of the first that died, or after ``timeout``."""
    if not workers:
        return
    registry = WorkerRegistry(server, workers[0].site)
    deadline = time.monotonic() + timeout
    while True:
        pids = {worker.pid for worker in workers}
        with contextlib.suppress(*REDIS_ERRORS):
            if pids <= {live.pid for live in registry.live()}:
                return
        dead = [worker for worker in workers if not worker.alive()]
        if dead or time.monotonic() > deadline:
            tail = dead[0].log_tail() if dead else "(no heartbeat in time)"
            raise ServiceError(f"{workers[0].site} workers did not come up:\n{tail}")
        time.sleep(0.2)
