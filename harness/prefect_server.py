"""Prefect's own server on loopback, backed by SQLite in the run directory."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.base import ManagedProcess
from harness.foreground import run_in_foreground


def prefect_client_environment(api_url: str, home: Path) -> dict[str, str]:
    """Environment for any process that talks to this server (flows, workers, CLI)."""
    return {
        "PREFECT_API_URL": api_url,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # Keep runs' results readable by a later retry (issue: retry from a failed step).
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
    }


class PrefectServer(ManagedProcess):
    """``prefect server start`` with its database and home under ``run_dir``."""

    name = "prefect-server"
    start_timeout = 120.0

    def __init__(
        self,
        *,
        port: int | None = None,
        run_dir: Path | None = None,
        ui: bool = False,
        home: Path | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.ui = ui
        self.home = Path(home or self.run_dir / f"prefect-home-{self.port}")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    def client_environment(self) -> dict[str, str]:
        return prefect_client_environment(self.url, self.home)

    def environment(self) -> Mapping[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
        database = self.home / "prefect.db"
        env.update(
            {
                "PREFECT_HOME": str(self.home),
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{database}",
                "PREFECT_SERVER_API_HOST": self.host,
                "PREFECT_SERVER_API_PORT": str(self.port),
                "PREFECT_UI_API_URL": self.url,
                "PREFECT_LOGGING_LEVEL": "WARNING",
            }
        )
        return env

    def command(self) -> Sequence[str]:
        argv = [
            sys.executable, "-m", "prefect", "server", "start",
            "--host", self.host,
            "--port", str(self.port),
            "--analytics-off",
        ]  # fmt: skip
        argv.append("--ui" if self.ui else "--no-ui")
        return argv

    def ready(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:  # noqa: S310
            return response.status == 200 and json.loads(response.read()) is True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a loopback Prefect server in the foreground.")
    parser.add_argument("--port", type=int, default=4200)
    parser.add_argument("--no-ui", action="store_true")
    args = parser.parse_args(argv)
    return run_in_foreground(PrefectServer(port=args.port, ui=not args.no_ui))


if __name__ == "__main__":
    raise SystemExit(main())


class PrefectWorker(ManagedProcess):
    """``prefect worker start`` polling one process work pool of a Prefect server.

    Flow runs execute as subprocesses of the worker, from the repository root, with the
    worker's environment (``extra_env``: REDIS_URL, ELASTICSEARCH_URL, ...).
    """

    start_timeout = 60.0
    listens = False  # a client of the server: ``port`` is the server's

    def __init__(
        self,
        server: PrefectServer,
        *,
        pool: str,
        run_dir: Path | None = None,
        extra_env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        query_seconds: float = 2.0,
    ) -> None:
        super().__init__(port=server.port, run_dir=run_dir)
        self.server = server
        self.pool = pool
        # How often the worker asks for scheduled runs (Prefect's default, 10 s, is for
        # remote servers; a loopback server can be asked often, so a triggered run starts
        # within this many seconds).
        self.query_seconds = query_seconds
        self.name = f"prefect-worker-{pool}"
        self.extra_env = dict(extra_env or {})
        self.cwd = cwd

    @property
    def url(self) -> str:
        return f"{self.server.url} (pool {self.pool})"

    def working_directory(self) -> Path | None:
        return self.cwd

    def environment(self) -> Mapping[str, str]:
        return {
            **self.server.client_environment(),
            "PREFECT_WORKER_QUERY_SECONDS": str(self.query_seconds),
            **self.extra_env,
        }

    def command(self) -> Sequence[str]:
        return [
            sys.executable, "-m", "prefect", "worker", "start",
            "--pool", self.pool,
            "--type", "process",
            "--name", f"{self.name}-{os.getpid()}",
        ]  # fmt: skip

    def ready(self) -> bool:
        request = urllib.request.Request(  # noqa: S310 - loopback http URL built here
            f"{self.server.url}/work_pools/{self.pool}/workers/filter",
            data=b"{}",
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310
            workers = json.loads(response.read())
        return any(worker.get("status") == "ONLINE" for worker in workers)
