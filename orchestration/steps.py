"""The scrape flow's steps as plain functions (its Prefect tasks, ``scrape_tasks.py``, stay thin).

Each step takes explicit connections/URLs and raises a ``StepError`` subclass whose
message says what is wrong in operator terms; none of them logs a secret.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import redis
from elasticsearch import Elasticsearch

from core.es_access import access_problem
from core.frontier.drain import DrainState, drain_state
from core.frontier.workers import check_consumers
from core.redis_client import Client, RedisModeError, check_mode
from harness.base import ServiceError, stop_all
from harness.scrapy_worker import ScrapyWorker, wait_for_heartbeats


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
    server: Client,
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
    """``scrapy crawl <site>`` worker subprocesses for local mode (no always-on workers):
    ``harness.scrapy_worker.ScrapyWorker`` each, PIDs and logs under ``run_dir``. They run
    always-on and are stopped (SIGTERM, graceful: leases released) by ``stop()``.

    Secrets stay in ``env``, the workers' environment; ``settings`` go on the command line.
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
        self.env = dict(env)
        self.workers = [
            ScrapyWorker(
                site, n, job_id=job_id, run_dir=run_dir, env=self.env, settings=settings,
                base_url=base_url,
            )
            for n in range(1, count + 1)
        ]  # fmt: skip

    def log_path(self, n: int) -> Path:
        return self.workers[n - 1].log_path

    def argv(self, n: int) -> list[str]:
        """Worker ``n``'s command line (no secret on it)."""
        return self.workers[n - 1].command()

    def pid_path(self, n: int) -> Path:
        return self.workers[n - 1].pid_path

    def start(self, server: Client, *, timeout: float = 60.0) -> None:
        for worker in self.workers:
            worker.spawn()
        try:
            wait_for_heartbeats(self.workers, server, timeout=timeout)
        except ServiceError as exc:
            self.stop()
            raise WorkerLaunchError(str(exc)) from None

    def check_alive(self) -> None:
        for worker in self.workers:
            if worker.process is not None and not worker.alive():
                raise WorkerLaunchError(
                    f"{self.site} worker {worker.number} exited with {worker.returncode}:\n"
                    + worker.log_tail()
                )

    def stop(self, timeout: float = 60.0) -> list[int | None]:
        """Stop every worker together; their exit codes. Each PID file goes once its
        process is reaped: the PID may then go to another process, never to be signalled."""
        return stop_all(self.workers, timeout)


def wait_for_drain(
    server: Client,
    site: str,
    job_id: str,
    *,
    stable_window: float,
    timeout: float,
    poll_interval: float = 1.0,
    on_poll: Callable[[DrainState], object] | None = None,
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
