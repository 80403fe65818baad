"""The jobs board (``python -m jobs_site``) as a supervised local service.

Besides start/stop, it reads and clears the board's access log (``/__control/access-log``)
with stdlib HTTP calls, so tests need no HTTP client of their own.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from core.config import REPO_ROOT
from jobs_site.board import Board, build_board
from services.base import ManagedProcess


class JobsSite(ManagedProcess):
    name = "jobs-site"
    start_timeout = 30.0
    stop_timeout = 10.0

    def __init__(
        self,
        *,
        seed: int = 7,
        jobs: int = 300,
        access_log: Path | None = None,
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        if name is not None:
            self.name = name  # several sites in one run dir need their own log/PID files
        self.seed = seed
        self.jobs = jobs
        self.access_log_path = access_log

    def command(self) -> Sequence[str]:
        argv = [
            sys.executable,
            "-m",
            "jobs_site",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--seed",
            str(self.seed),
            "--jobs",
            str(self.jobs),
        ]
        if self.access_log_path is not None:
            argv += ["--access-log", str(self.access_log_path)]
        return argv

    def environment(self) -> Mapping[str, str]:
        # `python -m jobs_site` must import from this checkout whatever the caller's cwd.
        path = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def ready(self) -> bool:
        with urllib.request.urlopen(self.url + "/", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)

    def start(self) -> Self:
        if self.alive():
            return self
        super().start()
        # The readiness probes are not traffic anyone asked for: start with an empty log.
        self.clear_access_log()
        return self

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.url + path, method=method)  # noqa: S310
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return json.loads(response.read())

    def access_log(self, since: int = 0) -> list[dict[str, Any]]:
        """Requests served since index ``since`` (``i``, ``ts``, ``method``, ``path``,
        ``status``, ``bytes``, ``user_agent``)."""
        result: list[dict[str, Any]] = self._call("GET", f"/__control/access-log?since={since}")
        return result

    def clear_access_log(self) -> None:
        self._call("DELETE", "/__control/access-log")

    def board(self) -> Board:
        """The generator's data for what this site serves."""
        return build_board(self.seed, self.jobs)
