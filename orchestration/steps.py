"""The scrape flow's steps as plain functions (the Prefect flow in ``flows.py`` stays thin).

Each step takes explicit connections/URLs and raises a ``StepError`` subclass whose
message says what is wrong in operator terms; none of them logs a secret.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import redis
from elasticsearch import Elasticsearch

from core.config import REPO_ROOT
from core.drain import DrainState, drain_state
from core.es_access import access_problem
from core.redis_client import RedisModeError, check_mode
from core.workers import WorkerRegistry, check_consumers


def job_id_for(site: str, run_id: object) -> str:
    """A scrape's job id from its flow run id: stable, so a retry of the run (same run id)
    continues the same job."""
    return f"{site}-{str(run_id).replace('-', '')[:12]}"


class StepError(RuntimeError):
    """A step failed in a way an operator can act on; the message says how."""


class PreflightError(StepError):
    pass


class DrainTimeout(StepError):
    pass


class WorkerLaunchError(StepError):
    pass


@dataclass
class PreflightReport:
    site: str
    redis_ok: bool
    elasticsearch_ok: bool
    consumers: int | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def preflight(
    site: str,
    *,
    server: redis.Redis,
    es: Elasticsearch,
    require_consumers: bool,
) -> PreflightReport:
    """Redis reachable, the site's queues consumed (unless the flow brings its own
    workers), Elasticsearch reachable and taking the credentials. Raises PreflightError
    naming everything down."""
    problems: list[str] = []
    redis_ok = es_ok = False
    consumers: int | None = None
    try:
        redis_ok = bool(server.ping())
        check_mode(server)
    except RedisModeError as exc:
        redis_ok = False
        problems.append(exc.message)
    except redis.RedisError as exc:
        problems.append(f"Redis unreachable ({type(exc).__name__}: {exc})")
    if redis_ok and require_consumers:
        check = check_consumers(server, site)
        consumers = len(check.workers)
        if not check.ok:
            problems.append(check.message())
    # Refused credentials are named as such (a ping reads a 401 as "down").
    es_problem = access_problem(es)
    es_ok = es_problem is None
    if es_problem is not None:
        problems.append(es_problem)
    report = PreflightReport(site, redis_ok, es_ok, consumers, problems)
    if problems:
        raise PreflightError(f"preflight failed for {site}: " + "; ".join(problems))
    return report


class LocalWorkers:
    """``scrapy crawl <site>`` worker subprocesses for local mode (no always-on workers).

    Scrapy's reactor cannot be restarted in one process, so each worker is its own
    process; PIDs and logs live under ``run_dir``. They run always-on and are stopped
    (SIGTERM, graceful: leases released) by ``stop()``.

    Configuration travels the Scrapy way: ``settings`` become ``-s NAME=value`` on the
    command line. Secrets must not (argv is visible in ``ps``): they stay in ``env``, the
    subprocess environment the crawl maps into the same settings.
    """

    def __init__(
        self,
        site: str,
        job_id: str,
        count: int,
        *,
        run_dir: Path,
        env: Mapping[str, str],
        settings: Mapping[str, str] | None = None,
        base_url: str | None = None,
    ) -> None:
        self.site = site
        self.job_id = job_id
        self.count = count
        self.run_dir = run_dir
        self.env = dict(env)
        self.settings = dict(settings or {})
        self.base_url = base_url
        self.processes: list[subprocess.Popen[bytes]] = []

    def log_path(self, n: int) -> Path:
        return self.run_dir / f"worker-{self.site}-{n}.log"

    def argv(self, n: int) -> list[str]:
        """Worker ``n``'s command line (no secret on it)."""
        argv = [
            sys.executable, "-m", "scrapy", "crawl", self.site,
            "-a", f"job_id={self.job_id}",
            "-a", "always_on=true",
        ]  # fmt: skip
        if self.base_url:
            argv += ["-a", f"base_url={self.base_url}"]
        settings = {**self.settings, "LOG_FILE": str(self.log_path(n))}
        for name, value in settings.items():
            argv += ["-s", f"{name}={value}"]
        return argv

    def start(self, server: redis.Redis, *, timeout: float = 60.0) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for n in range(1, self.count + 1):
            argv = self.argv(n)
            process = subprocess.Popen(argv, cwd=REPO_ROOT, env=self.env, start_new_session=True)
            self.pid_path(n).write_text(f"{process.pid}\n")
            self.processes.append(process)
        pids = {process.pid for process in self.processes}
        registry = WorkerRegistry(server, self.site)
        deadline = time.monotonic() + timeout
        while {w.pid for w in registry.live()} & pids != pids:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                log = self.log_path(self.processes.index(dead[0]) + 1) if dead else None
                tail = _tail(log) if log else "(timed out waiting for heartbeats)"
                raise WorkerLaunchError(f"{self.site} workers did not come up:\n{tail}")
            time.sleep(0.2)

    def check_alive(self) -> None:
        for n, process in enumerate(self.processes, start=1):
            if process.poll() is not None:
                raise WorkerLaunchError(
                    f"{self.site} worker {n} exited with {process.returncode}:\n"
                    + _tail(self.log_path(n))
                )

    def pid_path(self, n: int) -> Path:
        return self.run_dir / f"worker-{self.site}-{n}.pid"

    def stop(self, timeout: float = 60.0) -> list[int | None]:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        codes: list[int | None] = []
        for n, process in enumerate(self.processes, start=1):
            try:
                codes.append(process.wait(timeout=timeout))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                codes.append(process.wait())
            # Ended: its PID may go to another process, which nothing may signal later.
            self.pid_path(n).unlink(missing_ok=True)
        return codes


def wait_for_drain(
    server: redis.Redis,
    site: str,
    job_id: str,
    *,
    stable_window: float,
    timeout: float,
    poll_interval: float = 1.0,
    on_poll: Callable[[DrainState], None] | None = None,
    check: Callable[[], None] | None = None,
    pending_store: Callable[[], int] | None = None,
) -> DrainState:
    """Poll the frontier's drain state until drained; DrainTimeout after ``timeout``.

    ``check`` runs every poll (local mode: fail fast if a launched worker died).
    ``pending_store`` counts items still waiting for the store (the spill): the LLM step
    must not start before they are indexed.
    """
    deadline = time.monotonic() + timeout
    while True:
        state = drain_state(server, site, job_id, stable_window=stable_window)
        if on_poll is not None:
            on_poll(state)
        if state.drained and (pending_store is None or pending_store() == 0):
            return state
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise DrainTimeout(
                f"{site}/{job_id} not drained after {timeout:.0f}s: {state.describe()}"
            )
        time.sleep(poll_interval)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
